"""Personalized PageRank in float64 for the CPU and GPU tests, and how results are judged.

The reference is the textbook power iteration (SciPy sparse, float64, to an L1 change
of 1e-13), with the rank of vertices without out-edges going back to the
personalization, as NetworkX does with ``dangling=None``: independent of the kernels,
their layout and their stopping rule.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from vyre_async.graphs import CsrGraph

#: The largest relative error allowed on a vertex whose rank is at least 1 / V.
RTOL = 1e-4
#: Run to the float32 fixed point: a stop at an L1 change of 1e-7 can leave ~6e-7 of
#: error, which may sit on one vertex of rank 1 / V (2.4e-4 at V = 4096); 250 iterations
#: shrink the start's error by 0.85**250.
TIGHT = {"tol": 1e-9, "max_iter": 250}


def teleports(num_vertices: int, seeds: np.ndarray | list[int]) -> np.ndarray:
    """``(V, n)`` float64 personalizations: column ``i`` is 1 at ``seeds[i]``."""
    seeds = np.asarray(seeds, np.int64)
    matrix = np.zeros((num_vertices, seeds.size))
    matrix[seeds, np.arange(seeds.size)] = 1.0
    return matrix


def ppr_float64(graph: CsrGraph, personal: np.ndarray, damping: float = 0.85) -> np.ndarray:
    """Personalized PageRank of each column of ``personal`` (``(V, n)``, each summing to
    1): ``(n, V)`` float64 ranks."""
    n = graph.num_vertices
    src = np.repeat(np.arange(n), np.diff(graph.offsets))
    dst = graph.indices.astype(np.int64)
    degree = np.bincount(src, minlength=n).astype(np.float64)
    walk = sp.csr_array((1.0 / degree[src], (dst, src)), shape=(n, n))  # repeats summed
    dangling = degree == 0
    x = personal.astype(np.float64).copy()
    for _ in range(100_000):
        restart = (1.0 - damping) + damping * x[dangling].sum(axis=0)
        new = damping * (walk @ x) + restart * personal
        if np.abs(new - x).sum(axis=0).max() < 1e-13:
            return np.asarray(new.T)
        x = new
    return np.asarray(x.T)


def assert_ranks_match(found: np.ndarray, want: np.ndarray) -> None:
    """Each row sums to 1 (to float32 rounding) and is within :data:`RTOL` of the
    reference on every vertex ranked at least ``1 / V``."""
    found = np.atleast_2d(found)
    want = np.atleast_2d(want)
    assert found.shape == want.shape
    assert found.dtype == np.float32
    n = want.shape[1]
    np.testing.assert_allclose(found.sum(axis=1, dtype=np.float64), 1.0, atol=1e-5)
    big = want >= 1.0 / n
    error = np.abs(found - want)[big] / want[big]
    assert error.max(initial=0.0) <= RTOL, f"max relative error {error.max():.3g}"


def assert_top_k_match(vertices: np.ndarray, ranks: np.ndarray, want: np.ndarray) -> None:
    """Rows of a top-k result against the reference ranks ``(n, V)``: ranks non-increasing
    with ties in vertex order, every vertex clearly inside the reference's top k found and
    none clearly outside it, and the ranks within :data:`RTOL` of the reference."""
    vertices, ranks, want = np.atleast_2d(vertices), np.atleast_2d(ranks), np.atleast_2d(want)
    assert vertices.dtype == np.int32
    assert ranks.dtype == np.float32
    n, k = want.shape[1], vertices.shape[1]
    for row, (got, values, reference) in enumerate(zip(vertices, ranks, want, strict=True)):
        assert len(set(got.tolist())) == k, f"row {row}: repeated vertices {got}"
        assert np.all(np.diff(values) <= 0), f"row {row}: ranks not non-increasing"
        tied = np.diff(values) == 0
        assert np.all(np.diff(got)[tied] > 0), f"row {row}: ties not in vertex order"
        ordered = np.sort(reference)[::-1]
        kth, after = ordered[k - 1], (ordered[k] if k < n else -np.inf)
        margin = RTOL * ordered[0] + 1e-9
        inside = np.flatnonzero(reference > after + margin)
        assert set(inside.tolist()) <= set(got.tolist()), f"row {row}: missed {inside}"
        assert np.all(reference[got] >= kth - margin), f"row {row}: found a vertex outside"
        np.testing.assert_allclose(values, reference[got], rtol=RTOL, atol=margin)
