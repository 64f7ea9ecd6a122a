"""Seeded uniform edge weights for generated graphs, and R-MAT jobs that ask for them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vyre_async as va
from vyre_async.errors import ConfigurationError, ValidationError
from vyre_async.graphs import with_uniform_weights
from vyre_async.jobs import load_job


def test_uniform_weights_are_in_range_symmetric_and_seeded(rng: np.random.Generator) -> None:
    """Weights lie in (0, 1], an edge and its reverse weigh the same, a seed repeats them."""
    seed = int(rng.integers(0, 2**31))
    graph = va.graphs.rmat(10, 8, seed, weights="uniform")
    assert graph.weights is not None
    assert graph.weights.dtype == np.float32
    assert 0 < graph.weights.min() <= graph.weights.max() <= 1
    # The constructor checks that a symmetric graph's reverse edges carry equal weights.
    va.graphs.CsrGraph(graph.offsets, graph.indices, graph.weights, symmetric=True)
    again = va.graphs.rmat(10, 8, seed, weights="uniform")
    np.testing.assert_array_equal(again.weights, graph.weights)
    other = va.graphs.rmat(10, 8, seed + 1, weights="uniform")
    assert (
        not np.array_equal(with_uniform_weights(other, seed).weights, other.weights)
        or other.num_edges == 0
    )


def test_uniform_weights_look_uniform(rng: np.random.Generator) -> None:
    """Over many edges the weights' deciles hold about a tenth each (a hash, not a constant)."""
    graph = va.graphs.rmat(14, 16, int(rng.integers(0, 2**31)), weights="uniform")
    assert graph.weights is not None
    counts = np.histogram(graph.weights, bins=10, range=(0, 1))[0] / graph.num_edges
    np.testing.assert_allclose(counts, 0.1, atol=0.01)


def test_rmat_refuses_an_unknown_weighting() -> None:
    """A weighting other than 'uniform' is a ValidationError with a fix."""
    with pytest.raises(ValidationError, match="Fix:"):
        va.graphs.rmat(4, 4, 0, weights="normal")  # type: ignore[arg-type]


def _job(tmp_path: Path, graph: str) -> Path:
    path = tmp_path / "job.toml"
    path.write_text(
        f'[job]\nname = "w"\n\n[graph]\n{graph}\n\n[[workload]]\nkind = "reach"\nsources = [0]\n'
    )
    return path


def test_a_job_draws_rmat_weights_and_only_for_rmat(tmp_path: Path) -> None:
    """`weights = "uniform"` decodes for R-MAT; for a file graph it names its path."""
    spec = load_job(_job(tmp_path, 'kind = "rmat"\nscale = 4\nweights = "uniform"'))
    assert spec.graph.weights == "uniform"
    with pytest.raises(ConfigurationError, match=r"\$\.graph\.weights"):
        load_job(_job(tmp_path, 'kind = "edges"\npath = "g.txt"\nweights = "uniform"'))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_csr_graph_refuses_a_weight_that_is_not_finite_naming_its_edge(bad: float) -> None:
    """CsrGraph(offsets, indices, weights) with NaN or an infinity: the edge is named."""
    offsets = np.array([0, 2, 3, 3], np.int64)
    indices = np.array([1, 2, 0], np.int32)
    weights = np.array([0.5, 1.0, bad], np.float32)
    with pytest.raises(ValidationError, match=r"edge 2 \(1 -> 0\).*not a finite number.*Fix:"):
        va.graphs.CsrGraph(offsets, indices, weights)


def test_a_csr_graph_keeps_negative_weights() -> None:
    """Negative weights are the graph's business (a signed matrix, say): kept as given."""
    graph = va.graphs.CsrGraph([0, 1, 1], np.array([1], np.int32), np.array([-2.5], np.float32))
    assert graph.weights is not None
    assert graph.weights.tolist() == [-2.5]
