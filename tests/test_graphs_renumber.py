"""from_edges on NumPy, pandas and Arrow columns; renumbering any hashable ids and back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse

import vyre_async as va
from vyre_async.errors import ValidationError
from vyre_async.graphs import CsrGraph, VertexIds

pd = pytest.importorskip("pandas", reason="pandas is not installed")
pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
nx = pytest.importorskip("networkx", reason="networkx is not installed")

COLUMN_KINDS: dict[str, Callable[[list[Any]], Any]] = {
    "list": list,
    "numpy": lambda values: np.array(values),
    "numpy-object": lambda values: np.array(values, dtype=object),
    "pandas": lambda values: pd.Series(values),
    "arrow": lambda values: pa.array(values),
    "arrow-chunked": lambda values: pa.chunked_array(
        [pa.array(values[: len(values) // 2]), pa.array(values[len(values) // 2 :])]
    ),
}


def random_string_edges(rng: np.random.Generator) -> tuple[list[str], list[str], list[str]]:
    """Edges over a random pool of string ids (with repeats and self loops); the pool."""
    pool = sorted({f"user{int(x)}" for x in rng.integers(0, 10**6, int(rng.integers(1, 50)))})
    m = int(rng.integers(1, 200))
    src = [pool[int(i)] for i in rng.integers(0, len(pool), m)]
    dst = [pool[int(i)] for i in rng.integers(0, len(pool), m)]
    return src, dst, sorted(set(src) | set(dst))


def reference_pattern(src: list[Any], dst: list[Any], order: list[Any]) -> scipy.sparse.csr_array:
    """SciPy's CSR of the edges numbered by their place in ``order`` (duplicates merged)."""
    place = {x: i for i, x in enumerate(order)}
    rows = [place[x] for x in src]
    cols = [place[x] for x in dst]
    csr = scipy.sparse.coo_array(
        (np.ones(len(rows)), (rows, cols)), shape=(len(order), len(order))
    ).tocsr()
    csr.sum_duplicates()
    csr.sort_indices()
    return csr


@pytest.mark.parametrize("kind", sorted(COLUMN_KINDS))
def test_string_ids_are_renumbered_in_sorted_order(rng: np.random.Generator, kind: str) -> None:
    """String ids from any column kind number in ascending order; edges match SciPy."""
    src, dst, order = random_string_edges(rng)
    make = COLUMN_KINDS[kind]
    graph, ids = CsrGraph.from_edges(make(src), make(dst), renumber=True)
    assert ids.ids.tolist() == order
    ref = reference_pattern(src, dst, order)
    np.testing.assert_array_equal(graph.offsets, ref.indptr)
    np.testing.assert_array_equal(graph.indices, ref.indices)


def test_pandas_string_edge_list_no_longer_crashes_without_renumber() -> None:
    """String ids without renumber=True raise a ValidationError whose fix is renumber=True."""
    frame = pd.DataFrame({"src": ["a", "b"], "dst": ["b", "c"]})
    with pytest.raises(ValidationError, match=r"src\[0\] = 'a'.*Fix: pass renumber=True"):
        CsrGraph.from_edges(frame["src"], frame["dst"])


def test_mapping_translates_queries_and_results_both_ways(rng: np.random.Generator) -> None:
    """to_vertices and to_ids are inverse on every id and vertex, in any order."""
    src, dst, order = random_string_edges(rng)
    _, ids = CsrGraph.from_edges(pd.Series(src), pd.Series(dst), renumber=True)
    picked = [order[int(i)] for i in rng.integers(0, len(order), 30)]
    vertices = ids.to_vertices(picked)
    assert vertices.dtype == np.int32
    assert ids.to_ids(vertices).tolist() == picked
    assert [ids.to_vertex(x) for x in picked] == vertices.tolist()
    everything = rng.permutation(len(ids))
    np.testing.assert_array_equal(ids.to_vertices(ids.to_ids(everything)), everything)


