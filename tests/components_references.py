"""Graph shapes for connected components, and SciPy's labels in the kind's labelling rule:
shared by the CPU and GPU component tests."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.sparse import csgraph, csr_array

import vyre_async as va


def scipy_labels(graph: va.graphs.CsrGraph) -> np.ndarray:
    """SciPy's weakly connected components, each labelled with its smallest vertex id."""
    n = graph.num_vertices
    if n == 0:
        return np.zeros(0, np.int64)
    matrix = csr_array(
        (np.ones(graph.num_edges), graph.indices, graph.offsets.astype(np.int64)), shape=(n, n)
    )
    count, labels = csgraph.connected_components(matrix, directed=True, connection="weak")
    smallest = np.full(count, n, np.int64)
    np.minimum.at(smallest, labels, np.arange(n))
    return smallest[labels]


def _edges(
    n: int, src: np.ndarray, dst: np.ndarray, *, symmetric: bool = False, dedupe: bool = True
) -> va.graphs.CsrGraph:
    return va.graphs.CsrGraph.from_edges(
        np.asarray(src, np.int64),
        np.asarray(dst, np.int64),
        num_vertices=n,
        symmetric=symmetric,
        dedupe=dedupe,
    )


def rmat_graph(rng: np.random.Generator, *, symmetric: bool, scale: int = 0) -> va.graphs.CsrGraph:
    """R-MAT (a giant component and many isolated vertices), of ``scale`` (random if 0)."""
    return va.graphs.rmat(
        scale or int(rng.integers(6, 10)),
        int(rng.integers(2, 9)),
        seed=int(rng.integers(0, 2**31)),
        symmetric=symmetric,
    )


def many_parts(rng: np.random.Generator, *, symmetric: bool = False) -> va.graphs.CsrGraph:
    """Many small parts: vertices in random groups, random directed edges inside each."""
    n = int(rng.integers(300, 700))
    group = rng.integers(0, n // 6, n)
    members = np.argsort(group, kind="stable")
    starts = np.searchsorted(group[members], np.arange(n // 6 + 1))
    src = rng.integers(0, n, n)
    g = group[src]
    size = starts[g + 1] - starts[g]
    dst = members[starts[g] + (rng.random(n) * size).astype(np.int64)]
    return _edges(n, src, dst, symmetric=symmetric)


def isolated_vertices(rng: np.random.Generator) -> va.graphs.CsrGraph:
    """Few random edges among many vertices: most vertices are alone."""
    n = int(rng.integers(300, 600))
    m = n // 4
    return _edges(n, rng.integers(0, n, m), rng.integers(0, n, m))


def self_loops(rng: np.random.Generator) -> va.graphs.CsrGraph:
    """Self loops on many vertices, some repeated, beside a few random edges."""
    n = int(rng.integers(100, 300))
    loops = rng.integers(0, n, n)
    src = np.concatenate([loops, rng.integers(0, n, n // 3)])
    dst = np.concatenate([loops, rng.integers(0, n, n // 3)])
    return _edges(n, src, dst, dedupe=False)


def chain(rng: np.random.Generator, n: int) -> va.graphs.CsrGraph:
    """One path through every vertex in a random order, each edge pointing either way:
    one weak component that no vertex reaches all of along its edges."""
    order = rng.permutation(n)
    flip = rng.random(n - 1) < 0.5
    src = np.where(flip, order[1:], order[:-1])
    dst = np.where(flip, order[:-1], order[1:])
    return _edges(n, src, dst)


def no_edges(rng: np.random.Generator) -> va.graphs.CsrGraph:
    """Vertices and no edges: each vertex its own component."""
    n = int(rng.integers(1, 50))
    return _edges(n, np.zeros(0, np.int64), np.zeros(0, np.int64))


def empty(rng: np.random.Generator) -> va.graphs.CsrGraph:
    """No vertices at all."""
    return _edges(0, np.zeros(0, np.int64), np.zeros(0, np.int64))


#: Graph shapes by name, each drawn from a generator.
SHAPES: dict[str, Callable[[np.random.Generator], va.graphs.CsrGraph]] = {
    "rmat_symmetric": lambda rng: rmat_graph(rng, symmetric=True),
    "rmat_directed": lambda rng: rmat_graph(rng, symmetric=False),
    "many_parts": many_parts,
    "many_parts_symmetric": lambda rng: many_parts(rng, symmetric=True),
    "isolated_vertices": isolated_vertices,
    "self_loops": self_loops,
    "chain": lambda rng: chain(rng, int(rng.integers(500, 3000))),
    "no_edges": no_edges,
    "empty": empty,
}
