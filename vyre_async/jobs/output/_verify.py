"""Checking a job's output folder against its manifest before a resume relies on it.

Every committed chunk and array file is read and compared with the size and SHA-256
the manifest recorded; a chunk's records must decode (JSON lines, or Parquet of the
records' schema), match the counts listed, name items in range and never one
committed twice, and name exactly the array file listed. Nothing here writes: a run
killed while checking leaves the folder as it was.
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt

from ...errors import ConfigurationError
from ._atomic import Folder, NotPlainError
from ._chunk_formats import format_of_chunk
from ._layout import (
    ARRAY_PATH,
    ARRAYS_DIR,
    CHUNK_NAME,
    MANIFEST_FILE,
    array_name,
    writing_names,
)
from ._records import (
    READABLE_FORMATS,
    ChunkEntry,
    FileEntry,
    ItemRecord,
    Manifest,
    RecordLayout,
)


class _Format(msgspec.Struct):
    format: int


def read_manifest(root: Folder) -> Manifest:
    """The folder's manifest, its format and the names it lists checked.

    Raises:
        ConfigurationError: Another format, not a manifest, a name leaving its folder,
            or chunks being written that do not follow the committed ones.
        OSError: It cannot be read (or is not a regular file).
    """
    path = root.path / MANIFEST_FILE
    manifest = decode_manifest(path, root.read(MANIFEST_FILE))
    for problem in manifest_problems(manifest):
        raise damaged(root.path, path, problem)
    return manifest


def decode_manifest(path: Path, data: bytes) -> Manifest:
    """The manifest in ``data`` (read from ``path``), of a format this version reads.

    Raises:
        ConfigurationError: Another format, or not a manifest.
    """
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
        return msgspec.json.decode(data, type=Manifest)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ConfigurationError(
            f"{path} is not a vyre-async manifest ({exc})",
            fix="restore it from a backup, or choose another output folder with --out DIR.",
        ) from None


def manifest_problems(manifest: Manifest) -> Iterator[str]:
    """What is wrong with the names a manifest lists and the chunks it says are being
    written, one sentence each (completing "manifest.json ...")."""
    for entry in manifest.chunks:
        match = CHUNK_NAME.match(entry.name)
        if match is None or match[3] != manifest.chunk_format:
            yield f"lists a chunk named {entry.name!r}"
            continue
        # A chunk's arrays are in the one file named after it.
        own = f"{ARRAYS_DIR}/{array_name(int(match[1]), match[2])}"
        odd = [f.path for f in entry.files if f.path != own] + [f.path for f in entry.files[1:]]
        if odd:
            yield f"lists an array file named {odd[0]!r}"
    if manifest.format >= 4:
        problem = writing_problem(manifest)
        if problem is not None:
            yield problem


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


#: What to do about a committed file that is not as the manifest recorded it.
DAMAGED_FIX = (
    "restore the file from a backup (then --resume continues), or start the job again in "
    "a new folder with --out DIR; nothing in this folder was changed."
)


def damaged(folder: Path, file: Path, what: str) -> ConfigurationError:
    """The error for a committed ``file`` that is not as the manifest recorded it."""
    return ConfigurationError(
        f"{file} {what}; the output folder {folder} was changed by something other than "
        "vyre-async since it was committed",
        fix=DAMAGED_FIX,
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


def chunk_records(
    folder: Path, chunks: Folder, entry: ChunkEntry, layout: RecordLayout
) -> list[ItemRecord]:
    """The records of a committed chunk of ``layout``, checked against its checksum
    (in the format its name ends in: see :mod:`._chunk_formats`).

    Raises:
        ConfigurationError: It is missing, differs from its checksum or holds no
            valid records; or it is Parquet and pyarrow is missing.
    """
    data = read_chunk(folder, chunks, entry)
    path = chunks.path / entry.name
    chunk_format = format_of_chunk(entry.name)
    try:
        chunk_format.check_available(f"reading the {chunk_format.title} chunk {path}")
        return chunk_format.records(data, layout)
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
    for problem in committed_problems(folder, chunks, arrays, manifest, done):
        raise problem
    return done


def committed_problems(
    folder: Path,
    chunks: Folder,
    arrays: Folder,
    manifest: Manifest,
    done: npt.NDArray[np.bool_],
    *,
    records_seen: list[int] | None = None,
) -> Iterator[ConfigurationError]:
    """Every problem of the committed chunks and array files, chunk by chunk (blocking).

    Each chunk is read and checked against its size and checksum, its records decoded
    and counted against its entry, their ids checked (in the job, none twice in the
    folder) and marked in ``done``, and its array file checked against its checksum
    and its members against the records that name it. A problem does not stop the
    check: the next chunk is checked all the same. ``records_seen`` (if given) gets
    each readable chunk's record count.
    """
    for entry in manifest.chunks:
        path = chunks.path / entry.name
        try:
            records = chunk_records(folder, chunks, entry, manifest.layout)
        except ConfigurationError as exc:
            yield exc
            continue
        if records_seen is not None:
            records_seen.append(len(records))
        failed = sum(not r.ok for r in records)
        if len(records) != entry.records or failed != entry.failed:
            yield damaged(
                folder,
                path,
                f"holds {len(records)} records ({failed} failed) where the manifest lists "
                f"{entry.records} ({entry.failed} failed)",
            )
        ids = np.fromiter((r.id for r in records), dtype=np.int64, count=len(records))
        inside = (ids >= 0) & (ids < done.size)
        if not inside.all():
            outside = int(ids[~inside][0])
            yield damaged(folder, path, f"names item {outside}, outside 0..{done.size - 1}")
            ids = ids[inside]
        unique, counts = np.unique(ids, return_counts=True)
        repeated = unique[(counts > 1) | done[unique]]
        if repeated.size:
            yield damaged(
                folder,
                path,
                f"repeats item {int(repeated[0])}"
                f"{f' (and {repeated.size - 1} more)' if repeated.size > 1 else ''}, "
                "which is committed already",
            )
        done[unique] = True
        named = sorted({r.array for r in records if r.array is not None})
        if named != sorted(f.path for f in entry.files):
            yield damaged(folder, path, "names other array files than the manifest lists")
            continue
        for file in entry.files:
            try:
                verify_array(folder, arrays, file)
                verify_members(folder, arrays, file, [r.id for r in records if r.array])
            except ConfigurationError as exc:
                yield exc
    if manifest.complete != (manifest.committed == manifest.total_items):
        yield damaged(
            folder,
            folder / MANIFEST_FILE,
            f"says complete={manifest.complete} with {manifest.committed} of "
            f"{manifest.total_items} items committed",
        )


def verify_members(folder: Path, arrays: Folder, file: FileEntry, ids: list[int]) -> None:
    """Check that a committed array file holds one member per item naming it, no other.

    Raises:
        ConfigurationError: It is not an archive, or its members differ.
    """
    path = folder / file.path
    match = ARRAY_PATH.match(file.path)
    if match is None:  # never opened: it could lead out of arrays/
        raise damaged(folder, folder / MANIFEST_FILE, f"lists an array named {file.path!r}")
    try:
        with arrays.open_read(match[1]) as handle:
            names = zipfile.ZipFile(handle).namelist()
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise damaged(folder, path, f"is not an array archive ({exc})") from None
    expected = sorted(f"{i}.npy" for i in ids)
    if sorted(names) != expected:
        extra = sorted(set(names) - set(expected))
        missing = sorted(set(expected) - set(names))
        shown = (f"extra {extra[:3]}" if extra else "") + (
            f"{'; ' if extra else ''}missing {missing[:3]}" if missing else ""
        )
        raise damaged(
            folder, path, f"holds other members than the items whose records name it ({shown})"
        )


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
