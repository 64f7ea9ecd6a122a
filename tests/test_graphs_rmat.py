"""R-MAT: determinism, size bounds, symmetry, quadrant probabilities and degree skew."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from vyre_async.errors import ValidationError
from vyre_async.graphs import rmat


def test_same_seed_gives_identical_arrays() -> None:
    """Two calls with one seed return equal offsets and indices."""
    first, second = rmat(10, 8, seed=42), rmat(10, 8, seed=42)
    np.testing.assert_array_equal(first.offsets, second.offsets)
    np.testing.assert_array_equal(first.indices, second.indices)


def test_different_seeds_give_different_graphs() -> None:
    """Another seed gives another edge set."""
    first, second = rmat(10, 8, seed=1), rmat(10, 8, seed=2)
    assert first.num_edges != second.num_edges or not np.array_equal(first.indices, second.indices)


@pytest.mark.parametrize(("scale", "edge_factor"), [(0, 1), (1, 4), (8, 16), (12, 4)])
def test_size_is_two_to_the_scale_and_edges_are_bounded(scale: int, edge_factor: int) -> None:
    """V is 2**scale and the symmetric, deduplicated graph has at most 2 * edge_factor * V edges."""
    graph = rmat(scale, edge_factor, seed=3)
    assert graph.num_vertices == 2**scale
    assert 0 < graph.num_edges <= 2 * edge_factor * 2**scale
    assert graph.offsets.dtype == np.int32


def test_default_graph_is_symmetric_without_duplicates() -> None:
    """The default graph equals its transpose (SciPy check) and repeats no edge."""
    graph = rmat(9, 8, seed=5)
    assert graph.symmetric
    adjacency = graph.to_scipy()
    assert (adjacency != adjacency.T).nnz == 0
    assert adjacency.max() == 1.0
    assert graph.transpose() is graph


def test_directed_without_dedupe_keeps_every_generated_edge() -> None:
    """symmetric=False, dedupe=False gives exactly edge_factor * V directed edges."""
    graph = rmat(8, 6, seed=9, symmetric=False, dedupe=False)
    assert graph.num_edges == 6 * 2**8
    assert not graph.symmetric
    assert rmat(8, 6, seed=9, symmetric=False).num_edges <= 6 * 2**8


def test_quadrant_frequencies_follow_a_b_c_d() -> None:
    """At scale 1 without permutation, edge (i, j) occurs with its quadrant's probability."""
    m = 200_000
    graph = rmat(
        1, m // 2, seed=11, a=0.5, b=0.2, c=0.1, symmetric=False, dedupe=False, permute=False
    )
    rows = np.repeat(np.arange(2), np.diff(graph.offsets))
    counts = np.bincount(rows * 2 + graph.indices, minlength=4) / m
    # 5 standard deviations of a binomial proportion at p <= 0.5 is about 0.0056.
    np.testing.assert_allclose(counts, [0.5, 0.2, 0.1, 0.2], atol=0.006)


def test_degrees_are_heavily_skewed() -> None:
    """At scale 14 the largest degree is more than 20 times the mean (a power-law tail)."""
    degree = rmat(14, 16, seed=1).out_degree()
    assert degree.max() > 20 * degree.mean()


def test_unpermuted_vertex_zero_has_the_largest_degree() -> None:
    """With permute=False, vertex 0 (quadrant a at every level) is the hub; permuting moves it."""
    plain = rmat(12, 8, seed=4, permute=False).out_degree()
    assert int(np.argmax(plain)) == 0
    permuted = rmat(12, 8, seed=4).out_degree()
    np.testing.assert_array_equal(np.sort(permuted), np.sort(plain))


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"scale": -1}, "scale is -1"),
        ({"scale": 31}, "scale is 31"),
        ({"scale": 2.0}, "scale is 2.0"),
        ({"scale": True}, "scale is True"),
        ({"scale": 4, "edge_factor": 0}, "edge_factor is 0"),
        ({"scale": 4, "seed": -5}, "seed is -5"),
        ({"scale": 4, "seed": 2**64}, f"seed is {2**64}"),
        ({"scale": 4, "a": 0.0}, "probability a is 0.0"),
        ({"scale": 4, "b": 1.2}, "probability b is 1.2"),
        ({"scale": 4, "c": "x"}, "probability c is 'x'"),
        ({"scale": 4, "a": 0.5, "b": 0.3, "c": 0.2}, "a + b + c = 1"),
    ],
)
def test_invalid_parameters_raise_with_a_fix(kwargs: dict[str, Any], needle: str) -> None:
    """Out-of-range parameters raise a ValidationError naming the value, with a fix."""
    with pytest.raises(ValidationError) as info:
        rmat(**kwargs)
    assert needle in str(info.value)
    assert "Fix:" in str(info.value)
