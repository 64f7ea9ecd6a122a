"""What ``vyre-async export RUN --to FILE`` writes: every committed record as CSV or
Parquet, and the items' full-result arrays as one ``.npz`` beside it.

The records are read chunk by chunk (each checked against the manifest) and written
as they are read, so an export holds one chunk of records and one item's array in
memory, whatever the size of the run. Each file is written under a temporary name in
its own folder, fsynced and only then put in place; an existing file is refused
unless ``force`` (then replaced in one rename), so an export never leaves half a
file or overwrites one by accident.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import zipfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np

from ...errors import ConfigurationError
from ._arrays import open_item_arrays
from ._chunk_formats import chunk_format_named
from ._parquet import PARQUET
from ._reading import committed_chunk_records
from ._records import ItemRecord, RecordLayout
from ._verify import open_output

#: The formats an export writes, by the file's extension.
EXPORT_FORMATS = {".csv": "csv", ".parquet": "parquet"}
#: What follows the export's stem in the name of its arrays file.
ARRAYS_SUFFIX = ".arrays.npz"
_TEMP_PREFIX = ".tmp-export-"
#: Room for a member's ``.npy`` header when deciding whether it needs ZIP64.
_HEADER_ROOM = 1 << 16


class ExportedRecords(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What :func:`export_records` wrote.

    Attributes:
        path: The records file (CSV or Parquet).
        records: Records it holds: every committed record of the run.
        arrays_path: The arrays file beside it, or ``None`` when no item kept an array.
        arrays: Arrays it holds, one member per item (``np.load(path)["17"]``).
    """

    path: str
    records: int
    arrays_path: str | None
    arrays: int


def export_records(
    folder: str | os.PathLike[str], to: str | os.PathLike[str], *, force: bool = False
) -> ExportedRecords:
    """Write every committed record of a job's output folder to one CSV or Parquet file.

    The format is the extension of ``to``: ``.csv`` (a header of the record fields,
    then one row per record in commit order; a null field is an empty cell, ``ok`` is
    ``true``/``false``) or ``.parquet`` (the columns and types of
    ``read_records(folder, as_="arrow")``; needs pyarrow). The full-result arrays of
    the items that kept one (levels, k-hop vertex ids, PageRank ranks) go to one
    ``.npz`` beside it, ``<stem>.arrays.npz`` (``results.csv`` ->
    ``results.arrays.npz``), one member per item named by its id, so
    ``np.load(path)[str(record.id)]`` is that item's array; no arrays file is written
    when no item kept one. The records file's ``array`` column still names the run's
    own array file.

    Every file is written under a temporary name beside its target, fsynced and then
    renamed into place; nothing is written into the run's folder. Blocks on file I/O.

    Args:
        folder: A job's output folder (JSON-lines or Parquet; complete or not: what
            is committed is exported).
        to: The records file to write.
        force: Replace ``to`` (and its arrays file) if it exists.

    Returns:
        What was written.

    Raises:
        ConfigurationError: ``to`` has another extension, exists (without
            ``force``), is a folder, is inside the run's folder, or its folder does
            not exist; the run's folder holds no job or a damaged chunk or array
            file; Parquet is asked for (or the run's chunks are Parquet) and pyarrow
            is missing; or a file cannot be written (with the OS's reason).
    """
    target = Path(to)
    kind = EXPORT_FORMATS.get(target.suffix.lower())
    if kind is None:
        raise ConfigurationError(
            f"cannot export to {target}: its extension {target.suffix or '(none)'!r} "
            "names no format",
            fix="name the file .csv (CSV) or .parquet (Parquet), e.g. --to records.csv.",
        )
    if kind == "parquet":
        PARQUET.check_available("exporting records to Parquet")
    source = Path(folder)
    root, manifest = open_output(source)
    root.close()
    reads = chunk_format_named(manifest.chunk_format)  # before anything is written
    reads.check_available(f"reading the {reads.title} chunks of {source}")
    has_arrays = any(chunk.files for chunk in manifest.chunks)
    arrays_target = target.with_name(target.stem + ARRAYS_SUFFIX) if has_arrays else None
    for each in (target, arrays_target):
        if each is not None:
            _check_target(source, each, force)
    try:
        with contextlib.ExitStack() as cleanup:
            records_temp = cleanup.enter_context(_temp_beside(target))
            if kind == "csv":
                count = _write_csv(source, records_temp, manifest.layout)
            else:
                chunks = committed_chunk_records(source)
                count = PARQUET.write_file(records_temp, chunks, manifest.layout)
            arrays = 0
            if arrays_target is not None:
                arrays_temp = cleanup.enter_context(_temp_beside(arrays_target))
                arrays = _write_arrays(source, arrays_temp)
                _put_in_place(arrays_temp, arrays_target, force)
            try:
                _put_in_place(records_temp, target, force)
            except BaseException:
                if arrays_target is not None and not force:
                    arrays_target.unlink(missing_ok=True)  # ours: made by this export
                raise
    except OSError as exc:
        raise ConfigurationError(
            f"the export to {target} failed ({exc.strerror or exc}); nothing was left half written",
            fix="make room, or choose a folder you can write to, then export again.",
        ) from None
    return ExportedRecords(
        str(target), count, None if arrays_target is None else str(arrays_target), arrays
    )


