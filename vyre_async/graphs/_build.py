"""Edge lists to CSR arrays: id validation, symmetrisation, dedupe and a sort on one key.

Each edge ``(u, v)`` becomes the int64 key ``u * V + v``; sorting the keys orders
edges by source then destination, a mask of changes removes duplicates, and the
row offsets come from a binary search for each row's first key. No Python loop
touches individual edges.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from ._checks import INT32_MAX, Indices, Offsets, Weights, edge_rows

#: Bulk work runs in chunks of this many edges: small temporaries are reused from the
#: allocator's cache, where whole-array temporaries would each be fresh pages.
_CHUNK = 1 << 16

Int64s = npt.NDArray[np.int64]


def check_vertex_ids(name: str, value: object) -> Any:
    """Return ``value`` as a 1-D integer array with no negative id.

    Raises:
        ValidationError: Not 1-D, not an integer dtype, or a negative id (the first
            offending position is named).
    """
    ids = np.asarray(value)
    if ids.ndim != 1:
        raise ValidationError(
            f"{name} has shape {ids.shape}; expected a 1-D array of vertex ids",
            fix=f"pass a flat array: {name}.ravel().",
        )
    if ids.size == 0:
        return ids.astype(np.int64)
    if ids.dtype.kind not in "iu":
        pos = 0
        if ids.dtype.kind == "f":
            fractional = ids != np.floor(ids)
            pos = int(np.argmax(fractional)) if fractional.any() else 0
        # An object array holds plain Python values (str, say), which have no .item().
        value = ids[pos] if ids.dtype.kind == "O" else ids[pos].item()
        fix = f"convert whole-number ids first: {name}.astype(np.int64)."
        if ids.dtype.kind in "OUS":
            fix = (
                "pass renumber=True to number arbitrary ids (strings, say) from 0; "
                "the mapping back is returned."
            )
        raise ValidationError(
            f"{name} has dtype {ids.dtype} ({name}[{pos}] = {value!r}); vertex ids must be "
            "integers",
            fix=fix,
        )
    if ids.min() < 0:
        pos = int(np.argmax(ids < 0))
        raise ValidationError(
            f"{name}[{pos}] = {int(ids[pos])} is a negative vertex id",
            fix="vertex ids count from 0; remove or renumber the negative ids.",
        )
    return ids


def resolve_num_vertices(
    src: npt.NDArray[np.integer[Any]], dst: npt.NDArray[np.integer[Any]], given: object
) -> int:
    """Return the vertex count: ``given``, or the largest id plus one.

    Raises:
        ValidationError: The count is out of range or an id does not fit under it.
    """
    if given is None:
        largest = max(int(src.max(initial=-1)), int(dst.max(initial=-1)))
        if largest >= INT32_MAX:
            name, ids = ("src", src) if int(src.max(initial=-1)) == largest else ("dst", dst)
            pos = int(np.argmax(ids))
            raise ValidationError(
                f"{name}[{pos}] = {largest} exceeds the largest vertex id {INT32_MAX - 1}",
                fix="renumber the vertices densely from 0 (np.unique(..., return_inverse=True)).",
            )
        return largest + 1
    try:
        count = operator.index(given)  # type: ignore[arg-type]
    except TypeError:
        raise ValidationError(
            f"num_vertices is {given!r} ({type(given).__name__}); expected an int",
            fix="pass num_vertices as an int, or None to use the largest id plus one.",
        ) from None
    if not 0 <= count <= INT32_MAX:
        raise ValidationError(
            f"num_vertices is {count}; expected 0 <= num_vertices <= {INT32_MAX}",
            fix="pass a vertex count that fits int32, or None to infer it.",
        )
    for name, ids in (("src", src), ("dst", dst)):
        if ids.size and int(ids.max()) >= count:
            pos = int(np.argmax(ids >= count))
            raise ValidationError(
                f"{name}[{pos}] = {int(ids[pos])} is not below num_vertices = {count}",
                fix=f"raise num_vertices above {int(ids.max())} or drop the out-of-range edges.",
            )
    return count


def check_edge_weights(
    value: object, num_edges: int, *, where: Callable[[int], str] | None = None
) -> Weights:
    """Return one float32 weight per edge.

    Weights must be finite and fit float32: NaN, infinities and finite values beyond
    float32's range (about 3.4e38) are refused, not turned into NaN or infinity.
    Rounding to float32's 24-bit precision is accepted (a float64 weight, or an
    integer above 2**24, becomes the nearest float32).

    Args:
        value: The weights.
        num_edges: How many there must be.
        where: Names weight ``i`` in a message (default ``"weights[i]"``).

    Raises:
        ValidationError: Wrong shape, length or a non-numeric dtype, or a weight that
            is not finite or does not fit float32 (the first is named).
    """
    weights = np.asarray(value)
    if weights.ndim != 1 or weights.size != num_edges:
        raise ValidationError(
            f"weights has shape {weights.shape}; expected ({num_edges},), one per edge",
            fix="pass a flat array with one weight per (src, dst) pair.",
        )
    if weights.size and weights.dtype.kind not in "fiub":
        raise ValidationError(
            f"weights has dtype {weights.dtype}; expected a real number type",
            fix="convert it first: weights.astype(np.float32).",
        )
    if weights.dtype.kind != "f":  # integers never overflow float32 (2**64 < 3.4e38)
        return weights.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        cast = weights.astype(np.float32)
    bad = ~np.isfinite(cast)
    if bad.any():
        pos = int(np.argmax(bad))
        given = weights[pos].item()
        if np.isfinite(given):
            problem = f"is beyond float32's range (largest {float(np.finfo(np.float32).max):.7g})"
            fix = "rescale the weights (or clip them) into float32's range first."
        else:
            problem = "is not a finite number"
            fix = "replace NaN and infinite weights (np.nan_to_num, or drop those edges) first."
        named = where(pos) if where is not None else f"weights[{pos}]"
        raise ValidationError(f"{named} = {given!r} {problem}", fix=fix)
    return cast


def edges_to_csr(
    src: npt.NDArray[np.integer[Any]],
    dst: npt.NDArray[np.integer[Any]],
    num_vertices: int,
    *,
    symmetric: bool,
    dedupe: bool,
    weights: Weights | None,
) -> tuple[Offsets, Indices, Weights | None]:
    """Build CSR arrays from validated edges, rows sorted by destination.

    With ``symmetric``, every edge ``(u, v)`` with ``u != v`` also appears as
    ``(v, u)`` with the same weight. With ``dedupe``, repeated pairs collapse to the
    first occurrence (and its weight); for a symmetric graph, pairs are compared
    undirected, so the two directions always carry one weight.

    Returns:
        ``(offsets, indices, weights)``; offsets are int32 when the edge count fits.
    """
    v = np.int64(num_vertices)
    if symmetric and not dedupe:
        not_loop = src != dst
        src, dst = np.concatenate((src, dst[not_loop])), np.concatenate((dst, src[not_loop]))
        if weights is not None:
            weights = np.concatenate((weights, weights[not_loop]))
    undirected = symmetric and dedupe
    # An undirected build later appends the reversed keys: room for them now saves a copy.
    buffer = np.empty(2 * src.size if undirected else src.size, dtype=np.int64)
    keys = buffer[: src.size]
    for start in range(0, src.size, _CHUNK):
        s, d = src[start : start + _CHUNK], dst[start : start + _CHUNK]
        out = keys[start : start + _CHUNK]
        out[...] = np.minimum(s, d) if undirected else s
        out *= v
        out += (np.maximum(s, d) if undirected else d).astype(np.int64)
    keys, weights = _unique(keys, weights) if dedupe else _sort(keys, weights)
    if undirected:
        keys, weights = _add_reverse(buffer, keys, weights, v)
    offsets, indices = _keys_to_csr(keys, v)
    return offsets, indices, weights


def _sort(keys: Int64s, weights: Weights | None) -> tuple[Int64s, Weights | None]:
    if weights is None:
        keys.sort()  # in place; NumPy's vectorised sort is several times faster than argsort
        return keys, None
    order = np.argsort(keys, kind="stable")
    return keys[order], weights[order]


def _unique(keys: Int64s, weights: Weights | None) -> tuple[Int64s, Weights | None]:
    # Sort-and-mask, not np.unique: NumPy 2.3+ may hash, which is far slower at 1e7+ keys.
    keys, weights = _sort(keys, weights)
    if weights is not None:
        first = np.ones(keys.size, dtype=bool)
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        # The stable sort kept equal keys in input order: each keeps its first weight.
        return keys[first], weights[first]
    filled = 0
    previous = None
    for start in range(0, keys.size, _CHUNK):
        part = keys[start : start + _CHUNK]
        first = np.ones(part.size, dtype=bool)
        np.not_equal(part[1:], part[:-1], out=first[1:])
        first[0] = previous is None or part[0] != previous
        previous = part[-1].copy()
        kept = part[first]
        keys[filled : filled + kept.size] = kept  # compacts in place: filled <= start
        filled += kept.size
    return keys[:filled], None


def _add_reverse(
    both: Int64s, keys: Int64s, weights: Weights | None, v: np.int64
) -> tuple[Int64s, Weights | None]:
    """Append ``(b, a)`` for each undirected key ``(a, b)`` with ``a < b``, then sort.

    ``both`` holds at least ``2 * keys.size`` keys and may already start with ``keys``.
    """
    if both.ctypes.data != keys.ctypes.data:
        both[: keys.size] = keys
    filled = keys.size
    not_loop = np.empty(keys.size, dtype=bool)
    for start in range(0, keys.size, _CHUNK):
        part = keys[start : start + _CHUNK]
        row = part // v  # division by a scalar is vectorised (libdivide); % is not
        col = part - row * v
        mask = not_loop[start : start + row.size]
        np.not_equal(row, col, out=mask)
        reverse = col[mask]
        reverse *= v
        reverse += row[mask]
        both[filled : filled + reverse.size] = reverse
        filled += reverse.size
    if weights is not None:
        weights = np.concatenate((weights, weights[not_loop]))
    return _sort(both[:filled], weights)


def _keys_to_csr(keys: Int64s, num_vertices: np.int64) -> tuple[Offsets, Indices]:
    num_edges = keys.size
    row_starts = np.arange(int(num_vertices) + 1, dtype=np.int64) * num_vertices
    positions = np.searchsorted(keys, row_starts, side="left")
    offsets: Offsets = (
        positions.astype(np.int32)
        if num_edges <= INT32_MAX
        else positions.astype(np.int64, copy=False)
    )
    indices = np.empty(num_edges, dtype=np.int32)
    for start in range(0, num_edges, _CHUNK):
        part = keys[start : start + _CHUNK]
        indices[start : start + _CHUNK] = part - part // num_vertices * num_vertices
    return offsets, indices


def transpose_arrays(
    offsets: Offsets, indices: Indices, weights: Weights | None
) -> tuple[Offsets, Indices, Weights | None]:
    """CSR arrays of the reversed edges, offsets keeping their dtype.

    Row ``c`` of the result lists the sources of ``c``'s in-edges in CSR order, which
    is ascending source order; so a plain sort of ``(c, source)`` keys gives the
    same result as a stable sort by ``c`` alone, and is much faster. Weighted edges
    need the permutation, so they take NumPy's stable argsort.
    """
    num_vertices = np.int64(offsets.size - 1)
    rows = edge_rows(offsets)
    if weights is None:
        for start in range(0, rows.size, _CHUNK):
            part = rows[start : start + _CHUNK]
            part += indices[start : start + _CHUNK].astype(np.int64) * num_vertices
        rows.sort()
        new_offsets, new_indices = _keys_to_csr(rows, num_vertices)
        if offsets.dtype == np.int64:
            new_offsets = new_offsets.astype(np.int64, copy=False)
        return new_offsets, new_indices, None
    order = np.argsort(indices, kind="stable")
    counts = np.bincount(indices, minlength=int(num_vertices))
    flipped_offsets = np.zeros(int(num_vertices) + 1, dtype=offsets.dtype)
    np.cumsum(counts, out=flipped_offsets[1:])
    return flipped_offsets, rows[order].astype(np.int32), weights[order]
