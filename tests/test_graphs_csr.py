"""CsrGraph: construction from edges against SciPy, transpose, validation messages."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
import scipy.sparse

import vyre_async.graphs as graphs
from vyre_async.errors import ValidationError
from vyre_async.graphs import CsrGraph, _build
from vyre_async.graphs._checks import check_offsets

I32 = np.int32
F32 = np.float32


def reference_csr(
    src: np.ndarray, dst: np.ndarray, n: int, *, symmetric: bool = False
) -> scipy.sparse.csr_array:
    """SciPy's CSR of the edges with each entry counting its duplicates (sorted indices)."""
    ones = np.ones(src.size, dtype=np.int64)
    coo = scipy.sparse.coo_array((ones, (src, dst)), shape=(n, n))
    csr = coo.tocsr()
    if symmetric:
        csr = (csr + csr.T).tocsr()
    csr.sum_duplicates()
    csr.sort_indices()
    return csr


def random_edges(rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` random edges over ``n`` vertices, with duplicates and self loops likely."""
    return rng.integers(0, n, m), rng.integers(0, n, m)


@pytest.mark.parametrize(("n", "m"), [(1, 1), (2, 0), (5, 40), (50, 200), (1000, 300)])
def test_from_edges_matches_scipy_pattern(rng: np.random.Generator, n: int, m: int) -> None:
    """Deduplicated edges give SciPy's sorted CSR structure, with any vertex count and density."""
    src, dst = random_edges(rng, n, m)
    graph = CsrGraph.from_edges(src, dst, n)
    ref = reference_csr(src, dst, n)
    np.testing.assert_array_equal(graph.offsets, ref.indptr)
    np.testing.assert_array_equal(graph.indices, ref.indices)
    assert graph.offsets.dtype == np.int32
    assert graph.indices.dtype == np.int32
    assert graph.weights is None


def test_from_edges_without_dedupe_keeps_every_copy(rng: np.random.Generator) -> None:
    """With dedupe=False each row repeats a neighbour as often as the edge was given."""
    src, dst = random_edges(rng, 20, 300)
    graph = CsrGraph.from_edges(src, dst, 20, dedupe=False)
    ref = reference_csr(src, dst, 20)
    row_sums = np.add.reduceat(ref.data, ref.indptr[:-1]) * (np.diff(ref.indptr) > 0)
    np.testing.assert_array_equal(graph.offsets, np.concatenate(([0], np.cumsum(row_sums))))
    np.testing.assert_array_equal(graph.indices, np.repeat(ref.indices, ref.data))


def test_from_edges_infers_vertex_count_from_largest_id() -> None:
    """Without num_vertices, V is the largest id plus one; no edges means no vertices."""
    assert CsrGraph.from_edges([3, 0], [1, 7]).num_vertices == 8
    empty = CsrGraph.from_edges([], [])
    assert (empty.num_vertices, empty.num_edges) == (0, 0)
    np.testing.assert_array_equal(empty.offsets, [0])


def test_from_edges_keeps_isolated_vertices(rng: np.random.Generator) -> None:
    """Vertices without edges (disconnected, trailing) get empty rows."""
    src, dst = random_edges(rng, 10, 30)
    graph = CsrGraph.from_edges(src * 3, dst * 3, 40)
    ref = reference_csr(src * 3, dst * 3, 40)
    np.testing.assert_array_equal(graph.offsets, ref.indptr)
    assert graph.out_degree()[1::3].sum() == 0


def test_from_edges_symmetric_matches_scipy_sum_with_transpose(rng: np.random.Generator) -> None:
    """symmetric=True gives the pattern of A + A.T (loops once) and is its own transpose."""
    src, dst = random_edges(rng, 30, 120)
    graph = CsrGraph.from_edges(src, dst, 30, symmetric=True)
    ref = reference_csr(src, dst, 30, symmetric=True)
    np.testing.assert_array_equal(graph.offsets, ref.indptr)
    np.testing.assert_array_equal(graph.indices, ref.indices)
    assert graph.symmetric
    assert graph.transpose() is graph


def test_from_edges_symmetric_without_dedupe_adds_one_reverse_per_edge() -> None:
    """Without dedupe every non-loop edge gains one reverse copy; a self loop stays single."""
    graph = CsrGraph.from_edges([0, 0, 1], [1, 1, 1], symmetric=True, dedupe=False)
    np.testing.assert_array_equal(graph.offsets, [0, 2, 5])
    np.testing.assert_array_equal(graph.indices, [1, 1, 0, 0, 1])


def test_from_edges_weights_match_scipy_for_distinct_pairs(rng: np.random.Generator) -> None:
    """Weights follow their edges into CSR order (SciPy as the reference, no duplicates)."""
    n = 40
    keys = rng.choice(n * n, size=300, replace=False)
    src, dst = keys // n, keys % n
    w = rng.standard_normal(300).astype(np.float32)
    graph = CsrGraph.from_edges(src, dst, n, weights=w)
    ref = scipy.sparse.coo_array((w, (src, dst)), shape=(n, n)).tocsr()
    ref.sort_indices()
    np.testing.assert_array_equal(graph.indices, ref.indices)
    assert graph.weights is not None
    np.testing.assert_array_equal(graph.weights, ref.data)


def test_from_edges_dedupe_keeps_the_first_weight() -> None:
    """A repeated pair keeps the weight of its first occurrence; undirected pairs share it."""
    directed = CsrGraph.from_edges([0, 1, 0], [1, 0, 1], weights=[5.0, 6.0, 7.0])
    np.testing.assert_array_equal(directed.weights, [5.0, 6.0])
    undirected = CsrGraph.from_edges([0, 1], [1, 0], weights=[5.0, 6.0], symmetric=True)
    np.testing.assert_array_equal(undirected.weights, [5.0, 5.0])


def test_transpose_matches_scipy_transpose(rng: np.random.Generator) -> None:
    """transpose() reverses every edge with its weight, like SciPy's .T, and is cached."""
    n = 60
    keys = rng.choice(n * n, size=500, replace=False)
    w = rng.random(500).astype(np.float32)
    graph = CsrGraph.from_edges(keys // n, keys % n, n, weights=w)
    flipped = graph.transpose()
    ref = graph.to_scipy().T.tocsr()
    ref.sort_indices()
    np.testing.assert_array_equal(flipped.offsets, ref.indptr)
    np.testing.assert_array_equal(flipped.indices, ref.indices)
    np.testing.assert_array_equal(flipped.weights, ref.data)
    assert graph.transpose() is flipped
    assert flipped.transpose() is graph
    assert flipped.offsets.dtype == graph.offsets.dtype


def test_transpose_is_stable_for_unsorted_rows() -> None:
    """In-edges of a vertex keep the order their sources appear in the original arrays."""
    for dtype in (np.int32, np.int64):
        graph = CsrGraph(np.array([0, 2, 4], dtype), np.array([1, 0, 1, 0], np.int32))
        flipped = graph.transpose()
        np.testing.assert_array_equal(flipped.offsets, [0, 2, 4])
        np.testing.assert_array_equal(flipped.indices, [0, 1, 0, 1])
        assert flipped.offsets.dtype == dtype
    weighted = CsrGraph(
        np.array([0, 2, 4], np.int64), np.array([1, 1, 0, 0], I32), np.arange(4, dtype=F32)
    )
    np.testing.assert_array_equal(weighted.transpose().weights, [2, 3, 0, 1])


def test_to_scipy_gives_the_dense_adjacency(rng: np.random.Generator) -> None:
    """to_scipy() holds exactly the edges: 1.0 per edge, or the weight."""
    src, dst = random_edges(rng, 12, 40)
    graph = CsrGraph.from_edges(src, dst, 12)
    dense = np.zeros((12, 12))
    dense[src, dst] = 1.0
    np.testing.assert_array_equal(graph.to_scipy().toarray(), dense)


def test_properties_report_sizes_and_degrees(rng: np.random.Generator) -> None:
    """num_vertices, num_edges, nbytes, out_degree and repr agree with the arrays."""
    src, dst = random_edges(rng, 25, 100)
    graph = CsrGraph.from_edges(src, dst, 25, weights=np.ones(100))
    assert graph.num_vertices == 25
    assert graph.num_edges == graph.indices.size
    assert graph.nbytes == 26 * 4 + graph.num_edges * 8
    degree = graph.out_degree()
    assert degree.dtype == np.int32
    np.testing.assert_array_equal(degree, np.diff(reference_csr(src, dst, 25).indptr))
    assert f"V=25, E={graph.num_edges}" in repr(graph)


def test_arrays_are_read_only_and_the_graph_immutable() -> None:
    """The stored arrays refuse writes, attributes cannot be set, and copies stay valid."""
    offsets = np.array([0, 1, 1], dtype=np.int64)
    graph = CsrGraph(offsets, np.array([1], np.int32), np.array([2.0], np.float32))
    for array in (graph.offsets, graph.indices, graph.weights):
        assert array is not None
        assert not array.flags.writeable
        assert array.flags.c_contiguous
    assert offsets.flags.writeable  # the caller's array keeps its flags
    with pytest.raises(AttributeError, match="immutable"):
        graph.symmetric = True
    clone = copy.deepcopy(graph)
    np.testing.assert_array_equal(clone.offsets, graph.offsets)
    assert clone.offsets.dtype == np.int64


def test_non_contiguous_input_is_copied_contiguous() -> None:
    """A strided view is accepted and stored C-contiguous."""
    indices = np.array([1, 9, 0, 9], dtype=np.int32)[::2]
    graph = CsrGraph(np.array([0, 1, 2], np.int32), indices)
    assert graph.indices.flags.c_contiguous
    np.testing.assert_array_equal(graph.indices, [1, 0])


@pytest.mark.parametrize(
    ("offsets", "indices", "weights", "needles"),
    [
        (np.array([0.0, 1.0]), np.array([0], I32), None, ["offsets has dtype float64"]),
        (np.zeros((2, 2), I32), np.array([], I32), None, ["offsets has shape (2, 2)"]),
        (np.array([], I32), np.array([], I32), None, ["offsets is empty"]),
        (np.array([1, 1], I32), np.array([], I32), None, ["offsets[0] is 1"]),
        (np.array([0, 2, 1, 3], I32), np.zeros(3, I32), None, ["position 2", "2 > offsets[2] = 1"]),
        (np.array([0, 1, 2], I32), np.zeros(3, I32), None, ["offsets[2] is 2", "3 entries"]),
        (np.array([0, 1], I32), np.array([0], np.int64), None, ["indices has dtype int64"]),
        (np.array([0, 1, 3], I32), np.array([0, 1, 2], I32), None, ["indices[2] = 2", "[0, 2)"]),
        (np.array([0, 2], I32), np.array([0, -4], I32), None, ["indices[1] = -4", "vertex 0"]),
        (np.array([0, 1], I32), np.array([0], I32), np.array([1.0]), ["weights has dtype float64"]),
        (np.array([0, 1], I32), np.array([0], I32), np.ones(2, F32), ["weights has 2 entries"]),
    ],
)
def test_invalid_arrays_raise_naming_the_fault(
    offsets: Any, indices: Any, weights: Any, needles: list[str]
) -> None:
    """Each broken CSR rule raises a ValidationError naming the position, value and a fix."""
    with pytest.raises(ValidationError) as info:
        CsrGraph(offsets, indices, weights)
    message = str(info.value)
    assert "Fix:" in message
    for needle in needles:
        assert needle in message


def test_int32_offsets_refuse_more_than_int32_edges() -> None:
    """An edge count beyond int32 with int32 offsets asks for int64 offsets."""
    with pytest.raises(ValidationError, match="Fix: use int64 offsets"):
        check_offsets(np.zeros(2, np.int32), 2**31)
    check_offsets(np.array([0, 2**31], np.int64), 2**31)


def test_from_edges_switches_to_int64_offsets_past_the_int32_limit(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the edge count exceeds the int32 limit (lowered here to 20), offsets are int64."""
    src, dst = random_edges(rng, 8, 40)
    expected = CsrGraph.from_edges(src, dst, 8, dedupe=False)
    monkeypatch.setattr(_build, "INT32_MAX", 20)
    graph = CsrGraph.from_edges(src, dst, 8, dedupe=False)
    assert graph.offsets.dtype == np.int64
    np.testing.assert_array_equal(graph.offsets, expected.offsets)
    np.testing.assert_array_equal(graph.indices, expected.indices)


def test_false_symmetric_claim_names_an_edge_without_reverse() -> None:
    """symmetric=True is checked: an edge whose reverse is missing (or differs) is named."""
    with pytest.raises(ValidationError, match=r"edge 0 -> 2 has no reverse edge 2 -> 0.*Fix:"):
        CsrGraph(np.array([0, 2, 3, 3], I32), np.array([1, 2, 0], I32), symmetric=True)
    with pytest.raises(ValidationError, match="of equal weight"):
        CsrGraph(
            np.array([0, 1, 2], I32), np.array([1, 0], I32), np.array([1, 2], F32), symmetric=True
        )
    unsorted = CsrGraph(np.array([0, 2, 3, 4], I32), np.array([2, 1, 0, 0], I32), symmetric=True)
    assert unsorted.transpose() is unsorted


@pytest.mark.parametrize(
    ("src", "dst", "kwargs", "needles"),
    [
        ([0, -2, 1], [1, 0, 0], {}, ["src[1] = -2", "negative"]),
        ([0, 1], [1, 5], {"num_vertices": 5}, ["dst[1] = 5", "num_vertices = 5"]),
        (np.array([0.0, 1.5]), [1, 0], {}, ["src has dtype float64", "src[1] = 1.5"]),
        ([0, 1], [1], {}, ["src has 2 entries but dst has 1"]),
        ([[0, 1]], [[1, 0]], {}, ["src has shape (1, 2)"]),
        ([0], [1], {"num_vertices": -1}, ["num_vertices is -1"]),
        ([0], [1], {"num_vertices": 2**31}, [f"num_vertices is {2**31}"]),
        ([0], [1], {"num_vertices": 2.5}, ["num_vertices is 2.5"]),
        ([0], [2**31], {}, [f"dst[0] = {2**31}", "largest vertex id"]),
        ([0], [1], {"weights": [1.0, 2.0]}, ["weights has shape (2,)"]),
        ([0], [1], {"weights": ["x"]}, ["weights has dtype <U1"]),
    ],
)
def test_invalid_edges_raise_naming_the_position(
    src: Any, dst: Any, kwargs: dict[str, Any], needles: list[str]
) -> None:
    """Bad ids, lengths, counts or weights raise a ValidationError naming the first offender."""
    with pytest.raises(ValidationError) as info:
        CsrGraph.from_edges(src, dst, **kwargs)
    message = str(info.value)
    assert "Fix:" in message
    for needle in needles:
        assert needle in message


def test_unsigned_and_narrow_id_dtypes_are_accepted(rng: np.random.Generator) -> None:
    """Any integer dtype works for ids, unsigned 64-bit included."""
    src, dst = random_edges(rng, 50, 100)
    expected = CsrGraph.from_edges(src, dst, 50)
    for dtype in (np.uint8, np.int16, np.uint64):
        graph = CsrGraph.from_edges(src.astype(dtype), dst.astype(dtype), 50)
        np.testing.assert_array_equal(graph.indices, expected.indices)


def test_graphs_all_is_sorted_and_complete() -> None:
    """vyre_async.graphs exports every public name, sorted, and each one exists."""
    assert graphs.__all__ == sorted(graphs.__all__)
    assert set(graphs.__all__) == {
        "CsrGraph",
        "GraphFileHeader",
        "GraphPart",
        "RmatParams",
        "VertexIds",
        "VertexRanges",
        "graph_part",
        "load_edge_list",
        "load_graph",
        "load_matrix_market",
        "load_npz",
        "load_scipy_npz",
        "part_graph_bytes",
        "read_graph_header",
        "replica_graph_bytes",
        "rmat",
        "rmat_edges",
        "rmat_params",
        "save_npz",
        "trusted_csr",
        "with_uniform_weights",
    }
    for name in graphs.__all__:
        assert getattr(graphs, name).__module__.startswith("vyre_async.graphs")
