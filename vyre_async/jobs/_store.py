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
import errno
import fcntl
import hashlib
import os
import re
import secrets
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import msgspec
import numpy as np
import numpy.typing as npt

from ..errors import ConfigurationError
from ..logging import get_logger
from ._atomic import TEMP_PREFIX, Folder, NotPlainError
from ._records import FORMAT_VERSION, ChunkEntry, FileEntry, ItemRecord, Manifest

MANIFEST_FILE = "manifest.json"
SUMMARY_FILE = "summary.json"
LOG_FILE = "log.jsonl"
LOCK_FILE = ".lock"
CHUNKS_DIR = "chunks"
ARRAYS_DIR = "arrays"
#: What the folder itself may hold, by kind.
_ROOT_FILES = {MANIFEST_FILE, SUMMARY_FILE, LOG_FILE, LOCK_FILE}
_ROOT_DIRS = {CHUNKS_DIR, ARRAYS_DIR}
_ROOT_TEMP = re.compile(rf"^{re.escape(TEMP_PREFIX)}\d+-(?:manifest|summary)\.json$")
_CHUNK_NAME = re.compile(r"^\d{6}-[0-9a-f]{8}\.jsonl$")
_ARRAY_PATH = re.compile(rf"^{ARRAYS_DIR}/(\d+-[0-9a-f]{{8}}\.npy)$")
_FOREIGN_FIX = (
    "vyre-async writes only into a new or empty folder, or one of its own job folders; "
    "choose another folder with --out DIR, or move the files named above away."
)

_log = get_logger("vyre_async.jobs")
_encoder = msgspec.json.Encoder()
_record_decoder = msgspec.json.Decoder(ItemRecord)


class _Format(msgspec.Struct):
    format: int


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


def _chunk_name(seq: int, writer: str) -> str:
    return f"{seq:06d}-{writer}.jsonl"


def _own_uncommitted(writer: str, suffix: str, digits: str) -> re.Pattern[str]:
    """Names a run with token ``writer`` gives its files (and their temp files)."""
    return re.compile(rf"^(?:{re.escape(TEMP_PREFIX)}\d+-)?{digits}-{writer}\.{suffix}$")


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
            raise _unusable(folder, exc) from exc
        lock_fd = -1
        try:
            _refuse_a_folder_without_a_job(root, resume)
            lock_fd = _lock(root)
            return cls._claim(root, lock_fd, job, fingerprint, total_items, resume, created)
        except BaseException as exc:
            if lock_fd >= 0:
                os.close(lock_fd)
            root.close()
            if isinstance(exc, OSError):
                raise _unusable(folder, exc) from exc
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
        _refuse_foreign(root, kinds, has_manifest=MANIFEST_FILE in kinds)
        old = _read_manifest(root) if MANIFEST_FILE in kinds else None
        if old is not None and old.chunks:
            _check_same_job(root.path, old, fingerprint, total_items, resume)
        chunks = root.subfolder(CHUNKS_DIR, create=True)
        try:
            arrays = root.subfolder(ARRAYS_DIR, create=True)
        except BaseException:
            chunks.close()
            raise
        try:
            leftovers = _classify(root.path, chunks, arrays, old)
            committed = (
                _verify(root.path, chunks, arrays, old)
                if old is not None and old.chunks
                else np.zeros(total_items, dtype=bool)
            )
            _remove_leftovers(root.path, arrays, leftovers, committed)
            for name in kinds:
                if _ROOT_TEMP.match(name):
                    root.remove(name)
            if old is not None and old.chunks:
                manifest = msgspec.structs.replace(old, writer=_new_writer(old))
            else:  # new, or a folder whose manifest commits nothing: this job's now
                manifest = Manifest(FORMAT_VERSION, job, fingerprint, total_items, _new_writer(old))
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
            (self._chunks, _own_uncommitted(writer, "jsonl", r"\d{6}")),
            (self._arrays, _own_uncommitted(writer, "npy", r"\d+")),
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
        name = _chunk_name(len(manifest.chunks), manifest.writer)
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


