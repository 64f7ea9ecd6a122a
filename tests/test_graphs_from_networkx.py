"""CsrGraph.from_networkx against NetworkX's own adjacency matrix, on random labelled graphs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from vyre_async.errors import ValidationError
from vyre_async.graphs import CsrGraph

nx = pytest.importorskip("networkx", reason="networkx is not installed")


def random_labels(rng: np.random.Generator, n: int, kind: str) -> list[Any]:
    """``n`` distinct node labels of one kind, in random order."""
    numbers = rng.permutation(10 * n)[:n]
    if kind == "int":
        return [int(x) * 7 - 3 * n for x in numbers]  # negative and unordered
    if kind == "str":
        return [f"node-{x}" for x in numbers]
    return [(f"t{x % 5}", int(x)) for x in numbers]  # tuples


def random_nx_graph(rng: np.random.Generator, cls: Any, labels: str, *, weighted: bool) -> Any:
    """A random graph of ``cls`` with self loops, parallel edges where allowed, and some
    edges lacking the weight attribute."""
    n = int(rng.integers(1, 40))
    nodes = random_labels(rng, n, labels)
    graph = cls()
    graph.add_nodes_from(nodes)  # isolated nodes too
    for _ in range(int(rng.integers(0, 4 * n))):
        u, v = (nodes[int(i)] for i in rng.integers(0, n, 2))
        if weighted and rng.random() < 0.8:
            graph.add_edge(u, v, weight=float(rng.integers(1, 64)) / 4.0)
        else:
            graph.add_edge(u, v)
    return graph


def assert_matches_networkx(graph: CsrGraph, g: Any, weight: str | None) -> None:
    """Edges and weights equal nx.to_scipy_sparse_array over G's node order."""
    ref = nx.to_scipy_sparse_array(g, nodelist=list(g), weight=weight, dtype=np.float64)
    ref.sort_indices()
    np.testing.assert_array_equal(graph.offsets, ref.indptr)
    np.testing.assert_array_equal(graph.indices, ref.indices)
    if weight is None:
        assert graph.weights is None
    else:
        assert graph.weights is not None
        np.testing.assert_array_equal(graph.weights, ref.data.astype(np.float32))


@pytest.mark.parametrize("labels", ["int", "str", "tuple"])
@pytest.mark.parametrize("cls_name", ["Graph", "DiGraph", "MultiGraph", "MultiDiGraph"])
def test_every_graph_class_matches_networkx_matrix(
    rng: np.random.Generator, cls_name: str, labels: str
) -> None:
    """Directed, undirected and multigraphs give NetworkX's matrix; ids are G's nodes."""
    g = random_nx_graph(rng, getattr(nx, cls_name), labels, weighted=True)
    graph, ids = CsrGraph.from_networkx(g)
    assert_matches_networkx(graph, g, "weight")
    assert graph.symmetric == (not g.is_directed())
    assert ids.ids.tolist() == list(g)
    assert ids.to_vertices(list(g)).tolist() == list(range(len(g)))


@pytest.mark.parametrize("cls_name", ["DiGraph", "MultiGraph"])
def test_weight_none_gives_the_unweighted_pattern(rng: np.random.Generator, cls_name: str) -> None:
    """weight=None keeps the edges only (parallel edges become one)."""
    g = random_nx_graph(rng, getattr(nx, cls_name), "str", weighted=True)
    graph, _ = CsrGraph.from_networkx(g, weight=None)
    ref = nx.to_scipy_sparse_array(g, nodelist=list(g), weight=None)
    ref.sort_indices()
    np.testing.assert_array_equal(graph.offsets, ref.indptr)
    np.testing.assert_array_equal(graph.indices, ref.indices)
    assert graph.weights is None


def test_another_attribute_can_be_the_weight() -> None:
    """weight='cost' reads that attribute; edges without it weigh 1.0."""
    g = nx.DiGraph()
    g.add_edge("a", "b", cost=2.5, weight=9.0)
    g.add_edge("b", "c")
    graph, ids = CsrGraph.from_networkx(g, weight="cost")
    np.testing.assert_array_equal(graph.weights, [2.5, 1.0])
    assert ids.to_ids(graph.indices).tolist() == ["b", "c"]


@pytest.mark.parametrize(
    ("value", "needles"),
    [
        ("heavy", ["edge 'a' -> 'b'", "weight='heavy'", "not a number"]),
        (float("nan"), ["edge 'a' -> 'b' = nan", "not a finite number"]),
        (1e39, ["edge 'a' -> 'b' = 1e+39", "beyond float32's range"]),
    ],
)
def test_bad_weights_name_the_edge(value: object, needles: list[str]) -> None:
    """A weight that is not a finite float32 number raises a ValidationError naming its edge."""
    g = nx.DiGraph()
    g.add_edge("x", "y", weight=1.0)
    g.add_edge("a", "b", weight=value)
    with pytest.raises(ValidationError) as info:
        CsrGraph.from_networkx(g)
    message = str(info.value)
    assert "Fix:" in message
    for needle in needles:
        assert needle in message


def test_empty_graph_and_non_graph_input() -> None:
    """A graph without nodes gives V = 0; a non-graph argument is a TypeError."""
    graph, ids = CsrGraph.from_networkx(nx.Graph())
    assert (graph.num_vertices, graph.num_edges, len(ids)) == (0, 0, 0)
    with pytest.raises(TypeError, match="networkx graph"):
        CsrGraph.from_networkx([(0, 1)])
