"""A job's output folder: chunks of records, ``.npy`` arrays, and the manifest.

Layout (every file written by :func:`write_atomic`)::

    manifest.json        the commit point: job, fingerprint, committed chunks
    chunks/000000.jsonl  records (JSON lines), one file per commit, in commit order
    arrays/<id>.npy      full results of items that asked for them
    summary.json         the last run's summary
    log.jsonl            structlog JSON lines of every run

Once the manifest says ``complete``, the chunk files it lists are the job's result
set, every item exactly once (``cat chunks/*.jsonl`` or :func:`read_records`).

A commit writes the chunk, fsyncs the arrays folder, then replaces the manifest: a
chunk the manifest does not list never counts, and a resumed run deletes it and
runs its items again. So ``kill -9`` at any moment loses at most the uncommitted
work and never duplicates a record.

Every method here blocks on file I/O; the runner calls them in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import msgspec
import numpy as np
import numpy.typing as npt

from ..errors import ConfigurationError
from ._atomic import TEMP_PREFIX, remove_temp_files, sync_dir, write_atomic
from ._records import FORMAT_VERSION, ChunkEntry, ItemRecord, Manifest

MANIFEST_FILE = "manifest.json"
SUMMARY_FILE = "summary.json"
LOG_FILE = "log.jsonl"
CHUNKS_DIR = "chunks"
ARRAYS_DIR = "arrays"
#: What a folder may hold before its first manifest and still count as a job's own.
_OWN_NAMES = {LOG_FILE, CHUNKS_DIR, ARRAYS_DIR}

_encoder = msgspec.json.Encoder()
_record_decoder = msgspec.json.Decoder(ItemRecord)


class _RecordId(msgspec.Struct):
    id: int


_id_decoder = msgspec.json.Decoder(_RecordId)


def output_folder(job_file: Path, configured: str, out: str | os.PathLike[str] | None) -> Path:
    """Where a job writes: ``out`` as given, else ``configured`` under the job's folder.

    Raises:
        ConfigurationError: ``configured`` is absolute or leads outside the job
            file's folder (a job file may not write elsewhere; ``--out`` may).
    """
    if out is not None:
        return Path(out).expanduser().resolve()
    base = job_file.resolve().parent
    if Path(configured).is_absolute():
        raise ConfigurationError(
            f"{job_file}: $.output.dir: {configured!r} is an absolute path",
            fix="make output.dir relative to the job file, or pass --out DIR.",
        )
    folder = (base / configured).resolve()
    if folder == base or not folder.is_relative_to(base):
        raise ConfigurationError(
            f"{job_file}: $.output.dir: {configured!r} leads to {folder}, outside the job "
            f"file's folder {base}",
            fix="name a subfolder of the job file's folder, or pass --out DIR.",
        )
    return folder


class ResultStore:
    """The output folder of one job; made by :meth:`open`.

    Args:
        folder: The output folder.
        manifest: Its current manifest.
    """

    def __init__(self, folder: Path, manifest: Manifest) -> None:
        self.folder = folder
        self._manifest = manifest
        self._chunks = folder / CHUNKS_DIR
        self._arrays = folder / ARRAYS_DIR

    @property
    def manifest(self) -> Manifest:
        """The manifest as last committed."""
        return self._manifest

    @classmethod
    def open(
        cls, folder: Path, *, job: str, fingerprint: str, total_items: int, resume: bool
    ) -> ResultStore:
        """Claim a new or empty folder, or reopen a job's folder to resume it.

        Raises:
            ConfigurationError: The folder holds results and ``resume`` is off, holds
                another job's results, is not a job folder, or cannot be written.
        """
        try:
            manifest = cls._claim(folder, job, fingerprint, total_items, resume)
            store = cls(folder, manifest)
            store._chunks.mkdir(exist_ok=True)
            store._arrays.mkdir(exist_ok=True)
            for place in (folder, store._chunks, store._arrays):
                remove_temp_files(place)
            store._remove_uncommitted_chunks()
        except OSError as exc:
            raise ConfigurationError(
                f"output folder {folder} cannot be used: {exc.strerror or exc}",
                fix="choose a folder you can write to with --out DIR.",
            ) from exc
        return store

    @staticmethod
    def _claim(
        folder: Path, job: str, fingerprint: str, total_items: int, resume: bool
    ) -> Manifest:
        path = folder / MANIFEST_FILE
        if path.exists():
            try:
                manifest = msgspec.json.decode(path.read_bytes(), type=Manifest)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise ConfigurationError(
                    f"{path} is not a vyre-async manifest ({exc})",
                    fix="choose another output folder with --out DIR.",
                ) from None
            if not resume:
                raise ConfigurationError(
                    f"output folder {folder} already holds job {manifest.job!r} "
                    f"({manifest.committed} of {manifest.total_items} items committed)",
                    fix="pass --resume to continue it, or choose another folder with --out DIR "
                    "(or delete this one).",
                )
            if manifest.fingerprint != fingerprint or manifest.total_items != total_items:
                raise ConfigurationError(
                    f"output folder {folder} holds job {manifest.job!r} with other graph or "
                    f"workloads (fingerprint {manifest.fingerprint[:12]}, this job's "
                    f"{fingerprint[:12]})",
                    fix="resume with the job file that made it, or choose another folder "
                    "with --out DIR.",
                )
            return manifest
        if folder.exists():
            if not folder.is_dir():
                raise ConfigurationError(
                    f"output folder {folder} is a file", fix="choose a folder with --out DIR."
                )
            foreign = sorted(
                p.name
                for p in folder.iterdir()
                if p.name not in _OWN_NAMES and not p.name.startswith(TEMP_PREFIX)
            )
            if foreign:
                raise ConfigurationError(
                    f"output folder {folder} is not empty and holds no job "
                    f"(found {', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''})",
                    fix="choose a new or empty folder with --out DIR.",
                )
        folder.mkdir(parents=True, exist_ok=True)
        manifest = Manifest(FORMAT_VERSION, job, fingerprint, total_items)
        write_atomic(path, _encoder.encode(manifest))
        return manifest

    def _remove_uncommitted_chunks(self) -> None:
        listed = {c.name for c in self._manifest.chunks}
        for path in self._chunks.iterdir():
            if path.name not in listed:
                with contextlib.suppress(OSError):
                    path.unlink()

    def committed_ids(self) -> npt.NDArray[np.bool_]:
        """One flag per item id: committed already. Deletes arrays of uncommitted items.

        Raises:
            ConfigurationError: A committed chunk is missing, damaged or repeats an id.
        """
        done = np.zeros(self._manifest.total_items, dtype=bool)
        for entry in self._manifest.chunks:
            data = self._read_chunk(entry)
            ids = np.fromiter(
                (r.id for r in _id_decoder.decode_lines(data)), dtype=np.int64, count=entry.records
            )
            if ids.size and (ids.min() < 0 or ids.max() >= done.size or done[ids].any()):
                raise self._damaged(entry, "repeats an item id or names one out of range")
            done[ids] = True
        for path in self._arrays.glob("*.npy"):
            stem = path.stem
            if not stem.isdigit() or int(stem) >= done.size or not done[int(stem)]:
                with contextlib.suppress(OSError):
                    path.unlink()
        return done

    def _read_chunk(self, entry: ChunkEntry) -> bytes:
        try:
            data = (self._chunks / entry.name).read_bytes()
        except OSError:
            raise self._damaged(entry, "is missing") from None
        if len(data) != entry.bytes or data.count(b"\n") != entry.records:
            raise self._damaged(entry, "does not have the size the manifest recorded")
        return data

    def _damaged(self, entry: ChunkEntry, what: str) -> ConfigurationError:
        return ConfigurationError(
            f"committed chunk {self._chunks / entry.name} {what}; the output folder "
            f"{self.folder} was changed by something other than vyre-async",
            fix="start the job again in a new folder with --out DIR.",
        )

    def write_array(self, item_id: int, array: np.ndarray) -> str:
        """Write an item's full result as ``arrays/<id>.npy``; return its relative path.

        The folder is synced at the next :meth:`commit`, before the manifest names it.
        """
        path = self._arrays / f"{int(item_id)}.npy"

        def save(file: BinaryIO) -> None:
            np.save(file, array, allow_pickle=False)

        write_atomic(path, save, sync_folder=False)
        return f"{ARRAYS_DIR}/{path.name}"

    def commit(self, records: Sequence[ItemRecord], failed: int | None = None) -> ChunkEntry:
        """Write records as the next chunk and commit it in the manifest.

        Args:
            records: The chunk's records.
            failed: How many are failures, when the caller counted them already.
        """
        name = f"{len(self._manifest.chunks):06d}.jsonl"
        data = _encoder.encode_lines(records)
        if any(r.array is not None for r in records):
            sync_dir(self._arrays)  # the arrays' renames, before the manifest names them
        size = write_atomic(self._chunks / name, data)
        if failed is None:
            failed = sum(not r.ok for r in records)
        entry = ChunkEntry(name, len(records), failed, size)
        manifest = msgspec.structs.replace(self._manifest, chunks=(*self._manifest.chunks, entry))
        write_atomic(self.folder / MANIFEST_FILE, _encoder.encode(manifest))
        self._manifest = manifest
        return entry

    def finish(self) -> None:
        """Mark the job complete in the manifest."""
        manifest = msgspec.structs.replace(self._manifest, complete=True)
        write_atomic(self.folder / MANIFEST_FILE, _encoder.encode(manifest))
        self._manifest = manifest

    def write_summary(self, summary: msgspec.Struct) -> None:
        """Write ``summary.json`` atomically."""
        write_atomic(self.folder / SUMMARY_FILE, msgspec.json.format(_encoder.encode(summary)))


def read_records(folder: str | os.PathLike[str]) -> Iterator[ItemRecord]:
    """The committed records of a job's output folder, in commit order.

    Only chunks the manifest lists are read, so this is exactly what a resumed run
    skips: no record twice, none that was not committed.

    Raises:
        ConfigurationError: The folder has no manifest, or a chunk is damaged.
    """
    root = Path(folder)
    try:
        manifest = msgspec.json.decode((root / MANIFEST_FILE).read_bytes(), type=Manifest)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ConfigurationError(
            f"{root} holds no readable job manifest ({exc})",
            fix="pass the output folder of a vyre-async job.",
        ) from None
    store = ResultStore(root, manifest)
    for entry in manifest.chunks:
        yield from _record_decoder.decode_lines(store._read_chunk(entry))
