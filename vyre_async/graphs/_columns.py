"""Edge endpoints and weights gathered from a text file block by block.

Shared by the edge-list and Matrix Market loaders: blocks parsed by the fast path
are range-checked in bulk; blocks on the careful path name the first bad line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from ._csr import CsrGraph
from ._text import RowBlock


class EdgeColumns:
    """Edge endpoints (and weights) gathered block by block, with their range checked."""

    def __init__(self, width: int, *, base: int, limit: int, range_fix: str) -> None:
        self.width, self.base, self.limit, self.range_fix = width, base, limit, range_fix
        self.src: list[npt.NDArray[np.int32]] = []
        self.dst: list[npt.NDArray[np.int32]] = []
        self.weights: list[npt.NDArray[np.float32]] = []

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

    def build(self, num_vertices: Any, *, symmetric: bool) -> CsrGraph:
        """The graph of every kept edge, ids shifted down by ``base``."""
        src = concat(self.src, np.int32) - np.int32(self.base)
        dst = concat(self.dst, np.int32) - np.int32(self.base)
        weights = concat(self.weights, np.float32) if self.width == 3 else None
        return CsrGraph.from_edges(src, dst, num_vertices, symmetric=symmetric, weights=weights)

    def _keep(self, src: Any, dst: Any, weights: Any | None) -> None:
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
