"""NumPy references of the top-k select kernels: the device semantics on the host.

A column's keys are ``rank bits << 32 | (V - 1 - v)`` (uint64, the sign bit cleared),
so the k largest keys are the k largest ranks, ties going to the smaller vertex. The
references keep the kernels' state (prefix, wanted count and digit per column, the
histograms) word for word.
"""

from __future__ import annotations

import numpy as np

from ._layout import TOP_BINS
from ._reference import Arrays, Scalars, columns

_NO_KEY = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


def _int(scalars: Scalars, name: str) -> int:
    return int(scalars[name].item())


def select_keys(ranks: np.ndarray) -> np.ndarray:
    """The select keys of an ``(n, W)`` block of ranks: uint64, ``(n, W)``."""
    n = ranks.shape[0]
    bits = np.ascontiguousarray(ranks, dtype=np.float32).view(np.uint32) & np.uint32(0x7FFF_FFFF)
    number = (n - 1 - np.arange(n, dtype=np.uint64))[:, None]
    keys: np.ndarray = (bits.astype(np.uint64) << np.uint64(32)) | number
    return keys


def _shape(scalars: Scalars) -> tuple[int, int]:
    """(n, cols) of the bound ranks, cols 0 when the binding is not a valid run."""
    w, vw = _int(scalars, "w"), _int(scalars, "vw")
    n = vw // w if w > 0 else 0
    return n, columns(n, w, vw)


def ppr_top_init_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``ppr_top_init``: the first ``count`` columns want ``k`` keys from digit 56.

    Args:
        arrays: ``prefix``, ``need``, ``shift``, ``taken`` and ``hist`` (written).
        scalars: ``count``, ``k`` and the derived ``w`` and ``wh``.
    """
    w, wh, k = _int(scalars, "w"), _int(scalars, "wh"), _int(scalars, "k")
    arrays["hist"].fill(0)
    shaped = k > 0 and wh == w * TOP_BINS
    real = np.zeros(w, bool)
    if shaped:
        real[: max(_int(scalars, "count"), 0)] = True
    arrays["prefix"][:] = np.where(real, np.uint64(0), _NO_KEY)
    arrays["need"][:] = np.where(real, k, 0)
    arrays["shift"][:] = np.where(real, 56, -1)
    arrays["taken"].fill(0)


def ppr_top_hist_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``ppr_top_hist``: count each unsettled column's keys that match its prefix,
    by their digit at the column's shift.

    Args:
        arrays: ``ranks``, ``prefix``, ``shift`` (read) and ``hist`` (added to).
        scalars: The derived ``w``, ``vw`` and ``wh``.
    """
    n, cols = _shape(scalars)
    if cols == 0 or _int(scalars, "wh") != cols * TOP_BINS:
        return
    keys = select_keys(arrays["ranks"].reshape(n, cols))
    hist = arrays["hist"].reshape(cols, TOP_BINS)
    for c in np.flatnonzero(arrays["shift"] >= 0):
        s = int(arrays["shift"][c])
        column = keys[:, c]
        if s < 56:
            top = np.uint64(s + 8)
            column = column[(column >> top) == (arrays["prefix"][c] >> top)]
        digits = ((column >> np.uint64(s)) & np.uint64(0xFF)).astype(np.int64)
        hist[c] += np.bincount(digits, minlength=TOP_BINS).astype(np.uint32)


def ppr_top_select_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``ppr_top_select``: each unsettled column appends the digit where its wanted
    count falls, and settles or moves to the next digit; histograms are zeroed.

    Args:
        arrays: ``prefix``, ``need``, ``shift`` and ``hist`` (updated).
        scalars: ``id_shift`` and the derived ``w`` and ``wh``.
    """
    w = _int(scalars, "w")
    if _int(scalars, "wh") != w * TOP_BINS:
        return
    hist = arrays["hist"].reshape(w, TOP_BINS)
    prefix, need, shift = arrays["prefix"], arrays["need"], arrays["shift"]
    id_shift = _int(scalars, "id_shift")
    for c in np.flatnonzero(shift >= 0):
        s = int(shift[c])
        wanted = int(need[c])
        down = hist[c, ::-1].astype(np.int64)  # digit 255 first
        hist[c] = 0
        reached = np.flatnonzero(np.cumsum(down) >= wanted)
        if not reached.size:
            prefix[c], shift[c] = 0, -1
            continue
        at = int(reached[0])
        above = int(down[:at].sum())
        prefix[c] |= np.uint64(TOP_BINS - 1 - at) << np.uint64(s)
        rest = wanted - above
        after = id_shift if s == 32 else s - 8
        if int(down[at]) == rest or after < 0:
            shift[c] = -1
        else:
            need[c], shift[c] = rest, after


def ppr_top_collect_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``ppr_top_collect``: each of the first ``count`` columns' keys >= its prefix
    into its ``k`` slots (in vertex order here; in any order on the device).

    Args:
        arrays: ``ranks``, ``prefix`` (read), ``taken``, ``top_vertex`` and ``top_rank``
            (written).
        scalars: ``count``, ``k`` and the derived ``w``, ``vw`` and ``wk``.
    """
    n, cols = _shape(scalars)
    k = _int(scalars, "k")
    if cols == 0 or k <= 0 or _int(scalars, "wk") != _int(scalars, "w") * k:
        return
    ranks = arrays["ranks"].reshape(n, cols)
    keys = select_keys(ranks)
    vertices = arrays["top_vertex"].reshape(cols, k)
    values = arrays["top_rank"].reshape(cols, k)
    taken = arrays["taken"]
    for c in range(max(min(_int(scalars, "count"), cols), 0)):
        chosen = np.flatnonzero(keys[:, c] >= arrays["prefix"][c])
        start = int(taken[c])
        room = chosen[: max(k - start, 0)]
        vertices[c, start : start + room.size] = room
        values[c, start : start + room.size] = ranks[room, c]
        taken[c] = start + chosen.size
