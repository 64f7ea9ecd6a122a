"""A job's output folder: chunks of records, their array files, and the manifest.

Layout (every file written atomically by :class:`Folder`, named by the folder's
*writer token*, a random name part that each run opening the folder records in the
manifest before it writes anything)::

    manifest.json                  the commit point: job, fingerprint, writer token,
                                   chunk format, committed chunks and array files
                                   with their sizes and SHA-256
    chunks/000000-<token>.jsonl    records, one file per commit: JSON lines, or
    chunks/000000-<token>.parquet  Parquet with ``[output] format = "parquet"``
    arrays/000000-<token>.npz      full results of the chunk's items that asked for
                                   them, one ``.npy`` member per item (see _arrays)
    summary.json                   the last run's summary
    log.jsonl                      structlog JSON lines of every run
    .lock                          the advisory lock of the run writing the folder

Once the manifest says ``complete``, the chunk files it lists are the job's result
set, every item exactly once (``cat chunks/*.jsonl``, ``pyarrow.dataset`` over
``chunks/``, or :func:`read_records`).

An item's full result travels with its record (:class:`ArrayRecords`); the
committer appends the arrays of each block it receives to the array file of the
chunk it is gathering (:meth:`ResultStore.append_arrays`), so a chunk's arrays are
written as they come and held in memory only between a worker and the committer.
A commit renames the array file in place, fsyncs the arrays folder,
writes the chunk (never over an existing file), then replaces the manifest: a chunk
or array file the manifest does not list never counts. So ``kill -9`` at any moment
loses at most the uncommitted work and never duplicates a record.

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
import errno
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import msgspec
import numpy as np
import numpy.typing as npt

from ...errors import ConfigurationError
from ...logging import get_logger
from ._arrays import ArrayFileWriter
from ._atomic import Folder
from ._chunk_formats import chunk_format_named
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
    ChunkFormatName,
    chunk_name,
    own_uncommitted,
    writing_names,
)
from ._manifest_key import ManifestKey, seal
from ._record_parts import ArrayRecords, RecordPart, item_ids, single_records
from ._records import FORMAT_VERSION, ChunkEntry, FileEntry, ItemRecord, Manifest, RecordLayout
from ._verify import read_manifest, verify

__all__ = ["LOG_FILE", "ResultStore", "output_folder"]

_encoder = msgspec.json.Encoder()
_log = get_logger("vyre_async.jobs")


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
    except (ValueError, OSError, RuntimeError) as exc:  # a NUL byte; a symlink loop
        # Python 3.11's resolve() reports a symlink loop as a RuntimeError, later ones
        # as an OSError (ELOOP).
        looped = isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP
        reason = "it runs into a symlink loop" if looped else str(exc)
        named = os.fspath(out) if out is not None else configured
        raise ConfigurationError(
            f"{job_file}: the output folder {named!r} cannot be used ({reason})",
            fix="name a plain folder with --out DIR or in [output] dir.",
        ) from None
    if folder == base or not folder.is_relative_to(base):
        raise ConfigurationError(
            f"{job_file}: $.output.dir: {configured!r} leads to {folder}, outside the job "
            f"file's folder {base}",
            fix="name a subfolder of the job file's folder, or pass --out DIR.",
        )
    return folder


class WrittenChunk(NamedTuple):
    """A chunk :meth:`ResultStore.write_chunk` wrote, for :meth:`ResultStore.list_chunk`.

    Attributes:
        seq: Its number.
        ids: Its items' ids.
        entry: What the manifest will list.
    """

    seq: int
    ids: npt.NDArray[np.int64]
    entry: ChunkEntry


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
        key: ManifestKey | None = None,
    ) -> None:
        self.folder = root.path
        self.committed = committed
        #: Whether :meth:`open` made the folder.
        self.created = False
        self._root, self._chunks, self._arrays = root, chunks, arrays
        self._lock_fd = lock_fd
        self._manifest = manifest
        self._key = key
        self._lock = threading.Lock()
        # The array file of the chunk being gathered, and that chunk's number.
        self._open_arrays: ArrayFileWriter | None = None
        self._cuts = len(manifest.chunks)
        # Items of chunks written and not yet listed in the manifest.
        self._writing = np.zeros_like(committed)
        # Array files of chunks cut and not yet committed (close removes them).
        self._cut_arrays: set[ArrayFileWriter] = set()

    @property
    def manifest(self) -> Manifest:
        """The manifest as last committed."""
        return self._manifest

    @property
    def record_type(self) -> type[ItemRecord]:
        """The struct of the folder's records (its kinds' result columns)."""
        return self._manifest.layout.record_type

    @classmethod
    def open(
        cls,
        folder: Path,
        *,
        job: str,
        fingerprint: str,
        total_items: int,
        resume: bool,
        layout: RecordLayout,
        chunk_format: ChunkFormatName = "jsonl",
        manifest_key: ManifestKey | None = None,
    ) -> ResultStore:
        """Claim a new or empty folder, or reopen a job's folder to resume it.

        A job's folder is verified (every committed chunk and array file against the
        manifest's checksums) before anything in it changes; a folder whose
        manifest commits nothing may be claimed by any job.

        Args:
            folder: The output folder.
            job: The job's name.
            fingerprint: What identifies the job's results (a resume must match).
            total_items: Items of the job.
            resume: Continue the job committed in the folder.
            layout: The job's record layout (a resume must match).
            chunk_format: ``"jsonl"`` or ``"parquet"`` (which needs pyarrow).
            manifest_key: Seal every manifest written with this key, and check the
                MAC of the folder's manifest with it (see :mod:`._manifest_key`).

        Raises:
            ConfigurationError: The folder is in use by another run; holds results
                and ``resume`` is off; holds another job's results, or chunks of
                another format; holds anything vyre-async did not write (or a
                symlink); was changed or damaged since it was committed; has a
                manifest whose MAC does not hold for ``manifest_key`` (keyed without
                it, unkeyed with it, another key, or rewritten); does not exist or
                holds no job while ``resume`` is on; or cannot be written.
                Or the format is Parquet and pyarrow is missing.
        """
        writes = chunk_format_named(chunk_format)  # before anything is created
        writes.check_available(f"writing the {writes.title} chunks of job {job!r}")
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
            store = cls._claim(
                root,
                lock_fd,
                job,
                fingerprint,
                total_items,
                resume,
                layout,
                chunk_format,
                manifest_key,
            )
        except BaseException as exc:
            if lock_fd >= 0:
                os.close(lock_fd)
            root.close()
            if isinstance(exc, OSError):
                raise unusable(folder, exc) from exc
            raise
        store.created = created
        return store

    @classmethod
    def _claim(
        cls,
        root: Folder,
        lock_fd: int,
        job: str,
        fingerprint: str,
        total_items: int,
        resume: bool,
        layout: RecordLayout,
        chunk_format: ChunkFormatName,
        key: ManifestKey | None,
    ) -> ResultStore:
        kinds = dict(root.entries())
        refuse_foreign(root, kinds, has_manifest=MANIFEST_FILE in kinds)
        old = read_manifest(root) if MANIFEST_FILE in kinds else None
        if old is not None and old.chunks:
            check_same_job(root.path, old, fingerprint, total_items, resume, chunk_format, key)
            if old.layout != layout:
                raise ConfigurationError(
                    f"output folder {root.path} holds records of kinds "
                    f"{list(old.layout.kinds)} with columns {[c for c, _ in old.layout.columns]}"
                    f"; this job's are {list(layout.kinds)} with "
                    f"{[c for c, _ in layout.columns]} (a vyre-async of other kinds wrote it)",
                    fix="finish it with the vyre-async that started it, or start the job "
                    "again in a new folder with --out DIR.",
                )
            writer = new_writer(old)
            writing = () if old.complete else writing_names(len(old.chunks), writer, chunk_format)
            manifest = msgspec.structs.replace(old, writer=writer, writing=writing)
        else:  # new, or a folder whose manifest commits nothing: this job's now
            writer = new_writer(old)
            manifest = Manifest(
                FORMAT_VERSION,
                job,
                fingerprint,
                total_items,
                writer,
                chunk_format,
                records=layout,
                writing=writing_names(0, writer, chunk_format),
            )
        if old is None:
            # The manifest comes before chunks/ and arrays/: a run killed in between
            # leaves a job's folder, never subfolders without a manifest (refused).
            manifest = seal(manifest, key)
            root.write(MANIFEST_FILE, _encoder.encode(manifest))
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
            remove_leftovers(root.path, arrays, leftovers, len(old.chunks) if old else 0)
            for name in kinds:
                if ROOT_TEMP.match(name):
                    _log.warning("removing_uncommitted_file", file=str(root.path / name))
                    root.remove(name)
            if old is not None:  # its new writer token, once the folder was checked
                manifest = seal(manifest, key)
                root.write(MANIFEST_FILE, _encoder.encode(manifest))
        except BaseException:
            chunks.close()
            arrays.close()
            raise
        return cls(root, chunks, arrays, lock_fd, manifest, committed, key)

    def discard_if_unused(self) -> None:
        """Remove the folder again if :meth:`open` made it and nothing was committed.

        A run refused after claiming a new folder (its graph file is bad, its backend
        cannot open) leaves no stub behind; only the runner's own files are removed,
        and a folder holding anything else stays.
        """
        if not self.created or self._manifest.chunks or self._root.fd < 0:
            return
        self._discard_open_arrays()
        manifest = self._manifest
        for place, own in (
            (self._chunks, own_uncommitted(manifest.writer, manifest.chunk_format)),
            (self._arrays, own_uncommitted(manifest.writer, "npz")),
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
        """Release the folder (and its lock); a no-op the second time.

        An array file of a chunk that was not committed is removed.
        """
        if self._arrays.fd >= 0:
            self._discard_open_arrays()
        for place in (self._chunks, self._arrays, self._root):
            place.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # the kernel drops the flock with the last descriptor
            self._lock_fd = -1

    def _discard_open_arrays(self) -> None:
        writer, self._open_arrays = self._open_arrays, None
        with self._lock:
            unfinished = [*self._cut_arrays, *([writer] if writer is not None else [])]
            self._cut_arrays.clear()
        for each in unfinished:
            each.discard()

    def append_arrays(self, parts: Sequence[RecordPart]) -> list[RecordPart]:
        """Write the arrays ``parts`` carry to the array file of the chunk being
        gathered; return the parts, records with an array naming that file (other
        parts pass through).

        Blocks on file I/O: the committer calls it in a worker thread, for each block
        as it arrives and in arrival order, then :meth:`cut` where a chunk ends.
        A failed item's record never names an array.
        """
        result: list[RecordPart] = []
        for part in parts:
            if not isinstance(part, ArrayRecords):
                result.append(part)
                continue
            for record, array in zip(part.records, part.arrays, strict=True):
                if array is None or not record.ok:
                    result.append(record)
                    continue
                writer = self._open_arrays
                if writer is None:
                    writer = ArrayFileWriter(self._arrays, self._cuts, self._manifest.writer)
                    self._open_arrays = writer
                writer.add(record.id, array)
                result.append(msgspec.structs.replace(record, array=writer.path))
        return result

    def cut(self) -> ArrayFileWriter | None:
        """End the chunk being gathered: its array file (``None`` if it has none), for
        :meth:`commit`; the next :meth:`append_arrays` starts the next chunk's."""
        writer, self._open_arrays = self._open_arrays, None
        self._cuts += 1
        if writer is not None:
            with self._lock:
                self._cut_arrays.add(writer)
        return writer

    def commit(
        self,
        records: Sequence[RecordPart],
        failed: int | None = None,
        arrays: ArrayFileWriter | None = None,
    ) -> ChunkEntry:
        """Write records as the next chunk, with their array file, and commit it in the manifest.

        :meth:`write_chunk` then :meth:`list_chunk`, for one chunk at a time.

        Args:
            records: The chunk's records (each item at most once, none committed before).
            failed: How many are failures, when the caller counted them already.
            arrays: The chunk's array file, as :meth:`cut` returned it.

        Raises:
            ValueError: A record's item is out of range or committed already, or the
                records name another array file than ``arrays`` (a caller's fault:
                the runner never hands one over).
        """
        seq = len(self._manifest.chunks)
        return self.list_chunk(self.write_chunk(seq, records, failed, arrays))

    def write_chunk(
        self,
        seq: int,
        records: Sequence[RecordPart],
        failed: int | None = None,
        arrays: ArrayFileWriter | None = None,
    ) -> WrittenChunk:
        """Write chunk number ``seq`` and its array file, durable but not yet listed.

        Chunks may be written at once from several threads; :meth:`list_chunk` then
        commits them in ``seq`` order. A written chunk that is never listed (the run
        ended first) is the runner's own uncommitted file: a resume removes it.

        Args:
            seq: The chunk's number: the manifest's chunk count when the chunks
                before it are listed.
            records: As for :meth:`commit`.
            failed: As for :meth:`commit`.
            arrays: As for :meth:`commit`.

        Raises:
            ValueError: As for :meth:`commit`, or an item is in a chunk written and
                not yet listed.
        """
        manifest = self._manifest
        if arrays is not None:
            with self._lock:
                self._cut_arrays.discard(arrays)
        try:
            with self._lock:
                ids = _check_chunk(records, (self.committed, self._writing), arrays, seq)
                self._writing[ids] = True
        except BaseException:
            if arrays is not None:
                arrays.discard()
            raise
        try:
            files: tuple[FileEntry, ...] = ()
            if arrays is not None:
                try:
                    files = (arrays.finish(),)
                except BaseException:
                    arrays.discard()
                    raise
                self._arrays.sync()  # the array file's rename, before the manifest names it
            name = chunk_name(seq, manifest.writer, manifest.chunk_format)
            data = chunk_format_named(manifest.chunk_format).encode(records, manifest.layout)
            size, sha256 = self._chunks.write(name, data, exclusive=True)
        except BaseException:
            self._stop_writing(ids)
            raise
        if failed is None:
            failed = sum(not r.ok for r in single_records(records))
        return WrittenChunk(seq, ids, ChunkEntry(name, ids.size, failed, size, sha256, files))

    def list_chunk(self, written: WrittenChunk) -> ChunkEntry:
        """Commit a written chunk: the manifest lists it (and the job's earlier chunks).

        Raises:
            ValueError: The chunks before it are not listed yet.
        """
        manifest = self._manifest
        if written.seq != len(manifest.chunks):
            raise ValueError(
                f"chunk {written.seq} cannot be listed after {len(manifest.chunks)} chunks"
            )
        chunks = (*manifest.chunks, written.entry)
        writing = writing_names(len(chunks), manifest.writer, manifest.chunk_format)
        self._write_manifest(msgspec.structs.replace(manifest, chunks=chunks, writing=writing))
        self.committed[written.ids] = True
        self._stop_writing(written.ids)
        return written.entry

    def _stop_writing(self, ids: npt.NDArray[np.int64]) -> None:
        with self._lock:
            self._writing[ids] = False

    def finish(self) -> None:
        """Mark the job complete in the manifest (every item is committed)."""
        if self._manifest.committed != self._manifest.total_items:
            raise ValueError("a job is complete only once every item is committed")
        self._write_manifest(msgspec.structs.replace(self._manifest, complete=True, writing=()))

    def _write_manifest(self, manifest: Manifest) -> None:
        """Replace the manifest (sealed with the folder's key, if any): the commit point."""
        manifest = seal(manifest, self._key)
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


def _check_chunk(
    records: Sequence[RecordPart],
    taken: tuple[npt.NDArray[np.bool_], ...],
    arrays: ArrayFileWriter | None,
    seq: int,
) -> npt.NDArray[np.int64]:
    """The ids of a chunk about to be committed as number ``seq``, checked against the
    ``taken`` flags (committed, and in chunks being written).

    Raises:
        ValueError: See :meth:`ResultStore.commit`.
    """
    ids = item_ids(records)
    if ids.size and (
        ids.min() < 0
        or ids.max() >= taken[0].size
        or any(flags[ids].any() for flags in taken)
        or np.unique(ids).size != ids.size
    ):
        raise ValueError("a chunk repeats an item, or one committed already")
    if any(isinstance(r, ArrayRecords) for r in records):
        raise ValueError("a chunk's arrays must be appended (append_arrays) before it is written")
    named = {r.array for r in single_records(records) if r.array is not None}
    if named != ({arrays.path} if arrays is not None else set()) or (
        arrays is not None and arrays.seq != seq
    ):
        raise ValueError("the records name other array files than the chunk's own")
    return ids
