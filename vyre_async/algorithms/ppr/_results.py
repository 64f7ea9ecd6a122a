"""Top-k results: what a caller gets, and the one array a batch's rows travel in.

A run of many seeds returns one array whatever it computed (the batcher cuts it by
rows, a Ray reply carries it as raw bytes with its dtype and shape): full ranks are
``(n, V)`` float32; top-k results are packed into ``(n, 2, k)`` int32, the vertices in
``[:, 0]`` and the ranks' float32 bits in ``[:, 1]``. :func:`top_ranks` unpacks them
into a :class:`TopRanks`, :func:`top_pairs` into a job item's structured array.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["TOP_PAIR", "TopRanks", "pack_top", "top_pairs", "top_ranks"]

#: A job item's top-k array: ``k`` (vertex, rank) pairs, the best first.
TOP_PAIR = np.dtype([("vertex", "<i4"), ("rank", "<f4")])


class TopRanks(NamedTuple):
    """Each seed's ``k`` highest-ranked vertices, best first (ties: the smaller vertex).

    For one seed both arrays are ``(k,)``; for many, ``(n, k)``, row ``i`` for seed ``i``.

    Attributes:
        vertices: int32 vertex ids.
        ranks: Their float32 ranks, non-increasing along each row.
    """

    vertices: np.ndarray
    ranks: np.ndarray


def pack_top(vertices: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """``(n, k)`` vertices and ranks, sorted per row (rank down, then vertex up), packed
    into the ``(n, 2, k)`` int32 rows a run returns."""
    vertices = np.asarray(vertices, np.int32)
    ranks = np.asarray(ranks, np.float32)
    order = np.lexsort((vertices, -ranks), axis=-1)
    packed = np.empty((*vertices.shape[:-1], 2, vertices.shape[-1]), np.int32)
    packed[..., 0, :] = np.take_along_axis(vertices, order, axis=-1)
    packed[..., 1, :] = np.take_along_axis(ranks, order, axis=-1).view(np.int32)
    return packed


def top_ranks(rows: np.ndarray) -> TopRanks:
    """Packed rows (``(n, 2, k)``, or one row ``(2, k)``) as vertices and ranks."""
    vertices = np.ascontiguousarray(rows[..., 0, :])
    ranks = np.ascontiguousarray(rows[..., 1, :]).view(np.float32)
    return TopRanks(vertices, ranks)


def top_pairs(row: np.ndarray) -> np.ndarray:
    """One packed row (``(2, k)``) as ``k`` (vertex, rank) pairs (:data:`TOP_PAIR`)."""
    vertices, ranks = top_ranks(row)
    pairs = np.empty(vertices.shape, TOP_PAIR)
    pairs["vertex"] = vertices
    pairs["rank"] = ranks
    return pairs
