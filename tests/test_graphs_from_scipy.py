"""CsrGraph.from_scipy: every sparse format and dtype against a dense float64 reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse

from vyre_async.errors import ValidationError
from vyre_async.graphs import CsrGraph

FORMATS = ["csr", "csc", "coo", "bsr", "dia", "dok", "lil"]


def random_triplets(
    rng: np.random.Generator, n: int, m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``m`` random entries with duplicates likely; values are positive multiples of 1/8,
    so any summation order gives the same float64 (and float32) result and no sum
    cancels to zero (a stored zero stays an edge: tested on its own)."""
    rows, cols = rng.integers(0, n, m), rng.integers(0, n, m)
    values = rng.integers(1, 200, m) / 8.0
    return rows, cols, values


def dense_reference(n: int, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The adjacency matrix as a float64 array, duplicates summed (np.add.at, not SciPy)."""
    dense = np.zeros((n, n))
    np.add.at(dense, (rows, cols), values)
    return dense


def assert_graph_is_dense(graph: CsrGraph, dense: np.ndarray, *, weighted: bool = True) -> None:
    """Edges are exactly the nonzero entries, rows sorted, weights the float32 values."""
    n = dense.shape[0]
    assert graph.num_vertices == n
    rows = np.repeat(np.arange(n), np.diff(graph.offsets))
    expected_rows, expected_cols = np.nonzero(dense)  # row-major: rows, then sorted columns
    np.testing.assert_array_equal(rows, expected_rows)
    np.testing.assert_array_equal(graph.indices, expected_cols)
    assert graph.offsets.dtype == np.int32
    assert graph.indices.dtype == np.int32
    if weighted:
        assert graph.weights is not None
        assert graph.weights.dtype == np.float32
        np.testing.assert_array_equal(graph.weights, dense[expected_rows, expected_cols])
    else:
        assert graph.weights is None


def in_format(coo: scipy.sparse.coo_array, fmt: str, *, matrix_class: bool) -> Any:
    """The same matrix as a ``fmt`` sparse array (or the older ``*_matrix`` class); BSR
    with 1 x 1 blocks, so it stores no padding zeros (those are tested on their own)."""
    converted = coo.tobsr(blocksize=(1, 1)) if fmt == "bsr" else coo.asformat(fmt)
    if not matrix_class:
        return converted
    return getattr(scipy.sparse, f"{fmt}_matrix")(converted)


@pytest.mark.parametrize("matrix_class", [False, True])
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_matches_the_dense_reference(
    rng: np.random.Generator, fmt: str, matrix_class: bool
) -> None:
    """Each sparse format (array and matrix classes) gives the edges and summed weights."""
    n = int(rng.integers(1, 60))
    rows, cols, values = random_triplets(rng, n, int(rng.integers(0, 4 * n)))
    coo = scipy.sparse.coo_array((values, (rows, cols)), shape=(n, n))
    graph = CsrGraph.from_scipy(in_format(coo, fmt, matrix_class=matrix_class))
    assert_graph_is_dense(graph, dense_reference(n, rows, cols, values))


@pytest.mark.parametrize(
    "data_dtype", [np.float64, np.float32, np.longdouble, np.int64, np.int8, np.uint16, np.bool_]
)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_index_and_value_dtypes_are_cast(
    rng: np.random.Generator, data_dtype: type[np.generic], index_dtype: type[np.generic]
) -> None:
    """int64 indices and any real value dtype become int32 indices and float32 weights."""
    n = 40
    keys = rng.choice(n * n, size=300, replace=False)
    rows, cols = keys // n, keys % n
    values = rng.integers(1, 5, 300).astype(data_dtype)
    csr = scipy.sparse.csr_array((values, (rows, cols)), shape=(n, n))
    csr.indices = csr.indices.astype(index_dtype)
    csr.indptr = csr.indptr.astype(index_dtype)
    graph = CsrGraph.from_scipy(csr)
    assert_graph_is_dense(graph, dense_reference(n, rows, cols, values.astype(np.float64)))


def test_zero_sums_and_bsr_padding_are_stored_entries_so_edges() -> None:
    """Duplicates summing to 0 and a BSR block's padding are stored zeros: weight-0 edges,
    gone after eliminate_zeros()."""
    coo = scipy.sparse.coo_array(([1.0, -1.0, 2.0], ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    graph = CsrGraph.from_scipy(coo)
    np.testing.assert_array_equal(graph.indices, [1, 0])
    np.testing.assert_array_equal(graph.weights, [0.0, 2.0])
    bsr = scipy.sparse.bsr_array(np.array([[5.0, 0.0], [0.0, 0.0]]), blocksize=(2, 2))
    assert CsrGraph.from_scipy(bsr).num_edges == 4
    bsr.eliminate_zeros()  # whole zero blocks only: the block holding 5 stays
    csr = bsr.tocsr()
    csr.eliminate_zeros()
    assert CsrGraph.from_scipy(csr).num_edges == 1


def test_explicit_zeros_stay_edges_and_weighted_false_keeps_the_pattern() -> None:
    """A stored zero is an edge of weight 0; weighted=False drops the values only."""
    csr = scipy.sparse.csr_array(
        (np.array([0.0, 2.5]), np.array([1, 0]), np.array([0, 1, 2, 2])), shape=(3, 3)
    )
    graph = CsrGraph.from_scipy(csr)
    np.testing.assert_array_equal(graph.offsets, [0, 1, 2, 2])
    np.testing.assert_array_equal(graph.indices, [1, 0])
    np.testing.assert_array_equal(graph.weights, [0.0, 2.5])
    pattern = CsrGraph.from_scipy(csr, weighted=False)
    assert pattern.weights is None
    np.testing.assert_array_equal(pattern.indices, graph.indices)


def test_symmetric_adds_the_reverse_with_the_upper_triangles_value(
    rng: np.random.Generator,
) -> None:
    """symmetric=True gives A + A.T's pattern; a pair stored both ways keeps A[i, j], i < j."""
    n = 30
    keys = rng.choice(n * n, size=200, replace=False)
    rows, cols = keys // n, keys % n
    values = rng.integers(1, 100, 200) / 4.0
    dense = dense_reference(n, rows, cols, values)
    # Above the diagonal: A[i, j] where stored, else A[j, i]; mirrored below; loops as given.
    upper = np.triu(np.where(dense != 0, dense, dense.T), 1)
    expected = upper + upper.T + np.diag(np.diag(dense))
    coo = scipy.sparse.coo_array((values, (rows, cols)), shape=(n, n))
    graph = CsrGraph.from_scipy(coo, symmetric=True)
    assert graph.symmetric
    assert_graph_is_dense(graph, expected)


def test_the_callers_matrix_is_left_as_it_was() -> None:
    """An unsorted CSR with duplicates is not sorted in place, and no memory is shared."""
    indptr, indices = np.array([0, 3, 3]), np.array([1, 0, 1])
    data = np.array([1.0, 2.0, 4.0])
    csr = scipy.sparse.csr_array((data, indices, indptr), shape=(2, 2))
    graph = CsrGraph.from_scipy(csr)
    np.testing.assert_array_equal(graph.indices, [0, 1])
    np.testing.assert_array_equal(graph.weights, [2.0, 5.0])
    np.testing.assert_array_equal(csr.indices, [1, 0, 1])
    np.testing.assert_array_equal(csr.data, [1.0, 2.0, 4.0])
    assert not np.shares_memory(graph.indices, csr.indices)
    canonical = scipy.sparse.csr_array(
        (np.ones(2, np.float32), np.array([0, 1], np.int32), np.array([0, 1, 2], np.int32)),
        shape=(2, 2),
    )
    graph = CsrGraph.from_scipy(canonical)  # already int32/float32: still copied
    for ours, theirs in zip(
        (graph.offsets, graph.indices, graph.weights),
        (canonical.indptr, canonical.indices, canonical.data),
        strict=True,
    ):
        assert not np.shares_memory(ours, theirs)


@pytest.mark.parametrize(
    ("value", "needles"),
    [
        (np.nan, ["matrix entry (1, 2) = nan", "not a finite number"]),
        (np.inf, ["matrix entry (1, 2) = inf", "not a finite number"]),
        (1e39, ["matrix entry (1, 2) = 1e+39", "beyond float32's range"]),
        (-4e38, ["matrix entry (1, 2) = -4e+38", "beyond float32's range"]),
    ],
)
def test_values_that_float32_cannot_hold_are_refused(value: float, needles: list[str]) -> None:
    """NaN, infinities and values beyond float32 are refused naming the entry."""
    coo = scipy.sparse.coo_array((np.array([1.0, value]), ([0, 1], [0, 2])), shape=(3, 3))
    with pytest.raises(ValidationError) as info:
        CsrGraph.from_scipy(coo)
    message = str(info.value)
    assert "Fix:" in message
    for needle in needles:
        assert needle in message
    assert CsrGraph.from_scipy(coo, weighted=False).num_edges == 2  # the pattern is fine


def test_largest_float32_value_is_accepted() -> None:
    """A value equal to float32's maximum fits and is kept."""
    top = float(np.finfo(np.float32).max)
    graph = CsrGraph.from_scipy(scipy.sparse.coo_array(([top], ([0], [0])), shape=(1, 1)))
    np.testing.assert_array_equal(graph.weights, [np.float32(top)])


@pytest.mark.parametrize(
    ("matrix", "needles"),
    [
        (scipy.sparse.coo_array((3, 4)), ["shape (3, 4)", "square"]),
        (
            scipy.sparse.coo_array(([1.0], ([0], [1])), shape=(2**31 + 5, 2**31 + 5)),
            [f"{2**31 + 5} rows", "int32"],
        ),
        (scipy.sparse.coo_array(([1j], ([0], [1])), shape=(2, 2)), ["complex128"]),
        (
            scipy.sparse.csr_array(
                (np.ones(1), np.array([7], np.int64), np.array([0, 1, 1], np.int64)),
                shape=(2, 2),
            ),
            ["column index 7", "outside [0, 2)"],
        ),
    ],
    ids=["not-square", "too-many-rows", "complex", "index-out-of-range"],
)
def test_matrices_that_are_no_graph_are_refused(matrix: Any, needles: list[str]) -> None:
    """Non-square, oversized, complex or corrupt matrices raise a ValidationError + Fix."""
    with pytest.raises(ValidationError) as info:
        CsrGraph.from_scipy(matrix)
    message = str(info.value)
    assert "Fix:" in message
    for needle in needles:
        assert needle in message


def test_an_index_beyond_int32_is_refused_not_wrapped() -> None:
    """An int64 column index of 2**32 + 1 is refused, not cast to 1."""
    csr = scipy.sparse.csr_array(
        (np.ones(1), np.array([2**32 + 1], np.int64), np.array([0, 1, 1, 1], np.int64)),
        shape=(3, 3),
    )
    with pytest.raises(ValidationError, match=r"column index 4294967297 .*Fix:"):
        CsrGraph.from_scipy(csr)


def test_a_dense_array_is_a_type_error() -> None:
    """Passing a NumPy array (not sparse) is API misuse: TypeError naming the fix."""
    with pytest.raises(TypeError, match="csr_array"):
        CsrGraph.from_scipy(np.eye(3))
