"""What a job writes: one record per item, and the manifest that commits chunks.

Records are JSON lines encoded by msgspec, or Parquet (``[output] format``); every
record carries every field of the folder's :class:`RecordLayout` (``null`` where it
does not apply), so each chunk has the same columns. Full arrays (levels, vertex
ids, ranks) of a chunk's items go to one ``.npz`` file per chunk that their records
name. A chunk file of records counts only once the manifest lists it, and the
manifest is replaced atomically, so a reader (or a resumed run) never sees half of a
chunk or a record twice.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any, Literal

import msgspec

from ...algorithms import lookup
from ._layout import ChunkFormatName

#: Version of the manifest and record layout (2: checksums, writer tokens; 3: every
#: record field written, Parquet chunks, one array file per chunk; 4: the chunks being
#: written named in the manifest, the graph file's content in the fingerprint, an
#: optional keyed MAC, the records' kinds and columns in the manifest).
FORMAT_VERSION = 4
#: Formats whose folders are read (records, arrays, ``vyre-async verify``); only
#: :data:`FORMAT_VERSION` folders are resumed.
READABLE_FORMATS = (3, 4)


class ItemRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """The outcome of one item: the fields every record has.

    A folder's records also carry its kinds' result columns (``reached``,
    ``top_rank``...; see :class:`RecordLayout`): they are instances of the folder's
    :meth:`RecordLayout.record_type`, a subclass of this one. Every field is written,
    those that do not apply as ``null``: a chunk read by pandas or pyarrow has every
    column, whatever its items were.

    Not tracked by the garbage collector (``gc=False``): it holds only scalars and
    strings, so it can be in no reference cycle, and a job makes millions of them.

    Attributes:
        id: Item id (see :mod:`vyre_async.jobs` for the numbering).
        workload: Index of its workload in the job file.
        kind: The workload's kind (a registered query kind's name).
        source: Source vertex (``None`` for a kind without sources).
        ok: Whether it succeeded; a failed item has ``error`` and ``error_code``.
        array: The ``.npz`` file holding the full result, relative to the output
            folder: one file per chunk, its member ``"<id>"`` is this item's array
            (see :func:`read_item_array`).
        error: Why it failed (the error's message).
        error_code: The error's stable code (``VyreError.code``; 0 for a timeout,
            1 for an unexpected exception).
        attempts: Runs it took, retries included.
        batch: Items of the block it ran in.
        run_ms: Wall milliseconds of its block's last attempt.
    """

    id: int
    workload: int
    kind: str
    source: int | None = None
    ok: bool = True
    array: str | None = None
    error: str | None = None
    error_code: int | None = None
    attempts: int = 1
    batch: int = 1
    run_ms: float = 0.0


#: A result column: its name and type (``"int"`` or ``"float"``), as kinds declare them.
Column = tuple[str, Literal["int", "float"]]


class RecordLayout(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a folder's records hold besides :class:`ItemRecord`'s fields.

    Made from the job's kinds (:func:`record_layout`) and kept in the manifest, so a
    folder is read with the columns it was written with, whatever kinds this
    vyre-async knows.

    Attributes:
        kinds: The kinds its records may name (empty: any name, as format 3 wrote).
        columns: The kinds' result columns, in order (first kind first).
    """

    kinds: tuple[str, ...]
    columns: tuple[Column, ...]

    @property
    def record_type(self) -> type[ItemRecord]:
        """The record struct of this layout (a subclass of :class:`ItemRecord`)."""
        return _record_type(self.kinds, self.columns)

    @property
    def fields(self) -> tuple[str, ...]:
        """Every field of its records, in order: the columns of its tables."""
        return self.record_type.__struct_fields__


