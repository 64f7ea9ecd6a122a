"""What a graph file's header says, read without loading the graph."""

from __future__ import annotations

import msgspec


class GraphFileHeader(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The numbers a graph file declares before its data.

    Attributes:
        num_vertices: Vertices, or ``None`` where the format has no header (edge lists).
        num_edges: Edges (or matrix entries) declared, or ``None``.
        nbytes: Host bytes loading the graph needs at its peak (an estimate), or
            ``None`` where it cannot be known before reading the edges.
        file_bytes: The file's size.
    """

    num_vertices: int | None
    num_edges: int | None
    nbytes: int | None
    file_bytes: int
