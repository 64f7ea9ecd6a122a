"""1-D partitions of a graph: contiguous vertex ranges, each with its vertices' edges.

A graph split over ``p`` devices gives device ``i`` the vertices ``[i * chunk, (i + 1) *
chunk)`` (``chunk = ceil(V / p)``; the last range is shorter, and empty where ``V`` is
small), and of those vertices their out-edges and in-edges, neighbours kept as global
vertex ids. Equal ranges make a vertex's owner ``v // chunk``, which kernels compute
without a lookup; R-MAT scrambles its ids, so equal ranges hold about equal edges.
"""

from __future__ import annotations

import numpy as np

from ..errors import ValidationError
from ._csr import CsrGraph

__all__ = ["GraphPart", "VertexRanges", "graph_part", "part_graph_bytes", "replica_graph_bytes"]


class VertexRanges:
    """Contiguous, equal vertex ranges over ``parts`` devices.

    Args:
        num_vertices: Vertices of the graph.
        parts: Devices, at least one.

    Raises:
        ValidationError: ``parts`` is below 1.
    """

    __slots__ = ("chunk", "num_vertices", "parts")

    def __init__(self, num_vertices: int, parts: int) -> None:
        if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
            raise ValidationError(
                f"a graph is split over at least one device, got {parts!r}",
                fix="pass parts >= 1.",
            )
        self.num_vertices = int(num_vertices)
        self.parts = parts
        #: Vertices per range (the last may hold fewer); at least 1.
        self.chunk = max(1, -(-self.num_vertices // parts))

    def bounds(self, part: int) -> tuple[int, int]:
        """``(first, stop)``: the vertices ``part`` owns (``first == stop``: none)."""
        first = min(part * self.chunk, self.num_vertices)
        return first, min(first + self.chunk, self.num_vertices)

    def size(self, part: int) -> int:
        """Vertices ``part`` owns."""
        first, stop = self.bounds(part)
        return stop - first

    def owner(self, vertex: int) -> int:
        """The part owning ``vertex``."""
        return int(vertex) // self.chunk

    def __repr__(self) -> str:
        return f"VertexRanges(num_vertices={self.num_vertices}, parts={self.parts})"


class GraphPart:
    """One device's share of a partitioned graph, as the kernels read it.

    Attributes:
        part: Its position among the parts.
        first: Its first vertex (global id).
        size: Vertices it owns.
        arrays: ``offsets`` (int64, ``size + 1``, from 0), ``indices`` (int32 global ids
            of the out-neighbours), ``out_degree`` (int32) and, for a directed graph,
            ``in_offsets`` and ``in_indices`` (its vertices' in-lists, global ids).
    """

    __slots__ = ("arrays", "first", "part", "size")

    def __init__(self, part: int, first: int, size: int, arrays: dict[str, np.ndarray]) -> None:
        self.part = part
        self.first = first
        self.size = size
        self.arrays = arrays

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays."""
        return sum(int(a.nbytes) for a in self.arrays.values())


def _rows(
    offsets: np.ndarray, indices: np.ndarray, first: int, stop: int
) -> tuple[np.ndarray, ...]:
    """Rows ``[first, stop)`` of a CSR: int64 offsets from 0 and the int32 indices."""
    begin, end = int(offsets[first]), int(offsets[stop])
    local = offsets[first : stop + 1].astype(np.int64) - begin
    return local, np.ascontiguousarray(indices[begin:end], dtype=np.int32)


def graph_part(graph: CsrGraph, ranges: VertexRanges, part: int) -> GraphPart:
    """The arrays device ``part`` holds of ``graph`` split as ``ranges`` says.

    A directed graph's transpose is made (and cached by the graph) the first time;
    call it off the event loop for large graphs.

    Raises:
        ValidationError: ``ranges`` was made for another vertex count, or ``part`` is
            not one of its parts.
    """
    if ranges.num_vertices != graph.num_vertices:
        raise ValidationError(
            f"vertex ranges of {ranges.num_vertices} vertices cannot split a graph of "
            f"{graph.num_vertices}",
            fix="make the ranges for this graph: VertexRanges(graph.num_vertices, parts).",
        )
    if not 0 <= part < ranges.parts:
        raise ValidationError(
            f"part {part} is not one of {ranges.parts}", fix=f"pass 0 <= part < {ranges.parts}."
        )
    first, stop = ranges.bounds(part)
    offsets, indices = _rows(graph.offsets, graph.indices, first, stop)
    arrays = {
        "offsets": offsets,
        "indices": indices,
        "out_degree": np.diff(offsets).astype(np.int32),
    }
    if not graph.symmetric:
        transpose = graph.transpose()
        arrays["in_offsets"], arrays["in_indices"] = _rows(
            transpose.offsets, transpose.indices, first, stop
        )
    return GraphPart(part, first, stop - first, arrays)


def _csr_bytes(rows: int, edges: int) -> int:
    """int64 offsets, int32 indices."""
    return 8 * (rows + 1) + 4 * edges


def replica_graph_bytes(graph: CsrGraph) -> int:
    """Device bytes of a whole copy of ``graph``: int64 offsets, int32 indices and
    out-degrees, and a directed graph's transpose (what a replica uploads)."""
    n, e = graph.num_vertices, graph.num_edges
    one = _csr_bytes(n, e) + 4 * n
    return one if graph.symmetric else one + _csr_bytes(n, e)


def part_graph_bytes(graph: CsrGraph, ranges: VertexRanges) -> list[int]:
    """Device bytes of each part's arrays (:func:`graph_part`), without making them.

    A directed graph's in-edge counts need its transpose's offsets (made and cached
    by the graph the first time).
    """
    out = graph.offsets
    into = out if graph.symmetric else graph.transpose().offsets
    sizes = []
    for part in range(ranges.parts):
        first, stop = ranges.bounds(part)
        rows = stop - first
        nbytes = _csr_bytes(rows, int(out[stop]) - int(out[first])) + 4 * rows
        if not graph.symmetric:
            nbytes += _csr_bytes(rows, int(into[stop]) - int(into[first]))
        sizes.append(nbytes)
    return sizes
