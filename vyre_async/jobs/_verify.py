"""Checking a job's output folder against its manifest before a resume relies on it.

Every committed chunk and array file is read and compared with the size and SHA-256
the manifest recorded; a chunk's records must decode (JSON lines, or Parquet of the
records' schema), match the counts listed, name items in range and never one
committed twice, and name exactly the array file listed. Nothing here writes: a run
killed while checking leaves the folder as it was.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from ..errors import ConfigurationError
from ._atomic import Folder, NotPlainError
from ._columns import optional, parquet_table, table_records
from ._layout import (
    ARRAY_PATH,
    ARRAYS_DIR,
    CHUNK_NAME,
    MANIFEST_FILE,
    array_name,
    writing_names,
)
from ._records import READABLE_FORMATS, ChunkEntry, FileEntry, ItemRecord, Manifest

record_decoder = msgspec.json.Decoder(ItemRecord)


class _Format(msgspec.Struct):
    format: int


def read_manifest(root: Folder) -> Manifest:
    """The folder's manifest, its format and the names it lists checked.

    Raises:
        ConfigurationError: Another format, not a manifest, or a name leaving its folder.
        OSError: It cannot be read (or is not a regular file).
    """
    path = root.path / MANIFEST_FILE
    data = root.read(MANIFEST_FILE)
    try:
        version = msgspec.json.decode(data, type=_Format).format
    except (msgspec.DecodeError, msgspec.ValidationError):
        version = None
    if version is not None and version not in READABLE_FORMATS:
        raise ConfigurationError(
            f"{path} is of format {version}; this vyre-async reads formats "
            f"{', '.join(map(str, READABLE_FORMATS))}",
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
        match = CHUNK_NAME.match(entry.name)
        if match is None or match[3] != manifest.chunk_format:
            raise damaged(root.path, path, f"lists a chunk named {entry.name!r}")
        # A chunk's arrays are in the one file named after it.
        own = f"{ARRAYS_DIR}/{array_name(int(match[1]), match[2])}"
        odd = [f.path for f in entry.files if f.path != own] + [f.path for f in entry.files[1:]]
        if odd:
            raise damaged(root.path, path, f"lists an array file named {odd[0]!r}")
    if manifest.format >= 4:
        problem = writing_problem(manifest)
        if problem is not None:
            raise damaged(root.path, path, problem)
    return manifest


def writing_problem(manifest: Manifest) -> str | None:
    """What is wrong with the chunks a format-4 manifest names as being written, or
    ``None``: every manifest the runner writes names the next chunks after those it
    lists (none once complete), so a mismatch means an entry was removed or added."""
    listed = len(manifest.chunks)
    if manifest.complete:
        expected: tuple[str, ...] = ()
    else:
        expected = writing_names(listed, manifest.writer, manifest.chunk_format)
    if manifest.writing == expected:
        return None
    first = CHUNK_NAME.match(manifest.writing[0]) if manifest.writing else None
    if first is not None and int(first[1]) > listed and not manifest.complete:
        missing = int(first[1]) - 1
        which = (
            f"chunk {listed:06d}'s entry is"
            if missing == listed
            else f"the entries of chunks {listed:06d} to {missing:06d} are"
        )
        return (
            f"lists {listed} chunks but names chunk {int(first[1]):06d} as the next its "
            f"writer writes: {which} missing"
        )
    return (
        f"names {list(manifest.writing)} as the chunks being written, where the runner "
        f"would have named {list(expected)} after its {listed} committed chunks"
        f"{' of a complete job' if manifest.complete else ''}"
    )


def open_output(folder: Path) -> tuple[Folder, Manifest]:
    """Open a job's output folder for reading: the folder and its manifest.

    Raises:
        ConfigurationError: It cannot be read or holds no readable manifest.
    """
    try:
        root = Folder.open(folder)
    except OSError as exc:
        raise ConfigurationError(
            f"{folder} cannot be read as a job's output folder ({exc.strerror or exc})",
            fix="pass the output folder of a vyre-async job.",
        ) from None
    try:
        return root, read_manifest(root)
    except OSError as exc:
        root.close()
        raise ConfigurationError(
            f"{folder} holds no readable job manifest ({exc.strerror or exc})",
            fix="pass the output folder of a vyre-async job.",
        ) from None
    except BaseException:
        root.close()
        raise


def damaged(folder: Path, file: Path, what: str) -> ConfigurationError:
    """The error for a committed ``file`` that is not as the manifest recorded it."""
    return ConfigurationError(
        f"{file} {what}; the output folder {folder} was changed by something other than "
        "vyre-async since it was committed",
        fix="restore the file from a backup (then --resume continues), or start the job "
        "again in a new folder with --out DIR; nothing in this folder was changed.",
    )


def read_chunk(folder: Path, chunks: Folder, entry: ChunkEntry) -> bytes:
    """A committed chunk's bytes, checked against its size and checksum."""
    path = chunks.path / entry.name
    if not CHUNK_NAME.match(entry.name):
        raise damaged(folder, folder / MANIFEST_FILE, f"lists a chunk named {entry.name!r}")
    try:
        data = chunks.read(entry.name)
    except NotPlainError as exc:
        raise damaged(folder, path, f"is {exc.strerror}") from None
    except FileNotFoundError:
        raise damaged(folder, path, "is missing") from None
    if len(data) != entry.bytes or hashlib.sha256(data).hexdigest() != entry.sha256:
        raise damaged(folder, path, "does not match the size and checksum the manifest recorded")
    return data


