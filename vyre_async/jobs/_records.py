"""What a job writes: one record per item, and the manifest that commits chunks.

Records are JSON lines encoded by msgspec, or Parquet (``[output] format``); every
record carries every field (``null`` where it does not apply), so each chunk has
the same columns. Full arrays (levels, vertex ids, ranks) of a chunk's items go to
one ``.npz`` file per chunk that their records name. A chunk file of records counts
only once the manifest lists it, and the manifest is replaced atomically, so a
reader (or a resumed run) never sees half of a chunk or a record twice.
"""

from __future__ import annotations

import msgspec

from ._layout import ChunkFormat

#: Version of the manifest and record layout (2: checksums, writer tokens; 3: every
#: record field written, Parquet chunks, one array file per chunk; 4: the chunks being
#: written named in the manifest, the graph file's content in the fingerprint, an
#: optional keyed MAC).
FORMAT_VERSION = 4
#: Formats whose folders are read (records, arrays, ``vyre-async verify``); only
#: :data:`FORMAT_VERSION` folders are resumed.
READABLE_FORMATS = (3, 4)


class ItemRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """The outcome of one item.

    Every field is written, those that do not apply as ``null``: a chunk read by
    pandas or pyarrow has every column, whatever its items were.

    Not tracked by the garbage collector (``gc=False``): it holds only scalars and
    strings, so it can be in no reference cycle, and a job makes millions of them.

    Attributes:
        id: Item id (see :mod:`vyre_async.jobs` for the numbering).
        workload: Index of its workload in the job file.
        kind: The workload's kind (a registered query kind's name).
        source: Source vertex (``None`` for PageRank).
        ok: Whether it succeeded; a failed item has ``error`` and ``error_code``.
        reached: Vertices reached (within ``k`` hops for ``khop``), source included.
        max_level: Largest level reached (``"levels"`` readback of ``bfs``/``khop``).
        top_vertex: Vertex of the largest rank (PageRank).
        top_rank: The largest rank (PageRank).
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
    reached: int | None = None
    max_level: int | None = None
    top_vertex: int | None = None
    top_rank: float | None = None
    array: str | None = None
    error: str | None = None
    error_code: int | None = None
    attempts: int = 1
    batch: int = 1
    run_ms: float = 0.0


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
    chunk_format: ChunkFormat
    chunks: tuple[ChunkEntry, ...] = ()
    complete: bool = False
    writing: tuple[str, ...] = ()
    mac: ManifestMac | None = None

    @property
    def committed(self) -> int:
        """Records committed so far."""
        return sum(c.records for c in self.chunks)

    @property
    def failed(self) -> int:
        """Committed records of failed items."""
        return sum(c.failed for c in self.chunks)
