"""Weighted graph shapes and SciPy's Dijkstra, shared by the CPU and GPU shortest-path tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csgraph, csr_array

from vyre_async.graphs import rmat


@dataclass(frozen=True)
class WeightedGraph:
    """A CSR graph with float32 weights, as the shortest-path kernels read it."""

    offsets: np.ndarray
    indices: np.ndarray
    weights: np.ndarray

    @property
    def num_vertices(self) -> int:
        """Vertices."""
        return self.offsets.size - 1

    @property
    def num_edges(self) -> int:
        """Edges (parallel edges and self loops included)."""
        return self.indices.size


def weighted_csr(
    n: int, src: np.ndarray, dst: np.ndarray, weights: np.ndarray, *, symmetric: bool
) -> WeightedGraph:
    """Rows sorted by source; with ``symmetric`` every edge is added reversed, same weight."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    weights = np.asarray(weights, np.float32)
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        weights = np.concatenate([weights, weights])
    order = np.argsort(src, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=offsets[1:])
    return WeightedGraph(offsets, dst[order].astype(np.int32), weights[order])


def unit_weights(rng: np.random.Generator, count: int) -> np.ndarray:
    """Uniform float32 weights in (0, 1]."""
    return (np.float32(1) - rng.random(count, dtype=np.float32)).astype(np.float32)


def scipy_distances(graph: WeightedGraph, sources: list[int]) -> np.ndarray:
    """float64 Dijkstra from each source (rows), +inf where unreachable.

    SciPy keeps explicit zeros as zero-weight edges and takes the lightest of parallel
    edges, as the kernels do.
    """
    n = graph.num_vertices
    matrix = csr_array(
        (graph.weights.astype(np.float64), graph.indices, graph.offsets), shape=(n, n)
    )
    return np.atleast_2d(csgraph.dijkstra(matrix, directed=True, indices=sources))


def assert_distances_match(found: np.ndarray, expected: np.ndarray) -> None:
    """+inf exactly where SciPy has +inf; elsewhere a relative error of at most 1e-5."""
    assert found.dtype == np.float32
    unreached = np.isinf(expected)
    np.testing.assert_array_equal(np.isinf(found), unreached)
    reached = ~unreached
    error = np.abs(found[reached].astype(np.float64) - expected[reached])
    assert np.all(error <= 1e-5 * expected[reached] + 1e-30), float(
        (error / np.maximum(expected[reached], 1e-30)).max()
    )


def _rmat(rng: np.random.Generator, symmetric: bool) -> WeightedGraph:
    graph = rmat(10, 8, seed=int(rng.integers(0, 2**31)), symmetric=symmetric)
    n = graph.num_vertices
    src = np.repeat(np.arange(n), np.diff(graph.offsets))
    return weighted_csr(n, src, graph.indices, unit_weights(rng, graph.num_edges), symmetric=False)


def _grid(rng: np.random.Generator, symmetric: bool) -> WeightedGraph:
    """A 6 x 160 lattice: a long diameter, hundreds of steps."""
    rows, cols = 6, 160
    ids = np.arange(rows * cols).reshape(rows, cols)
    right = np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()])
    down = np.stack([ids[:-1, :].ravel(), ids[1:, :].ravel()])
    edges = np.concatenate([right, down], axis=1)
    weights = unit_weights(rng, edges.shape[1])
    return weighted_csr(rows * cols, edges[0], edges[1], weights, symmetric=symmetric)


def _components(rng: np.random.Generator, symmetric: bool) -> WeightedGraph:
    """Two random parts on shuffled ids, and isolated vertices."""
    n = 400
    perm = rng.permutation(n)
    left = perm[rng.integers(0, 150, (2, 600))]
    right = perm[rng.integers(150, 350, (2, 900))]
    src, dst = np.concatenate([left[0], right[0]]), np.concatenate([left[1], right[1]])
    return weighted_csr(n, src, dst, unit_weights(rng, src.size), symmetric=symmetric)


def _zero_weights(rng: np.random.Generator, symmetric: bool) -> WeightedGraph:
    """A third of the edges weigh exactly 0."""
    n, m = 500, 2500
    weights = unit_weights(rng, m)
    weights[rng.random(m) < 1 / 3] = 0
    return weighted_csr(
        n, rng.integers(0, n, m), rng.integers(0, n, m), weights, symmetric=symmetric
    )


def _parallel(rng: np.random.Generator, symmetric: bool) -> WeightedGraph:
    """Every edge three times over, with different weights."""
    n, m = 300, 700
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src, dst = np.tile(src, 3), np.tile(dst, 3)
    return weighted_csr(n, src, dst, unit_weights(rng, src.size), symmetric=symmetric)


def _self_loops(rng: np.random.Generator, symmetric: bool) -> WeightedGraph:
    """Random edges plus a self loop on a third of the vertices, some weighing 0."""
    n, m = 300, 1200
    loops = rng.choice(n, n // 3, replace=False)
    src = np.concatenate([rng.integers(0, n, m), loops])
    dst = np.concatenate([rng.integers(0, n, m), loops])
    weights = unit_weights(rng, src.size)
    weights[m::2] = 0
    return weighted_csr(n, src, dst, weights, symmetric=symmetric)


def _hub(rng: np.random.Generator, symmetric: bool) -> WeightedGraph:
    """A vertex with thousands of out-edges (its list is cut into chunks)."""
    n = 3000
    hub = int(rng.integers(0, n))
    others = rng.integers(0, n, 2 * n)
    src = np.concatenate([np.full(2 * n, hub), rng.integers(0, n, n)])
    dst = np.concatenate([others, rng.integers(0, n, n)])
    return weighted_csr(n, src, dst, unit_weights(rng, src.size), symmetric=symmetric)


#: Shape name -> builder(rng, symmetric).
WEIGHTED_SHAPES: dict[str, Callable[[np.random.Generator, bool], WeightedGraph]] = {
    "rmat": _rmat,
    "grid": _grid,
    "components": _components,
    "zero_weights": _zero_weights,
    "parallel_edges": _parallel,
    "self_loops": _self_loops,
    "hub": _hub,
}


def grid_graph(rng: np.random.Generator, side: int) -> WeightedGraph:
    """A square 4-neighbour lattice with weights in (0, 1], symmetric."""
    ids = np.arange(side * side).reshape(side, side)
    right = np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()])
    down = np.stack([ids[:-1, :].ravel(), ids[1:, :].ravel()])
    edges = np.concatenate([right, down], axis=1)
    return weighted_csr(
        side * side, edges[0], edges[1], unit_weights(rng, edges.shape[1]), symmetric=True
    )


def rmat_graph(rng: np.random.Generator, scale: int, *, symmetric: bool = True) -> WeightedGraph:
    """An R-MAT graph (edge factor 16) with weights in (0, 1]."""
    graph = rmat(scale, 16, seed=int(rng.integers(0, 2**31)), symmetric=symmetric)
    n = graph.num_vertices
    src = np.repeat(np.arange(n), np.diff(graph.offsets))
    return weighted_csr(n, src, graph.indices, unit_weights(rng, graph.num_edges), symmetric=False)