def _check_target(run: Path, target: Path, force: bool) -> None:
    """Refuse a target that is a folder, in the run's folder, or exists (without ``force``)."""
    parent = target.parent
    if not parent.is_dir():
        raise ConfigurationError(
            f"cannot export to {target}: the folder {parent} does not exist",
            fix=f"create it first (mkdir -p {parent}), or name a file in an existing folder.",
        )
    if parent.resolve().is_relative_to(run.resolve()):
        raise ConfigurationError(
            f"cannot export to {target}: it is inside the run's output folder {run}, "
            "which holds only what the job wrote (a resume refuses other files)",
            fix="name a file outside the run's folder, e.g. --to records.csv.",
        )
    if target.is_dir():
        raise ConfigurationError(
            f"cannot export to {target}: it is a folder", fix="name a file, e.g. --to records.csv."
        )
    if os.path.lexists(target) and not force:
        raise ConfigurationError(
            f"{target} exists; an export never replaces a file unless told to",
            fix="pass --force (force=True) to replace it, or name another file.",
        )


@contextlib.contextmanager
def _temp_beside(target: Path) -> Iterator[Path]:
    """A new empty temp file in ``target``'s folder (its mode as the umask allows, like
    any new file), removed on the way out unless it was put in place."""
    temp = target.with_name(f"{_TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{target.name}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    os.close(os.open(temp, flags, 0o666))
    try:
        yield temp
    finally:
        temp.unlink(missing_ok=True)


def _put_in_place(temp: Path, target: Path, force: bool) -> None:
    """fsync ``temp`` and give it ``target``'s name: replace with ``force``, else only
    if no file has the name (checked by the kernel, so a file made meanwhile survives)."""
    with temp.open("rb+") as file:
        os.fsync(file.fileno())
    if force:
        temp.replace(target)
    else:
        try:
            os.link(temp, target)
        except FileExistsError:
            raise ConfigurationError(
                f"{target} was created while the export was written; it was left as it is",
                fix="pass --force (force=True) to replace it, or name another file.",
            ) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            # A file system without hard links: a rename, after one more look.
            if os.path.lexists(target):
                raise ConfigurationError(
                    f"{target} was created while the export was written; it was left as it is",
                    fix="pass --force (force=True) to replace it, or name another file.",
                ) from None
            temp.replace(target)
        temp.unlink(missing_ok=True)
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_csv(run: Path, temp: Path, layout: RecordLayout) -> int:
    import csv  # only an export to CSV needs it

    count = 0
    with temp.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(layout.fields)
        for records in committed_chunk_records(run):
            writer.writerows(_csv_row(record) for record in records)
            count += len(records)
    return count


def _csv_row(record: ItemRecord) -> list[object]:
    return [_csv_cell(value) for value in msgspec.structs.astuple(record)]


def _csv_cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value  # ints as they are; floats as repr, which reads back exactly


def _write_arrays(run: Path, temp: Path) -> int:
    """Every committed item's array, one ``<id>.npy`` member each, in commit order."""
    count = 0
    with (
        open_item_arrays(run) as arrays,
        temp.open("wb") as file,
        zipfile.ZipFile(file, "w", zipfile.ZIP_STORED) as archive,
    ):
        for records in committed_chunk_records(run):
            for record in records:
                if record.array is None:
                    continue
                array = arrays.read(record.array, record.id)
                big = array.nbytes + _HEADER_ROOM > zipfile.ZIP64_LIMIT
                with archive.open(f"{record.id}.npy", "w", force_zip64=big) as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)
                count += 1
    return count