# ------------------------------------------------------------------ claiming a folder
def _unusable(folder: Path, exc: OSError) -> ConfigurationError:
    if isinstance(exc, NotPlainError):
        return ConfigurationError(
            f"output folder {folder}: {exc.filename} is {exc.strerror}; vyre-async never "
            "follows a link or writes over something else in its output folder",
            fix=_FOREIGN_FIX,
        )
    return ConfigurationError(
        f"output folder {folder} cannot be used: {exc.strerror or exc}",
        fix="choose a folder you can write to with --out DIR.",
    )


def _refuse_a_folder_without_a_job(root: Folder, resume: bool) -> None:
    """Before writing anything (the lock file included): a folder without a manifest
    must be empty but for a lock and temp files of a run that stopped at once."""
    kinds = dict(root.entries())
    if MANIFEST_FILE in kinds:
        return
    _refuse_foreign(root, kinds, has_manifest=False)
    if resume:
        raise ConfigurationError(
            f"output folder {root.path} holds no job (no {MANIFEST_FILE}), so --resume has "
            "nothing to continue",
            fix="run without --resume to start the job in it.",
        )


def _refuse_foreign(root: Folder, kinds: dict[str, str], *, has_manifest: bool) -> None:
    foreign = []
    for name, kind in sorted(kinds.items()):
        if _ROOT_TEMP.match(name) or (name == LOCK_FILE and kind == "file"):
            continue
        if has_manifest and (
            (name in _ROOT_FILES and kind == "file") or (name in _ROOT_DIRS and kind == "dir")
        ):
            continue
        foreign.append(f"{name} ({'a symlink' if kind == 'link' else kind})")
    links = any(kind == "link" for kind in kinds.values())
    if not has_manifest and not links and "dir" in (kinds.get(CHUNKS_DIR), kinds.get(ARRAYS_DIR)):
        raise ConfigurationError(
            f"output folder {root.path} holds {CHUNKS_DIR}/ or {ARRAYS_DIR}/ but no "
            f"{MANIFEST_FILE}: without it, committed results cannot be told from "
            "anything else, so nothing in it is used, deleted or overwritten",
            fix=f"restore {MANIFEST_FILE} if it was deleted (then --resume continues), "
            "or choose another folder with --out DIR.",
        )
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise ConfigurationError(
            f"output folder {root.path} holds {shown}, which vyre-async did not write"
            + ("" if has_manifest else " (a new job's folder must be empty)"),
            fix=_FOREIGN_FIX,
        )