@functools.cache
def _record_type(kinds: tuple[str, ...], columns: tuple[Column, ...]) -> type[ItemRecord]:
    types = {"int": int | None, "float": float | None}
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [
        (name, types[kind], None) for name, kind in columns
    ]
    if kinds:
        fields.insert(0, ("kind", Literal[kinds]))
    made: Any = msgspec.defstruct(
        "ItemRecord",
        fields,
        bases=(ItemRecord,),
        module=__name__,
        frozen=True,
        forbid_unknown_fields=True,
        gc=False,
    )
    record_type: type[ItemRecord] = made
    return record_type


def record_layout(kinds: Iterable[str]) -> RecordLayout:
    """The layout of a job whose workloads are of ``kinds``: their columns, deduplicated.

    Raises:
        ValidationError: A kind is not registered.
    """
    names = tuple(dict.fromkeys(kinds))
    columns: dict[str, Column] = {}
    for name in names:
        for column in lookup(name).record_fields:
            columns.setdefault(column[0], column)
    return RecordLayout(names, tuple(columns.values()))


#: What format 3 folders' records held (any kind name; the four result columns).
FORMAT_3_LAYOUT = RecordLayout(
    (),
    (("reached", "int"), ("max_level", "int"), ("top_vertex", "int"), ("top_rank", "float")),
)


class FileEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, array_like=True):
    """A file a chunk commits besides itself (its items' arrays), as ``[path, bytes, sha256]``.

    Attributes:
        path: Relative to the output folder, as the record names it.
        bytes: Its size.
        sha256: SHA-256 of its content, hex.
    """

    path: str
    bytes: int
    sha256: str


class ChunkEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One committed chunk file.

    Attributes:
        name: The file in ``chunks/``.
        records: Records it holds.
        failed: How many of them are failed items.
        bytes: Its size.
        sha256: SHA-256 of its content, hex.
        files: The array file its records name (none or one), with its checksum.
    """

    name: str
    records: int
    failed: int
    bytes: int
    sha256: str
    files: tuple[FileEntry, ...] = ()


class ManifestMac(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The MAC of a keyed manifest (see :class:`~vyre_async.jobs.ManifestKey`).

    Attributes:
        key_id: Names the key that sealed it (tells nothing about the key).
        hmac_sha256: HMAC-SHA256 of the manifest's canonical bytes, hex.
    """

    key_id: str
    hmac_sha256: str


class Manifest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The commit point of a job's output folder.

    Attributes:
        format: :data:`FORMAT_VERSION`.
        job: The job's name.
        fingerprint: Hash of what determines the results (graph and workloads); a
            resume with a different job is refused.
        total_items: Items of the whole job.
        writer: Token of the run that last opened the folder; the files it writes
            carry it in their names, so files it left uncommitted are known as its own.
        chunk_format: ``"jsonl"`` or ``"parquet"``: how every chunk of the folder is written.
        chunks: Committed chunk files, in commit order.
        complete: Every item committed: the listed chunks are the job's result set.
        records: The records' kinds and result columns (``None`` in format 3 folders,
            read as :data:`FORMAT_3_LAYOUT`).
        writing: The chunk files the writer may have written and not listed yet
            (the next ones after ``chunks``, named with its token; none once the job
            is complete): a resume removes these, with their array files, as the
            writer's uncommitted leftovers, and nothing else.
        mac: With a manifest key, the key's id and the HMAC of everything above;
            ``None`` for a manifest written without a key.
    """

    format: int
    job: str
    fingerprint: str
    total_items: int
    writer: str
    chunk_format: ChunkFormatName
    chunks: tuple[ChunkEntry, ...] = ()
    complete: bool = False
    records: RecordLayout | None = None
    writing: tuple[str, ...] = ()
    mac: ManifestMac | None = None

    @property
    def layout(self) -> RecordLayout:
        """The records' layout (format 3's for a folder that names none)."""
        return self.records if self.records is not None else FORMAT_3_LAYOUT

    @property
    def committed(self) -> int:
        """Records committed so far."""
        return sum(c.records for c in self.chunks)

    @property
    def failed(self) -> int:
        """Committed records of failed items."""
        return sum(c.failed for c in self.chunks)
