"""Independent references and graph shapes shared by the CPU and GPU session tests."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.sparse import csgraph, csr_array

from vyre_async.graphs import CsrGraph, rmat


def scipy_levels(graph: CsrGraph, source: int) -> np.ndarray:
    """Unweighted shortest-path lengths from SciPy, -1 where unreachable."""
    matrix = csr_array(
        (np.ones(graph.num_edges), graph.indices, graph.offsets),
        shape=(graph.num_vertices, graph.num_vertices),
    )
    dist = csgraph.shortest_path(matrix, directed=True, unweighted=True, indices=source)
    return np.where(np.isinf(dist), -1, dist).astype(np.int32)


def pagerank_float64(graph: CsrGraph, damping: float, tol: float = 1e-14) -> np.ndarray:
    """Power iteration in float64 with NetworkX's handling of dangling vertices."""
    n = graph.num_vertices
    src = np.repeat(np.arange(n), np.diff(graph.offsets))
    dst = graph.indices.astype(np.int64)
    out_degree = np.bincount(src, minlength=n).astype(np.float64)
    dangling = out_degree == 0
    x = np.full(n, 1.0 / n)
    for _ in range(10_000):
        share = np.divide(x, out_degree, out=np.zeros(n), where=~dangling)
        pulled = np.bincount(dst, weights=share[src], minlength=n)
        new = damping * (pulled + x[dangling].sum() / n) + (1.0 - damping) / n
        if np.abs(new - x).sum() < tol:
            return new
        x = new
    return x


def _random(rng: np.random.Generator, n: int, m: int, symmetric: bool) -> CsrGraph:
    return CsrGraph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n, symmetric=symmetric)


def _path(rng: np.random.Generator) -> CsrGraph:
    n = 300
    return CsrGraph.from_edges(np.arange(n - 1), np.arange(1, n), n, symmetric=True)


def _disconnected(rng: np.random.Generator) -> CsrGraph:
    left = rng.integers(0, 50, (2, 200))
    right = rng.integers(50, 120, (2, 300))
    src = np.concatenate([left[0], right[0]])
    dst = np.concatenate([left[1], right[1]])
    return CsrGraph.from_edges(src, dst, 130, symmetric=True)


def _self_loops(rng: np.random.Generator) -> CsrGraph:
    n = 80
    loops = np.arange(n)
    src = np.concatenate([loops, rng.integers(0, n, 160)])
    dst = np.concatenate([loops, rng.integers(0, n, 160)])
    return CsrGraph.from_edges(src, dst, n)


def _star(rng: np.random.Generator) -> CsrGraph:
    n = 2000
    leaves = np.arange(1, n)
    extra = rng.integers(0, n, (2, 500))
    src = np.concatenate([np.zeros(n - 1, np.int64), extra[0]])
    dst = np.concatenate([leaves, extra[1]])
    return CsrGraph.from_edges(src, dst, n, symmetric=True)


#: name -> builder of a fresh random graph; every shape the issue names.
GRAPH_SHAPES: dict[str, Callable[[np.random.Generator], CsrGraph]] = {
    "single_vertex": lambda rng: CsrGraph.from_edges(
        np.zeros(0, np.int64), np.zeros(0, np.int64), 1
    ),
    "no_edges": lambda rng: CsrGraph.from_edges(np.zeros(0, np.int64), np.zeros(0, np.int64), 9),
    "self_loops_directed": _self_loops,
    "disconnected": _disconnected,
    "random_directed": lambda rng: _random(rng, 500, 1500, symmetric=False),
    "random_symmetric": lambda rng: _random(rng, 700, 2100, symmetric=True),
    "star_skewed": _star,
    "rmat_skewed": lambda rng: rmat(10, 8, seed=int(rng.integers(1 << 30))),
    "long_path": _path,
}
