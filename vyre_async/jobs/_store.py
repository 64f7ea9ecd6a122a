"""A job's output folder: chunks of records, ``.npy`` arrays, and the manifest.

Layout (every file written atomically by :class:`Folder`, named by the folder's
*writer token*, a random name part that each run opening the folder records in the
manifest before it writes anything)::

    manifest.json                  the commit point: job, fingerprint, writer token,
                                   committed chunks with their sizes and SHA-256
    chunks/000000-<token>.jsonl    records (JSON lines), one file per commit
    arrays/<id>-<token>.npy        full results of items that asked for them
    summary.json                   the last run's summary
    log.jsonl                      structlog JSON lines of every run
    .lock                          the advisory lock of the run writing the folder

Once the manifest says ``complete``, the chunk files it lists are the job's result
set, every item exactly once (``cat chunks/*.jsonl`` or :func:`read_records`).

A commit writes the chunk (never over an existing file), fsyncs the arrays folder,
then replaces the manifest: a chunk the manifest does not list never counts. So
``kill -9`` at any moment loses at most the uncommitted work and never duplicates a
record.

The folder cannot be turned against its owner: nothing in it is followed if it is
a symlink; one run writes it at a time (``flock`` on ``.lock``, released by the
kernel however the run ends); a file is deleted only if it is the runner's own,
uncommitted file (it bears the manifest's writer token, or is a temp file of the
runner's naming); a folder holding anything else is refused, as is one whose
committed files do not match the checksums the manifest recorded.

Every method here blocks on file I/O; the runner calls them in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import msgspec
import numpy as np
import numpy.typing as npt

from ..errors import ConfigurationError
from ._atomic import Folder
from ._claim import (
    check_same_job,
    classify,
    new_writer,
    refuse_a_folder_without_a_job,
    refuse_foreign,
    remove_leftovers,
    take_lock,
    unusable,
)
from ._layout import (
    ARRAYS_DIR,
    CHUNKS_DIR,
    LOCK_FILE,
    LOG_FILE,
    MANIFEST_FILE,
    ROOT_TEMP,
    SUMMARY_FILE,
    chunk_name,
    own_uncommitted,
)
from ._records import FORMAT_VERSION, ChunkEntry, FileEntry, ItemRecord, Manifest
from ._verify import damaged, read_chunk, read_manifest, record_decoder, verify

__all__ = ["LOG_FILE", "ResultStore", "output_folder", "read_records"]

_encoder = msgspec.json.Encoder()


def output_folder(
    job_file: Path, configured: str | None, out: str | os.PathLike[str] | None
) -> Path:
    """Where a job writes: ``out`` as given, else ``configured`` under the job's folder.

    Raises:
        ConfigurationError: Neither is set, ``configured`` is absolute or leads
            outside the job file's folder (a job file may not write elsewhere;
            ``--out`` may), or a path cannot name a file (a NUL byte).
    """
    try:
        if out is not None:
            return Path(out).expanduser().resolve()
        if configured is None:
            raise ConfigurationError(
                f"{job_file}: $.output.dir: no output folder is set",
                fix="set dir in [output], or pass --out DIR.",
            )
        base = job_file.resolve().parent
        if Path(configured).is_absolute():
            raise ConfigurationError(
                f"{job_file}: $.output.dir: {configured!r} is an absolute path",
                fix="make output.dir relative to the job file, or pass --out DIR.",
            )
        folder = (base / configured).resolve()
    except (ValueError, OSError) as exc:  # a NUL byte, a symlink loop
        raise ConfigurationError(
            f"{job_file}: the output folder cannot be used ({exc})",
            fix="name a plain folder with --out DIR or in [output] dir.",
        ) from None
    if folder == base or not folder.is_relative_to(base):
        raise ConfigurationError(
            f"{job_file}: $.output.dir: {configured!r} leads to {folder}, outside the job "
            f"file's folder {base}",
            fix="name a subfolder of the job file's folder, or pass --out DIR.",
        )
    return folder


class ResultStore:
    """The output folder of one job, locked for one run; made by :meth:`open`.

    Attributes:
        folder: The folder's path.
        committed: One flag per item id: committed (set as commits happen).
    """

    def __init__(
        self,
        root: Folder,
        chunks: Folder,
        arrays: Folder,
        lock_fd: int,
        manifest: Manifest,
        committed: npt.NDArray[np.bool_],
    ) -> None:
        self.folder = root.path
        self.committed = committed
        #: Whether :meth:`open` made the folder.
        self.created = False
        self._root, self._chunks, self._arrays = root, chunks, arrays
        self._lock_fd = lock_fd
        self._manifest = manifest
        # Arrays written and not yet committed, by the path their record names.
        self._written: dict[str, FileEntry] = {}
        self._written_lock = threading.Lock()

    @property
    def manifest(self) -> Manifest:
        """The manifest as last committed."""
        return self._manifest

    @classmethod
    def open(
        cls, folder: Path, *, job: str, fingerprint: str, total_items: int, resume: bool
    ) -> ResultStore:
        """Claim a new or empty folder, or reopen a job's folder to resume it.

        A job's folder is verified (every committed chunk and array against the
        manifest's checksums) before anything in it changes; a folder whose
        manifest commits nothing may be claimed by any job.

        Raises:
            ConfigurationError: The folder is in use by another run; holds results
                and ``resume`` is off; holds another job's results; holds anything
                vyre-async did not write (or a symlink); was changed or damaged
                since it was committed; does not exist or holds no job while
                ``resume`` is on; or cannot be written.
        """
        created = False
        try:
            if not folder.exists():
                if resume:
                    raise ConfigurationError(
                        f"output folder {folder} does not exist, so --resume has no job "
                        "to continue",
                        fix="run without --resume to start the job, or pass the folder "
                        "of the run to continue with --out DIR.",
                    )
                folder.parent.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(FileExistsError):  # another run made it first
                    folder.mkdir()
                    created = True
            elif not folder.is_dir():
                raise ConfigurationError(
                    f"output folder {folder} is a file", fix="choose a folder with --out DIR."
                )
            root = Folder.open(folder)
        except OSError as exc:
            raise unusable(folder, exc) from exc
        lock_fd = -1
        try:
            refuse_a_folder_without_a_job(root, resume)
            lock_fd = take_lock(root)
            return cls._claim(root, lock_fd, job, fingerprint, total_items, resume, created)
        except BaseException as exc:
            if lock_fd >= 0:
                os.close(lock_fd)
            root.close()
            if isinstance(exc, OSError):
                raise unusable(folder, exc) from exc
            raise

    @classmethod
    def _claim(
        cls,
        root: Folder,
        lock_fd: int,
        job: str,
        fingerprint: str,
        total_items: int,
        resume: bool,
        created: bool,
    ) -> ResultStore:
        kinds = dict(root.entries())
        refuse_foreign(root, kinds, has_manifest=MANIFEST_FILE in kinds)
        old = read_manifest(root) if MANIFEST_FILE in kinds else None
        if old is not None and old.chunks:
            check_same_job(root.path, old, fingerprint, total_items, resume)
        chunks = root.subfolder(CHUNKS_DIR, create=True)
        try:
            arrays = root.subfolder(ARRAYS_DIR, create=True)
        except BaseException:
            chunks.close()
            raise
        try:
            leftovers = classify(root.path, chunks, arrays, old)
            committed = (
                verify(root.path, chunks, arrays, old)
                if old is not None and old.chunks
                else np.zeros(total_items, dtype=bool)
            )
            remove_leftovers(root.path, arrays, leftovers, committed)
            for name in kinds:
                if ROOT_TEMP.match(name):
                    root.remove(name)
            if old is not None and old.chunks:
                manifest = msgspec.structs.replace(old, writer=new_writer(old))
            else:  # new, or a folder whose manifest commits nothing: this job's now
                manifest = Manifest(FORMAT_VERSION, job, fingerprint, total_items, new_writer(old))
            root.write(MANIFEST_FILE, _encoder.encode(manifest))
        except BaseException:
            chunks.close()
            arrays.close()
            raise
        store = cls(root, chunks, arrays, lock_fd, manifest, committed)
        store.created = created
        return store

    def discard_if_unused(self) -> None:
        """Remove the folder again if :meth:`open` made it and nothing was committed.

        A run refused after claiming a new folder (its graph file is bad, its backend
        cannot open) leaves no stub behind; only the runner's own files are removed,
        and a folder holding anything else stays.
        """
        if not self.created or self._manifest.chunks or self._root.fd < 0:
            return
        writer = self._manifest.writer
        for place, own in (
            (self._chunks, own_uncommitted(writer, "jsonl", r"\d{6}")),
            (self._arrays, own_uncommitted(writer, "npy", r"\d+")),
        ):
            for name, _ in list(place.entries()):
                if own.match(name):
                    place.remove(name)
        for name in (CHUNKS_DIR, ARRAYS_DIR):
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=self._root.fd)
        for name in (SUMMARY_FILE, LOG_FILE, MANIFEST_FILE, LOCK_FILE):
            self._root.remove(name)
        self.close()
        with contextlib.suppress(OSError):
            self.folder.rmdir()

    def close(self) -> None:
        """Release the folder (and its lock); a no-op the second time."""
        for place in (self._chunks, self._arrays, self._root):
            place.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # the kernel drops the flock with the last descriptor
            self._lock_fd = -1

    def write_array(self, item_id: int, array: np.ndarray) -> str:
        """Write an item's full result as ``arrays/<id>-<token>.npy``; return its path.

        Its size and checksum go into the manifest with the chunk that commits its
        record; the folder is synced at that :meth:`commit`, before the manifest names it.
        """
        name = f"{int(item_id)}-{self._manifest.writer}.npy"

        def save(file: BinaryIO) -> None:
            np.save(file, array, allow_pickle=False)

        size, sha256 = self._arrays.write(name, save, sync=False)
        path = f"{ARRAYS_DIR}/{name}"
        with self._written_lock:
            self._written[path] = FileEntry(path, size, sha256)
        return path

    def commit(self, records: Sequence[ItemRecord], failed: int | None = None) -> ChunkEntry:
        """Write records as the next chunk and commit it in the manifest.

        Args:
            records: The chunk's records (each item at most once, none committed before).
            failed: How many are failures, when the caller counted them already.

        Raises:
            ValueError: A record's item is out of range or committed already (a
                caller's fault: the runner never hands one over).
        """
        ids = np.fromiter((r.id for r in records), dtype=np.int64, count=len(records))
        done = self.committed
        if ids.size and (
            ids.min() < 0
            or ids.max() >= done.size
            or done[ids].any()
            or np.unique(ids).size != ids.size
        ):
            raise ValueError("a chunk repeats an item, or one committed already")
        with self._written_lock:
            files = tuple(self._written.pop(r.array) for r in records if r.array is not None)
        if files:
            self._arrays.sync()  # the arrays' renames, before the manifest names them
        manifest = self._manifest
        name = chunk_name(len(manifest.chunks), manifest.writer)
        size, sha256 = self._chunks.write(name, _encoder.encode_lines(records), exclusive=True)
        if failed is None:
            failed = sum(not r.ok for r in records)
        entry = ChunkEntry(name, len(records), failed, size, sha256, files)
        manifest = msgspec.structs.replace(manifest, chunks=(*manifest.chunks, entry))
        self._root.write(MANIFEST_FILE, _encoder.encode(manifest))
        self._manifest = manifest
        done[ids] = True
        return entry

    def finish(self) -> None:
        """Mark the job complete in the manifest (every item is committed)."""
        if self._manifest.committed != self._manifest.total_items:
            raise ValueError("a job is complete only once every item is committed")
        manifest = msgspec.structs.replace(self._manifest, complete=True)
        self._root.write(MANIFEST_FILE, _encoder.encode(manifest))
        self._manifest = manifest

    def write_summary(self, summary: msgspec.Struct) -> None:
        """Write ``summary.json`` atomically."""
        self._root.write(SUMMARY_FILE, msgspec.json.format(_encoder.encode(summary)))

    def read_summary(self) -> bytes | None:
        """``summary.json`` as written by the last run, or ``None`` if there is none."""
        try:
            return self._root.read(SUMMARY_FILE)
        except OSError:
            return None


def read_records(folder: str | os.PathLike[str]) -> Iterator[ItemRecord]:
    """The committed records of a job's output folder, in commit order.

    Only chunks the manifest lists are read, each checked against its checksum, so
    this is exactly what a resumed run skips: no record twice, none that was not
    committed. Symlinks in the folder are not followed.

    Raises:
        ConfigurationError: The folder has no manifest, or a chunk is missing or damaged.
    """
    root_path = Path(folder)
    try:
        root = Folder.open(root_path)
    except OSError as exc:
        raise ConfigurationError(
            f"{root_path} cannot be read as a job's output folder ({exc.strerror or exc})",
            fix="pass the output folder of a vyre-async job.",
        ) from None
    with contextlib.closing(root):
        try:
            manifest = read_manifest(root)
        except OSError as exc:
            raise ConfigurationError(
                f"{root_path} holds no readable job manifest ({exc.strerror or exc})",
                fix="pass the output folder of a vyre-async job.",
            ) from None
        if not manifest.chunks:
            return
        try:
            chunks = root.subfolder(CHUNKS_DIR, create=False)
        except OSError as exc:
            raise damaged(root_path, root_path / CHUNKS_DIR, f"cannot be read ({exc})") from None
        with contextlib.closing(chunks):
            for entry in manifest.chunks:
                data = read_chunk(root_path, chunks, entry)
                try:
                    records = record_decoder.decode_lines(data)
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    raise damaged(
                        root_path, chunks.path / entry.name, f"does not hold valid records ({exc})"
                    ) from None
                yield from records