def parquet_modules(needed_for: str) -> tuple[Any, Any]:
    """``(pyarrow, pyarrow.parquet)``, or a ConfigurationError saying what to install."""
    return (
        optional("pyarrow", needed_for, ConfigurationError),
        optional("pyarrow.parquet", needed_for, ConfigurationError),
    )


def chunk_records(folder: Path, chunks: Folder, entry: ChunkEntry) -> list[ItemRecord]:
    """The records of a committed chunk, checked against its checksum (JSON lines or
    Parquet, by its name).

    Raises:
        ConfigurationError: It is missing, differs from its checksum or holds no
            valid records; or it is Parquet and pyarrow is missing.
    """
    data = read_chunk(folder, chunks, entry)
    path = chunks.path / entry.name
    try:
        if entry.name.endswith(".parquet"):
            pa, pq = parquet_modules(f"reading the Parquet chunk {path}")
            return table_records(pa, parquet_table(pa, pq, data))
        return record_decoder.decode_lines(data)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
        raise damaged(folder, path, f"does not hold valid records ({exc})") from None


def verify(
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
        records = chunk_records(folder, chunks, entry)
        failed = sum(not r.ok for r in records)
        if len(records) != entry.records or failed != entry.failed:
            raise damaged(folder, path, "holds other record counts than the manifest lists")
        ids = np.fromiter((r.id for r in records), dtype=np.int64, count=len(records))
        if ids.size and (ids.min() < 0 or ids.max() >= done.size):
            raise damaged(folder, path, f"names an item outside 0..{done.size - 1}")
        if np.unique(ids).size != ids.size or done[ids].any():
            raise damaged(folder, path, "repeats an item that is committed already")
        done[ids] = True
        named = sorted({r.array for r in records if r.array is not None})
        if named != sorted(f.path for f in entry.files):
            raise damaged(folder, path, "names other array files than the manifest lists")
        for file in entry.files:
            verify_array(folder, arrays, file)
    if manifest.complete != (manifest.committed == manifest.total_items):
        raise damaged(
            folder,
            folder / MANIFEST_FILE,
            f"says complete={manifest.complete} with {manifest.committed} of "
            f"{manifest.total_items} items committed",
        )
    return done


def verify_array(folder: Path, arrays: Folder, file: FileEntry) -> None:
    """Check one committed array against its size and checksum.

    Raises:
        ConfigurationError: It is missing, a link, or differs.
    """
    match = ARRAY_PATH.match(file.path)
    if match is None:
        raise damaged(folder, folder / MANIFEST_FILE, f"lists an array named {file.path!r}")
    path = folder / file.path
    try:
        size, sha256 = arrays.digest(match[1])
    except NotPlainError as exc:
        raise damaged(folder, path, f"is {exc.strerror}") from None
    except FileNotFoundError:
        raise damaged(folder, path, "is missing") from None
    if (size, sha256) != (file.bytes, file.sha256):
        raise damaged(folder, path, "does not match the size and checksum the manifest recorded")