@pytest.mark.parametrize(
    "ids",
    [
        [2**40, -5, 3, 2**62],  # beyond int32 and negative: fine once renumbered
        [0.5, -1.25, 3.0],
        ["b", "a", "c"],
        [b"y", b"x"],
    ],
    ids=["big-and-negative-ints", "floats", "str", "bytes"],
)
def test_ordered_ids_of_any_type_round_trip(ids: list[Any]) -> None:
    """Integers of any size, floats, strings and bytes number ascending and translate back."""
    src, dst = ids, ids[1:] + ids[:1]  # a cycle through every id
    graph, mapping = CsrGraph.from_edges(np.array(src), np.array(dst), renumber=True)
    assert mapping.ids.tolist() == sorted(ids)
    assert graph.num_vertices == len(ids) == graph.num_edges
    for u, v in zip(src, dst, strict=True):
        row = mapping.to_vertex(u)
        neighbours = graph.indices[graph.offsets[row] : graph.offsets[row + 1]]
        assert mapping.to_ids(neighbours).tolist() == [v]


def test_ids_without_an_order_number_by_first_appearance() -> None:
    """Mixed ids (a string, an int, a tuple) number by first appearance, sources first."""
    src = ["a", 7, ("t", 1)]
    dst = [7, "z", "a"]
    graph, ids = CsrGraph.from_edges(src, dst, renumber=True)
    assert ids.ids.tolist() == ["a", 7, ("t", 1), "z"]
    assert ids.to_vertex(("t", 1)) == 2
    np.testing.assert_array_equal(graph.offsets, [0, 1, 2, 3, 3])
    np.testing.assert_array_equal(graph.indices, [1, 3, 0])


def test_integer_columns_of_every_kind_give_the_numpy_graph(rng: np.random.Generator) -> None:
    """pandas (int64 and nullable Int64) and Arrow integer columns equal the NumPy result."""
    src, dst = rng.integers(0, 50, 300), rng.integers(0, 50, 300)
    expected = CsrGraph.from_edges(src, dst)
    for make in (
        pd.Series,
        lambda a: pd.Series(a, dtype="Int64"),
        pa.array,
        lambda a: pa.chunked_array([pa.array(a[:100]), pa.array(a[100:])]),
    ):
        graph = CsrGraph.from_edges(make(src), make(dst))
        np.testing.assert_array_equal(graph.offsets, expected.offsets)
        np.testing.assert_array_equal(graph.indices, expected.indices)


@pytest.mark.parametrize(
    ("column", "position"),
    [
        (lambda: pd.Series(["a", None, "c"]), 1),
        (lambda: pd.Series([1, 2, None], dtype="Int64"), 2),
        (lambda: pd.Series([1.0, np.nan, 3.0]), 1),
        (lambda: pa.array(["a", "b", None]), 2),
        (lambda: pa.chunked_array([pa.array([1, 2]), pa.array([None, 4])]), 2),
        (lambda: np.array([1.0, 2.0, np.nan]), 2),
        (lambda: ["a", None, "c"], 1),
    ],
    ids=["pandas-str", "pandas-Int64", "pandas-float", "arrow", "arrow-chunked", "numpy", "list"],
)
@pytest.mark.parametrize("renumber", [False, True])
def test_missing_ids_are_refused_naming_the_row(
    column: Callable[[], Any], position: int, renumber: bool
) -> None:
    """A null, None, NaN or pd.NA id raises a ValidationError naming its position."""
    good = [0, 1, 2] if not renumber else ["x", "y", "z"]
    with pytest.raises(ValidationError, match=rf"src\[{position}\] is missing.*Fix: drop"):
        CsrGraph.from_edges(column(), good, renumber=renumber)  # type: ignore[call-overload]