def _lock(root: Folder) -> int:
    """Take the folder's advisory lock; return its descriptor (closing it releases it)."""
    try:
        fd = os.open(
            LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=root.fd
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotPlainError(exc.errno, "a symlink", LOCK_FILE) from None
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        pid = holder if holder.isdigit() else None
        raise ConfigurationError(
            f"output folder {root.path} is in use by another vyre-async run "
            f"({f'pid {pid}' if pid else 'its pid is not recorded yet'})",
            fix=f"wait for that run to end{f' or stop it (kill -TERM {pid})' if pid else ''}, "
            "or choose another folder with --out DIR.",
        ) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _read_manifest(root: Folder) -> Manifest:
    path = root.path / MANIFEST_FILE
    data = root.read(MANIFEST_FILE)
    try:
        version = msgspec.json.decode(data, type=_Format).format
    except (msgspec.DecodeError, msgspec.ValidationError):
        version = None
    if version is not None and version != FORMAT_VERSION:
        raise ConfigurationError(
            f"{path} is of format {version}; this vyre-async reads format {FORMAT_VERSION}",
            fix="finish the job with the vyre-async version that started it, or start it "
            "again in a new folder with --out DIR.",
        )
    try:
        manifest = msgspec.json.decode(data, type=Manifest)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ConfigurationError(
            f"{path} is not a vyre-async manifest ({exc})",
            fix="restore it from a backup, or choose another output folder with --out DIR.",
        ) from None
    for entry in manifest.chunks:
        if not _CHUNK_NAME.match(entry.name):
            raise _damaged(root.path, path, f"lists a chunk named {entry.name!r}")
        odd = next((f.path for f in entry.files if not _ARRAY_PATH.match(f.path)), None)
        if odd is not None:
            raise _damaged(root.path, path, f"lists an array named {odd!r}")
    return manifest


def _check_same_job(
    folder: Path, old: Manifest, fingerprint: str, total_items: int, resume: bool
) -> None:
    if not resume:
        raise ConfigurationError(
            f"output folder {folder} already holds job {old.job!r} "
            f"({old.committed} of {old.total_items} items committed"
            f"{', complete' if old.complete else ''})",
            fix="pass --resume to continue it, or choose another folder with --out DIR "
            "(or delete this one).",
        )
    if old.fingerprint != fingerprint:
        raise ConfigurationError(
            f"output folder {folder} holds job {old.job!r} with another graph or other "
            f"workloads (fingerprint {old.fingerprint[:12]}, this job's {fingerprint[:12]})",
            fix="resume with the job file that made it, or choose another folder with --out DIR.",
        )
    if old.total_items != total_items:
        raise ConfigurationError(
            f"output folder {folder} holds job {old.job!r} of {old.total_items} items; this "
            f"job has {total_items} (the fingerprints agree, so {MANIFEST_FILE} was changed)",
            fix="restore the manifest from a backup, or choose another folder with --out DIR.",
        )


def _new_writer(old: Manifest | None) -> str:
    used = {old.writer} | {c.name[7:15] for c in old.chunks} if old is not None else set()
    while (token := secrets.token_hex(4)) in used:
        pass
    return token


def _classify(
    folder: Path, chunks: Folder, arrays: Folder, manifest: Manifest | None
) -> list[tuple[Folder, str, int | None]]:
    """What the last writer left uncommitted, as ``(folder, name, item id of an array)``.

    The last writer (the manifest's token) may have left the chunk it was committing
    (the next in sequence, exactly) and arrays of items it had not committed, each
    perhaps still under a temp name. Anything else unlisted is refused.

    Raises:
        ConfigurationError: A file that is neither committed nor the last writer's.
    """
    chunk_names = {c.name for c in manifest.chunks} if manifest else set()
    array_names = (
        {f.path.removeprefix(f"{ARRAYS_DIR}/") for c in manifest.chunks for f in c.files}
        if manifest
        else set()
    )
    temp = rf"(?:{re.escape(TEMP_PREFIX)}\d+-)?"
    if manifest is not None:
        next_chunk = re.escape(_chunk_name(len(manifest.chunks), manifest.writer))
        own_chunk = re.compile(rf"^{temp}{next_chunk}$")
        own_array = re.compile(rf"^{temp}(\d+)-{manifest.writer}\.npy$")
    leftovers: list[tuple[Folder, str, int | None]] = []
    for place, listed in ((chunks, chunk_names), (arrays, array_names)):
        foreign = []
        for name, kind in sorted(place.entries()):
            if name in listed and kind == "file":
                continue
            if manifest is not None and kind != "dir":
                if place is chunks and own_chunk.match(name):
                    leftovers.append((place, name, None))
                    continue
                mine = own_array.match(name) if place is arrays else None
                if mine is not None:
                    leftovers.append((place, name, int(mine[1])))
                    continue
            foreign.append(f"{name} ({'a symlink' if kind == 'link' else kind})")
        if foreign:
            raise _foreign_in(folder, place, foreign)
    return leftovers


def _remove_leftovers(
    folder: Path,
    arrays: Folder,
    leftovers: list[tuple[Folder, str, int | None]],
    committed: npt.NDArray[np.bool_],
) -> None:
    """Delete what the last writer left uncommitted (after the folder was verified).

    Raises:
        ConfigurationError: A "leftover" array of a committed item: no run leaves one.
    """
    stray = [
        f"{name} (item {item} is committed)"
        for _, name, item in leftovers
        if item is not None and item < committed.size and committed[item]
    ]
    if stray:
        raise _foreign_in(folder, arrays, stray)
    for place, name, item in leftovers:
        if item is None:
            _log.warning("removing_uncommitted_chunk", file=str(place.path / name))
        place.remove(name)
    arrays_removed = sum(item is not None for _, _, item in leftovers)
    if arrays_removed:
        _log.info("removing_uncommitted_arrays", files=arrays_removed)


def _foreign_in(folder: Path, place: Folder, names: list[str]) -> ConfigurationError:
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    return ConfigurationError(
        f"output folder {folder}: {place.path.name}/ holds {shown}, which the manifest "
        "does not commit and the last run did not write",
        fix=_FOREIGN_FIX,
    )


# ------------------------------------------------------------------ verifying a folder
def _damaged(folder: Path, file: Path, what: str) -> ConfigurationError:
    return ConfigurationError(
        f"{file} {what}; the output folder {folder} was changed by something other than "
        "vyre-async since it was committed",
        fix="restore the file from a backup (then --resume continues), or start the job "
        "again in a new folder with --out DIR; nothing in this folder was changed.",
    )


def _read_chunk(folder: Path, chunks: Folder, entry: ChunkEntry) -> bytes:
    """A committed chunk's bytes, checked against its size and checksum."""
    path = chunks.path / entry.name
    if not _CHUNK_NAME.match(entry.name):
        raise _damaged(folder, folder / MANIFEST_FILE, f"lists a chunk named {entry.name!r}")
    try:
        data = chunks.read(entry.name)
    except NotPlainError as exc:
        raise _damaged(folder, path, f"is {exc.strerror}") from None
    except FileNotFoundError:
        raise _damaged(folder, path, "is missing") from None
    if len(data) != entry.bytes or hashlib.sha256(data).hexdigest() != entry.sha256:
        raise _damaged(folder, path, "does not match the size and checksum the manifest recorded")
    return data


def _verify(
    folder: Path, chunks: Folder, arrays: Folder, manifest: Manifest
) -> npt.NDArray[np.bool_]:
    """Check every committed chunk and array; return the committed flags.

    Raises:
        ConfigurationError: Naming the first file that is missing, differs from its
            checksum, or holds records that are invalid, repeated or out of range.
    """
    done = np.zeros(manifest.total_items, dtype=bool)
    for entry in manifest.chunks:
        path = chunks.path / entry.name
        try:
            records = _record_decoder.decode_lines(_read_chunk(folder, chunks, entry))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise _damaged(folder, path, f"does not hold valid records ({exc})") from None
        failed = sum(not r.ok for r in records)
        if len(records) != entry.records or failed != entry.failed:
            raise _damaged(folder, path, "holds other record counts than the manifest lists")
        ids = np.fromiter((r.id for r in records), dtype=np.int64, count=len(records))
        if ids.size and (ids.min() < 0 or ids.max() >= done.size):
            raise _damaged(folder, path, f"names an item outside 0..{done.size - 1}")
        if np.unique(ids).size != ids.size or done[ids].any():
            raise _damaged(folder, path, "repeats an item that is committed already")
        done[ids] = True
        named = sorted(r.array for r in records if r.array is not None)
        if named != sorted(f.path for f in entry.files):
            raise _damaged(folder, path, "names other array files than the manifest lists")
        for file in entry.files:
            _verify_array(folder, arrays, file)
    if manifest.complete != (manifest.committed == manifest.total_items):
        raise _damaged(
            folder,
            folder / MANIFEST_FILE,
            f"says complete={manifest.complete} with {manifest.committed} of "
            f"{manifest.total_items} items committed",
        )
    return done


def _verify_array(folder: Path, arrays: Folder, file: FileEntry) -> None:
    match = _ARRAY_PATH.match(file.path)
    if match is None:
        raise _damaged(folder, folder / MANIFEST_FILE, f"lists an array named {file.path!r}")
    path = folder / file.path
    try:
        size, sha256 = arrays.digest(match[1])
    except NotPlainError as exc:
        raise _damaged(folder, path, f"is {exc.strerror}") from None
    except FileNotFoundError:
        raise _damaged(folder, path, "is missing") from None
    if (size, sha256) != (file.bytes, file.sha256):
        raise _damaged(folder, path, "does not match the size and checksum the manifest recorded")


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
            manifest = _read_manifest(root)
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
            raise _damaged(root_path, root_path / CHUNKS_DIR, f"cannot be read ({exc})") from None
        with contextlib.closing(chunks):
            for entry in manifest.chunks:
                data = _read_chunk(root_path, chunks, entry)
                try:
                    records = _record_decoder.decode_lines(data)
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    raise _damaged(
                        root_path, chunks.path / entry.name, f"does not hold valid records ({exc})"
                    ) from None
                yield from records
