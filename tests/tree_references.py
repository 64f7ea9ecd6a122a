"""Independent checks of BFS parents and paths: SciPy's BFS order and edge lookups."""

from __future__ import annotations

import numpy as np
from scipy.sparse import csgraph, csr_array

from vyre_async.graphs import CsrGraph


def adjacency(graph: CsrGraph) -> csr_array:
    """The graph as a SciPy matrix: entry (u, v) is nonzero where u -> v is an edge."""
    n = graph.num_vertices
    return csr_array((np.ones(graph.num_edges), graph.indices, graph.offsets), shape=(n, n))


def has_edges(graph: CsrGraph, tails: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """Whether each ``tails[i] -> heads[i]`` is an edge of the graph."""
    if not tails.size:
        return np.zeros(0, bool)
    return np.asarray(adjacency(graph)[tails, heads]).ravel() != 0


def assert_valid_parents(
    graph: CsrGraph, source: int, levels: np.ndarray, parents: np.ndarray
) -> None:
    """Each parent is an in-neighbour one level closer; -1 exactly at the source and
    where SciPy's BFS from ``source`` does not reach; the reached set is SciPy's."""
    assert parents.dtype == np.int32
    order, predecessors = csgraph.breadth_first_order(
        adjacency(graph), source, directed=True, return_predecessors=True
    )
    reached = np.zeros(graph.num_vertices, bool)
    reached[order] = True
    np.testing.assert_array_equal(levels >= 0, reached)
    # SciPy's predecessors are -9999 at the source and where unreached, as ours are -1.
    np.testing.assert_array_equal(parents < 0, predecessors < 0)
    children = np.flatnonzero(parents >= 0)
    np.testing.assert_array_equal(levels[parents[children]], levels[children] - 1)
    assert has_edges(graph, parents[children], children).all()


def assert_shortest_path(
    graph: CsrGraph, source: int, target: int, levels: np.ndarray, path: np.ndarray
) -> None:
    """``path`` runs from ``source`` to ``target`` over edges with ``levels[target]``
    edges; it is empty where ``target`` is unreachable."""
    assert path.dtype == np.int32
    if levels[target] < 0:
        assert path.size == 0
        return
    assert path.size == levels[target] + 1
    assert path[0] == source
    assert path[-1] == target
    assert has_edges(graph, path[:-1], path[1:]).all()
