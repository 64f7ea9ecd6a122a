"""Validation of CSR arrays: dtype, shape, offsets, column bounds and symmetry.

Every failure is a :class:`ValidationError` that names the array, the first bad
position and the numbers involved, so a caller can find the fault in their data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError

INT32_MAX = 2**31 - 1

Offsets = npt.NDArray[np.int32] | npt.NDArray[np.int64]
Indices = npt.NDArray[np.int32]
Weights = npt.NDArray[np.float32]


def frozen_vector(name: str, value: object, dtypes: tuple[type[np.generic], ...]) -> Any:
    """Return ``value`` as a read-only, C-contiguous 1-D array of one of ``dtypes``.

    The result is a read-only view (a copy only when ``value`` was not contiguous),
    so the caller's own array keeps its flags.

    Raises:
        ValidationError: ``value`` is not 1-D or has another dtype.
    """
    array = np.asarray(value)
    allowed = " or ".join(np.dtype(t).name for t in dtypes)
    if array.ndim != 1:
        raise ValidationError(
            f"{name} has shape {array.shape}; expected a 1-D array of {allowed}",
            fix=f"pass a flat array: {name}.ravel().",
        )
    if array.dtype not in [np.dtype(t) for t in dtypes]:
        raise ValidationError(
            f"{name} has dtype {array.dtype}; expected {allowed}",
            fix=f"convert it first: {name}.astype(np.{np.dtype(dtypes[0]).name}).",
        )
    view = np.ascontiguousarray(array).view()
    view.flags.writeable = False
    return view


def check_offsets(offsets: Offsets, num_edges: int) -> None:
    """Check ``offsets`` describes ``num_edges`` edges over ``len(offsets) - 1`` vertices.

    Raises:
        ValidationError: Empty, too many vertices, int32 overflow, a nonzero start,
            a wrong end or a decreasing step.
    """
    if offsets.size == 0:
        raise ValidationError(
            "offsets is empty; a CSR graph needs V + 1 offsets starting at 0",
            fix="pass np.zeros(1, dtype=np.int32) for a graph with no vertices.",
        )
    num_vertices = offsets.size - 1
    if num_vertices > INT32_MAX:
        raise ValidationError(
            f"offsets describes {num_vertices} vertices; at most {INT32_MAX} are supported",
            fix="split the graph; vertex ids are int32 on the device.",
        )
    if offsets.dtype == np.int32 and num_edges > INT32_MAX:
        raise ValidationError(
            f"the graph has {num_edges} edges but int32 offsets hold at most {INT32_MAX}",
            fix="use int64 offsets: offsets.astype(np.int64).",
        )
    if offsets[0] != 0:
        raise ValidationError(
            f"offsets[0] is {int(offsets[0])}; expected 0",
            fix="offsets start at 0: subtract offsets[0] from every offset.",
        )
    drops = offsets[1:] < offsets[:-1]
    if drops.any():
        i = int(np.argmax(drops))
        raise ValidationError(
            f"offsets decrease at position {i + 1}: offsets[{i}] = {int(offsets[i])} > "
            f"offsets[{i + 1}] = {int(offsets[i + 1])}",
            fix="offsets must be non-decreasing: the cumulative sum of out-degrees.",
        )
    if offsets[-1] != num_edges:
        raise ValidationError(
            f"offsets[{num_vertices}] is {int(offsets[-1])} but indices has {num_edges} entries",
            fix="the last offset must equal len(indices), the number of edges.",
        )


def check_indices(indices: Indices, offsets: Offsets) -> None:
    """Check every column index names a vertex, reporting the first that does not.

    Raises:
        ValidationError: An index is negative or not below the vertex count.
    """
    num_vertices = offsets.size - 1
    if indices.size == 0 or (indices.min() >= 0 and indices.max() < num_vertices):
        return
    pos = int(np.argmax((indices < 0) | (indices >= num_vertices)))
    row = int(np.searchsorted(offsets, pos, side="right")) - 1
    raise ValidationError(
        f"indices[{pos}] = {int(indices[pos])} (an edge of vertex {row}) is outside "
        f"[0, {num_vertices})",
        fix=f"every column index must name a vertex: 0 <= index < {num_vertices}.",
    )


def check_weights(weights: Weights, num_edges: int, offsets: Offsets, indices: Indices) -> None:
    """Check there is one weight per edge, each a finite number.

    NaN or an infinity is never a weight (the edge-list and SciPy constructors refuse
    them too); negative weights are the graph's business, and refused by the kinds
    that need lengths (shortest paths) when they first run on the graph.

    Raises:
        ValidationError: The length differs from the edge count, or a weight is NaN
            or infinite (the first such edge is named).
    """
    if weights.size != num_edges:
        raise ValidationError(
            f"weights has {weights.size} entries but the graph has {num_edges} edges",
            fix="pass exactly one float32 weight per edge, in the order of indices.",
        )
    if not weights.size or np.isfinite(weights.sum(dtype=np.float64)):
        return  # one pass in the common case (the sum is NaN or infinite when a weight is)
    bad = ~np.isfinite(weights)
    if not bad.any():
        return  # finite weights whose float64 sum overflowed (never in float32's range)
    edge = int(np.argmax(bad))
    row = int(np.searchsorted(offsets, edge, side="right")) - 1
    raise ValidationError(
        f"edge {edge} ({row} -> {int(indices[edge])}) has weight {float(weights[edge])!r}, "
        "which is not a finite number",
        fix="replace NaN and infinite weights (np.nan_to_num, or drop those edges) first.",
    )


def edge_rows(offsets: Offsets) -> npt.NDArray[np.int64]:
    """The source vertex of every edge, in CSR order."""
    num_vertices = offsets.size - 1
    return np.repeat(np.arange(num_vertices, dtype=np.int64), np.diff(offsets))


def find_asymmetric_edge(
    offsets: Offsets, indices: Indices, weights: Weights | None
) -> tuple[int, int] | None:
    """Return one edge ``(u, v)`` without a matching reverse ``(v, u)``, or ``None``.

    Edges are compared as multisets (with equal weights when weighted), so the
    order of a vertex's neighbours does not matter.
    """
    num_vertices = np.int64(max(offsets.size - 1, 1))
    rows = edge_rows(offsets)
    cols = indices.astype(np.int64)
    forward = rows * num_vertices + cols
    backward = cols * num_vertices + rows
    if weights is None:
        forward.sort()
        backward.sort()
        mismatch = forward != backward
    else:
        order_f = np.lexsort((weights, forward))
        order_b = np.lexsort((weights, backward))
        forward, backward = forward[order_f], backward[order_b]
        w_f, w_b = weights[order_f], weights[order_b]
        mismatch = (forward != backward) | ((w_f != w_b) & ~(np.isnan(w_f) & np.isnan(w_b)))
    if not mismatch.any():
        return None
    i = int(np.argmax(mismatch))
    if forward[i] <= backward[i]:
        u, v = divmod(int(forward[i]), int(num_vertices))
        return u, v
    v, u = divmod(int(backward[i]), int(num_vertices))
    return u, v
