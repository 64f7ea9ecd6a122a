"""Edge endpoints and weights gathered from a text file block by block.

Shared by the edge-list and Matrix Market loaders: blocks parsed by the fast path
are range-checked in bulk; blocks on the careful path name the first bad line. The
host memory the graph will need is checked as edges arrive and again, with the
vertex count, before the graph is built.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from .._memory import check_host_memory
from ._csr import CsrGraph
from ._text import RowBlock

#: Host bytes per vertex while a graph is built (offsets and degree counts).
BUILD_BYTES_PER_VERTEX = 24
#: Host bytes per input edge while a graph is built (endpoints, sort keys, order),
#: plus what weights add; both double for a symmetrised graph.
BUILD_BYTES_PER_EDGE, BUILD_BYTES_PER_WEIGHT = 16, 24
#: Host bytes per edge a loader holds before building (int32 columns, and a copy).
HELD_BYTES_PER_EDGE = 16


def estimate_graph_bytes(
    num_vertices: int, num_edges: int, *, symmetric: bool = False, weighted: bool = False
) -> int:
    """Host bytes that building a graph of this size needs at its peak (an estimate).

    Args:
        num_vertices: Vertices.
        num_edges: Input edges (before symmetrising and dedupe).
        symmetric: Every edge is added reversed too.
        weighted: The edges carry weights.
    """
    per_edge = BUILD_BYTES_PER_EDGE + (BUILD_BYTES_PER_WEIGHT if weighted else 0)
    return BUILD_BYTES_PER_VERTEX * num_vertices + num_edges * per_edge * (2 if symmetric else 1)


class EdgeColumns:
    """Edge endpoints (and weights) gathered block by block, with their range checked.

    Args:
        width: 2 (endpoints) or 3 (and a weight).
        base: The smallest id (0, or 1 for Matrix Market).
        limit: The largest id.
        range_fix: The fix of an out-of-range error.
        source: The file, for memory errors.
        memory_limit: Host bytes the graph may need; default: what the machine has.
    """

    def __init__(
        self,
        width: int,
        *,
        base: int,
        limit: int,
        range_fix: str,
        source: str = "the edge list",
        memory_limit: int | None = None,
    ) -> None:
        self.width, self.base, self.limit, self.range_fix = width, base, limit, range_fix
        self.source, self.memory_limit = source, memory_limit
        self.src: list[npt.NDArray[np.int32]] = []
        self.dst: list[npt.NDArray[np.int32]] = []
        self.weights: list[npt.NDArray[np.float32]] = []
        self.edges = 0

    def add_parsed(self, columns: list[Any]) -> bool:
        """Keep columns from the fast path; ``False`` (nothing kept) if an id is out of range."""
        for ids in columns[:2]:
            if ids.size and (ids.min() < self.base or ids.max() > self.limit):
                return False
        self._keep(columns[0], columns[1], columns[2] if self.width == 3 else None)
        return True

    def add_rows(self, block: RowBlock, what: str, fix: str) -> None:
        """Parse data lines on the careful path, naming the first bad line.

        Raises:
            ValidationError: A line has the wrong count of fields, a token is not a
                number, or an id is out of range.
        """
        table = block.table(self.width, what, fix)
        src, dst = (self._ids(block, table[:, i], fix) for i in (0, 1))
        weights = None
        if self.width == 3:
            weights = block.parse(table[:, 2], np.float64, "a number", fix)
        self._keep(src, dst, weights)

    def check_memory(self, num_vertices: int, num_edges: int, *, symmetric: bool) -> None:
        """Refuse a graph of this size when it would need more host memory than allowed.

        Raises:
            ValidationError: With the estimate and the limit.
        """
        need = HELD_BYTES_PER_EDGE * num_edges + estimate_graph_bytes(
            num_vertices, num_edges, symmetric=symmetric, weighted=self.width == 3
        )
        check_host_memory(
            need,
            f"{self.source}: a graph of {num_vertices:,} vertices and {num_edges:,} edges",
            fix="load a smaller graph, or run on a machine with more memory.",
            limit=self.memory_limit,
        )

    def build(self, num_vertices: Any, *, symmetric: bool) -> CsrGraph:
        """The graph of every kept edge, ids shifted down by ``base``.

        Raises:
            ValidationError: The graph would need more host memory than allowed.
        """
        if isinstance(num_vertices, int) and not isinstance(num_vertices, bool):
            vertices = num_vertices
        else:  # the largest id plus one (a wrong type is from_edges' to report)
            vertices = max(
                (int(p.max()) + 1 - self.base for p in self.src + self.dst if p.size), default=0
            )
        self.check_memory(max(vertices, 0), self.edges, symmetric=symmetric)
        src = concat(self.src, np.int32) - np.int32(self.base)
        dst = concat(self.dst, np.int32) - np.int32(self.base)
        weights = concat(self.weights, np.float32) if self.width == 3 else None
        return CsrGraph.from_edges(src, dst, num_vertices, symmetric=symmetric, weights=weights)

    def _keep(self, src: Any, dst: Any, weights: Any | None) -> None:
        self.edges += int(src.size)
        self.check_memory(0, self.edges, symmetric=False)  # a lower bound, as edges arrive
        self.src.append(src.astype(np.int32))
        self.dst.append(dst.astype(np.int32))
        if weights is not None:
            self.weights.append(weights.astype(np.float32))

    def _ids(self, block: RowBlock, column: npt.NDArray[np.bytes_], fix: str) -> Any:
        kind = "index" if self.base else "vertex id"
        ids = block.parse(column, np.int64, f"an integer {kind}", fix)
        bad = (ids < self.base) | (ids > self.limit)
        if bad.any():
            row = int(np.argmax(bad))
            problem = f"{kind} {int(ids[row])} is outside [{self.base}, {self.limit}]"
            raise block.fail(row, problem, self.range_fix, joiner=" in")
        return ids


def concat(parts: Iterable[npt.NDArray[Any]], dtype: type[np.generic]) -> npt.NDArray[Any]:
    """``np.concatenate`` that also accepts no parts (an empty array of ``dtype``)."""
    parts = list(parts)
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)
