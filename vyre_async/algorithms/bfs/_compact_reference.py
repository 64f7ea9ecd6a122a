"""NumPy references of the compaction kernels: the device semantics on the host."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._compact_layout import KHOP_TILE


def _reached(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> np.ndarray:
    """The reached vertices (level >= 0) of the tiles the kernels cover, sorted."""
    n, tiles = int(scalars["n"].item()), int(scalars["t1"].item()) - 1
    reached = np.flatnonzero(arrays["levels"][: max(n, 0)] >= 0)
    return reached[reached < max(tiles, 0) * KHOP_TILE]


def khop_count_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``khop_count``: reached vertices per tile; the last word is left alone.

    Args:
        arrays: ``levels`` (read) and ``tile_counts`` (``t1`` words, updated).
        scalars: The derived ``n`` and ``t1``.
    """
    tiles = int(scalars["t1"].item()) - 1
    if tiles <= 0:
        return
    counts = np.bincount(_reached(arrays, scalars) // KHOP_TILE, minlength=tiles)
    arrays["tile_counts"][:tiles] = counts


def khop_scan_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``khop_scan``: each tile's exclusive prefix sum in place, the total last.

    Args:
        arrays: ``tile_counts`` (``t1`` words, updated).
        scalars: The derived ``t1``.
    """
    counts = arrays["tile_counts"]
    tiles = int(scalars["t1"].item()) - 1
    if tiles < 0:
        return
    values = counts[:tiles].astype(np.int64)
    inclusive = np.cumsum(values)
    counts[:tiles] = inclusive - values
    counts[tiles] = int(inclusive[-1]) if tiles else 0


def khop_scatter_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``khop_scatter``: each reached vertex at its tile's offset plus its rank in
    the tile; positions outside ``[0, cap)`` are skipped.

    Args:
        arrays: ``levels``, ``tile_offsets`` (read) and ``out`` (``cap`` words, updated).
        scalars: The derived ``n``, ``t1`` and ``cap``.
    """
    out = arrays["out"]
    reached = _reached(arrays, scalars)
    tile = reached // KHOP_TILE
    rank = np.arange(reached.size) - np.searchsorted(reached, tile * KHOP_TILE)
    positions = arrays["tile_offsets"][tile].astype(np.int64) + rank
    keep = (positions >= 0) & (positions < out.size)
    out[positions[keep]] = reached[keep]