def test_weight_columns_from_pandas_and_arrow() -> None:
    """Weights may come as pandas or Arrow columns (float64, int64) and follow their edges."""
    frame = pd.DataFrame({"s": ["b", "a", "a"], "d": ["a", "c", "b"], "w": [1.5, 2.0, 3.0]})
    graph, ids = CsrGraph.from_edges(frame.s, frame.d, weights=frame.w, renumber=True)
    assert ids.ids.tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(graph.weights, [3.0, 2.0, 1.5])  # a->b, a->c, b->a
    table = pa.table({"s": [0, 1], "d": [1, 0], "w": pa.array([7, 9], pa.int64())})
    graph = CsrGraph.from_edges(table["s"], table["d"], weights=table["w"])
    np.testing.assert_array_equal(graph.weights, [7.0, 9.0])
    with pytest.raises(ValidationError, match=r"weights\[1\] is missing"):
        CsrGraph.from_edges([0, 1], [1, 0], weights=pa.array([1.0, None]))


@pytest.mark.parametrize(
    ("weights", "needle"),
    [
        ([1.0, np.nan], "weights[1] = nan is not a finite number"),
        ([np.inf, 1.0], "weights[0] = inf is not a finite number"),
        ([1.0, 3.5e38], "weights[1] = 3.5e+38 is beyond float32's range"),
    ],
)
def test_weights_float32_cannot_hold_are_refused(weights: list[float], needle: str) -> None:
    """from_edges refuses NaN, infinite and overflowing weights instead of storing them."""
    with pytest.raises(ValidationError) as info:
        CsrGraph.from_edges([0, 1], [1, 0], weights=np.array(weights))
    assert needle in str(info.value)
    assert "Fix:" in str(info.value)


def test_unknown_ids_and_vertex_numbers_are_refused() -> None:
    """Translating an id or number the graph does not have raises a ValidationError + Fix."""
    _, ids = CsrGraph.from_edges(["a", "b"], ["b", "c"], renumber=True)
    with pytest.raises(ValidationError, match=r"id 'q' \(position 1\) is not a vertex.*Fix:"):
        ids.to_vertices(["a", "q"])
    with pytest.raises(ValidationError, match=r"id 5 .*not a vertex"):
        ids.to_vertex(5)
    with pytest.raises(ValidationError, match=r"vertex number 3 \(position 0\).*\[0, 3\)"):
        ids.to_ids([3])
    _, numbers = CsrGraph.from_edges([10, 20], [20, 30], renumber=True)
    with pytest.raises(ValidationError, match=r"id 15 .*not a vertex"):
        numbers.to_vertices(np.array([10, 15]))
    with pytest.raises(ValidationError, match=r"id 'x' .*not a vertex"):
        numbers.to_vertex("x")


def test_renumber_refuses_num_vertices_and_returns_a_pair() -> None:
    """num_vertices with renumber=True is a ValueError; renumber=False returns the graph."""
    with pytest.raises(ValueError, match="num_vertices"):
        CsrGraph.from_edges(["a"], ["b"], 5, renumber=True)  # type: ignore[call-overload]
    graph, ids = CsrGraph.from_edges(["a"], ["b"], renumber=True, symmetric=True)
    assert isinstance(ids, VertexIds)
    assert graph.symmetric
    assert graph.num_edges == 2
    assert isinstance(CsrGraph.from_edges([0], [1]), CsrGraph)


async def test_bfs_from_a_named_source_equals_networkx_by_name(rng: np.random.Generator) -> None:
    """A BFS from a string id, translated back, equals NetworkX's hop counts by name."""
    src, dst, order = random_string_edges(rng)
    graph, ids = CsrGraph.from_edges(pd.Series(src), pd.Series(dst), renumber=True)
    start = order[int(rng.integers(0, len(order)))]
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        levels = await session.bfs(ids.to_vertex(start))
    reached = np.flatnonzero(levels >= 0)
    by_name = dict(zip(ids.to_ids(reached).tolist(), levels[reached].tolist(), strict=True))
    g = nx.DiGraph()
    g.add_nodes_from(order)
    g.add_edges_from(zip(src, dst, strict=True))
    assert by_name == nx.single_source_shortest_path_length(g, start)
