"""The counter-based R-MAT stream: a plain-Python model, a pinned digest, the alias table,
the relabelling, and the parallel CSR builder against the generic one."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pytest

from vyre_async.graphs import CsrGraph, RmatParams, _rmat_csr, rmat, rmat_edges, rmat_params
from vyre_async.graphs._rmat_counter import GOLDEN, permutation_table

MASK64 = (1 << 64) - 1

#: SHA-256 of rmat_edges(rmat_params(10, 16, seed=1)) as little-endian uint32 (src, then
#: dst), and of rmat(10, 16, seed=1)'s offsets then indices as little-endian int32. A
#: change here is a change of the graph every seed gives: bump RmatParams.generator_version
#: and say so in CHANGELOG.md.
SCALE10_EDGES_SHA256 = "95c1b13c1cb02a8644dde8140759fc4d782c6dfed1331015906883fec600e319"
SCALE10_CSR_SHA256 = "990a9bd61378ca618dcd4ff4b8cff3fc7bb5b4d48e810d804904065f9e6eb5f5"


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def _model_edges(params: RmatParams, start: int, stop: int, permute: bool) -> list[tuple[int, int]]:
    """Edges start..stop as the stream's definition states them, one word at a time."""
    thresholds, pairs = params.alias_table()
    keys, state = [], params.seed
    for _ in range(7):
        state = (state + GOLDEN) & MASK64
        keys.append(_mix(state))
    draws = -(-params.scale // 8)
    mask = (1 << params.scale) - 1

    def relabel(x: int) -> int:
        for i in range(3):
            multiplier, addend = keys[1 + 2 * i] | 1, keys[2 + 2 * i]
            x = (x * multiplier + addend) & mask
            x ^= x >> (params.scale // 2 + 1)
        return x

    edges = []
    for e in range(start, stop):
        src = dst = 0
        for j in range(draws):
            word = _mix((keys[0] + GOLDEN * (e * draws + j + 1)) & MASK64)
            column, uniform = word >> 48, (word >> 16) & 0xFFFFFFFF
            packed = int(pairs[column])
            bits = packed & 0xFFFF if uniform < int(thresholds[column]) else packed >> 16
            src, dst = (src << 8) | (bits & 0xFF), (dst << 8) | (bits >> 8)
        drop = 8 * draws - params.scale
        src, dst = src >> drop, dst >> drop
        edges.append((relabel(src), relabel(dst)) if permute else (src, dst))
    return edges


@pytest.mark.parametrize("scale", [0, 1, 7, 9, 17])
@pytest.mark.parametrize("permute", [True, False])
def test_edge_stream_equals_a_plain_python_model(
    scale: int, permute: bool, rng: np.random.Generator
) -> None:
    """rmat_edges equals the stream's definition computed with Python ints, edge for edge."""
    seed = int(rng.integers(0, 2**63)) * 2 + int(rng.integers(2))  # the full 64-bit range
    params = rmat_params(scale, 16, seed)
    start = int(rng.integers(0, params.num_edges - 1500)) if params.num_edges > 1500 else 0
    stop = min(params.num_edges, start + 1500)
    src, dst = rmat_edges(params, start, stop, permute=permute)
    assert src.dtype == dst.dtype == np.uint32
    got = list(zip(src.tolist(), dst.tolist(), strict=True))
    assert got == _model_edges(params, start, stop, permute)


def test_scale_10_edge_list_and_graph_are_pinned() -> None:
    """Scale 10, edge factor 16, seed 1 gives the recorded edge list and CSR arrays."""
    src, dst = rmat_edges(rmat_params(10, 16, 1))
    edges = hashlib.sha256(src.astype("<u4").tobytes() + dst.astype("<u4").tobytes())
    assert edges.hexdigest() == SCALE10_EDGES_SHA256
    graph = rmat(10, 16, 1)
    csr = hashlib.sha256(
        graph.offsets.astype("<i4").tobytes() + graph.indices.astype("<i4").tobytes()
    )
    assert csr.hexdigest() == SCALE10_CSR_SHA256


def test_any_cut_of_the_stream_gives_the_same_edges(rng: np.random.Generator) -> None:
    """Edges start..stop equal that slice of the whole stream (each edge is its own function)."""
    params = rmat_params(12, 4, int(rng.integers(1 << 40)))
    src, dst = rmat_edges(params)
    start = int(rng.integers(0, params.num_edges))
    stop = int(rng.integers(start, params.num_edges + 1))
    part_src, part_dst = rmat_edges(params, start, stop)
    np.testing.assert_array_equal(part_src, src[start:stop])
    np.testing.assert_array_equal(part_dst, dst[start:stop])


@pytest.mark.parametrize(
    ("a", "b", "c"), [(0.57, 0.19, 0.19), (0.45, 0.15, 0.3), (0.25, 0.25, 0.25)]
)
def test_alias_table_gives_each_combination_its_product_probability(
    a: float, b: float, c: float
) -> None:
    """The table's implied probability of every 8-level combination is the product of its
    levels' quadrant probabilities (float64), to within 2**-32 of a column's share."""
    thresholds, pairs = RmatParams(8, a=a, b=b, c=c).alias_table()
    own_share = thresholds.astype(np.float64) / 2**32
    implied = np.zeros(1 << 16)
    np.add.at(implied, pairs & 0xFFFF, own_share)
    np.add.at(implied, pairs >> 16, 1.0 - own_share)
    implied /= 1 << 16
    level = np.array([a, b, c, 1 - a - b - c])
    expected = np.zeros(1 << 16)
    for combo in itertools.product(range(4), repeat=8):
        src = sum((q >> 1) << (7 - i) for i, q in enumerate(combo))
        dst = sum((q & 1) << (7 - i) for i, q in enumerate(combo))
        expected[src | dst << 8] = np.prod(level[list(combo)])
    givers = np.bincount(pairs & 0xFFFF, minlength=1 << 16) + np.bincount(
        pairs >> 16, minlength=1 << 16
    )
    error = np.abs(implied - expected)
    assert (error <= givers * 2**-32 / (1 << 16)).all(), float(error.max())
    assert expected.sum() == pytest.approx(1.0)


def test_every_level_follows_a_b_c_d() -> None:
    """Unpermuted at scale 10 (two words, six levels dropped), each level's quadrant
    frequencies match a, b, c, d: the words' levels are packed and dropped in order."""
    a, b, c = 0.5, 0.2, 0.1
    src, dst = rmat_edges(RmatParams(10, 200, 7, a, b, c), permute=False)  # 204800 edges
    for level in range(10):
        bit = 9 - level
        quadrant = ((src >> bit) & 1) * 2 + ((dst >> bit) & 1)
        frequencies = np.bincount(quadrant, minlength=4) / src.size
        # 5 standard deviations of a proportion near 0.5 over 204800 draws is 0.0056.
        np.testing.assert_allclose(frequencies, [a, b, c, 1 - a - b - c], atol=0.006)


@pytest.mark.parametrize("scale", [0, 1, 2, 5, 11, 16])
def test_relabelling_is_a_bijection_that_moves_ids(scale: int, rng: np.random.Generator) -> None:
    """The relabelling of 2**scale ids is a permutation of them, not the identity."""
    keys = RmatParams(scale, seed=int(rng.integers(1 << 62))).stream_keys()
    table = permutation_table(scale, keys)
    np.testing.assert_array_equal(np.sort(table), np.arange(1 << scale))
    if scale >= 5:
        assert (table != np.arange(1 << scale)).mean() > 0.9


@pytest.mark.parametrize(
    ("symmetric", "dedupe", "permute"), list(itertools.product([True, False], repeat=3))
)
def test_builder_equals_the_generic_csr_construction(
    symmetric: bool, dedupe: bool, permute: bool, rng: np.random.Generator
) -> None:
    """rmat's bucketed builder gives CsrGraph.from_edges's arrays for the same edges."""
    scale, seed = int(rng.integers(0, 13)), int(rng.integers(1 << 30))
    params = rmat_params(scale, int(rng.integers(1, 9)), seed)
    graph = rmat(
        scale, params.edge_factor, seed, symmetric=symmetric, dedupe=dedupe, permute=permute
    )
    src, dst = rmat_edges(params, permute=permute)
    want = CsrGraph.from_edges(src, dst, params.num_vertices, symmetric=symmetric, dedupe=dedupe)
    np.testing.assert_array_equal(graph.offsets, want.offsets)
    np.testing.assert_array_equal(graph.indices, want.indices)
    assert graph.offsets.dtype == want.offsets.dtype
    assert graph.symmetric == symmetric


def test_threaded_build_equals_the_single_thread_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many small tasks and row ranges over a thread pool give the arrays one thread gives."""
    alone = rmat(13, 8, 21)
    monkeypatch.setattr(_rmat_csr, "PARALLEL_MIN_EDGES", 1)
    monkeypatch.setattr(_rmat_csr, "TASK_EDGES", 1 << 12)
    monkeypatch.setattr(_rmat_csr, "STEP_EDGES", 1 << 9)
    monkeypatch.setattr(_rmat_csr, "BUCKET_KEYS", 1 << 8)  # 512 row ranges
    monkeypatch.setattr(_rmat_csr, "_threads", lambda: 4)
    threaded = rmat(13, 8, 21)
    np.testing.assert_array_equal(threaded.offsets, alone.offsets)
    np.testing.assert_array_equal(threaded.indices, alone.indices)
