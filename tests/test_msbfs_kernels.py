"""Multi-source BFS kernels: their CPU references, driven as a resident sequence is.

Each traversal runs the references in the order the module documents (init, the
optional output inits, then the two-level body until the state says done, then
surplus repeats that must change nothing, then the count), splitting batches larger
than 64 * W lanes over several traversals. Every lane is checked against SciPy's
unweighted shortest paths on fresh random graphs. Inputs are read-only, so a
reference that writes an ``in`` buffer fails loudly. Every kernel is also built with
NVRTC.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from kernel_builds import assert_builds_cleanly
from scipy.sparse import csgraph, csr_array

from vyre_async.algorithms import msbfs as _msbfs
from vyre_async.algorithms.msbfs import (
    MSBFS_HUB_LANE_EDGES,
    MSBFS_KERNELS,
    MSBFS_MAX_WORDS,
    MSBFS_STATE_WORDS,
    MSBFS_UNLIMITED,
    STATE_ACTIVE,
    STATE_DISCOVERED,
    STATE_DONE,
    STATE_LANES,
    STATE_LEVEL,
    STATE_LEVELS_RUN,
    STATE_LIVE,
    STATE_MAX_LEVEL,
    STATE_NEXT_LIVE,
    STATE_REACHED,
    STATE_WIDTH,
    msbfs_advance,
    msbfs_count,
    msbfs_expand,
    msbfs_expand_hubs,
    msbfs_hub_min_degree,
    msbfs_init,
    msbfs_init_levels,
    msbfs_init_targets,
    msbfs_record_levels,
    msbfs_record_targets,
)
from vyre_async.algorithms.msbfs import _kernels as msbfs_kernels_module
from vyre_async.graphs import CsrGraph
from vyre_async.kernels import Kernel

GARBAGE = np.uint64(0xDEAD_BEEF_F00D_CAFE)  # what init must overwrite


@dataclass(frozen=True)
class Graph:
    """A graph as the kernels take it (CSR and its transpose) and as SciPy takes it."""

    n: int
    src: np.ndarray
    dst: np.ndarray
    offsets: np.ndarray
    indices: np.ndarray
    in_offsets: np.ndarray
    in_indices: np.ndarray


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _graph(n: int, src: np.ndarray, dst: np.ndarray, *, symmetric: bool) -> Graph:
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    csr = CsrGraph.from_edges(src, dst, n, symmetric=symmetric)
    flipped = csr.transpose()
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return Graph(
        n,
        src,
        dst,
        _read_only(csr.offsets.astype(np.int64)),
        _read_only(csr.indices.copy()),
        _read_only(flipped.offsets.astype(np.int64)),
        _read_only(flipped.indices.copy()),
    )


def _random(rng: np.random.Generator, n: int, m: int, *, symmetric: bool) -> Graph:
    return _graph(n, rng.integers(0, n, m), rng.integers(0, n, m), symmetric=symmetric)


def _single_vertex(rng: np.random.Generator) -> Graph:
    return _graph(1, np.empty(0), np.empty(0), symmetric=True)


def _no_edges(rng: np.random.Generator) -> Graph:
    return _graph(int(rng.integers(2, 40)), np.empty(0), np.empty(0), symmetric=False)


def _self_loops(rng: np.random.Generator) -> Graph:
    n = int(rng.integers(50, 200))
    loops = rng.choice(n, n // 3, replace=False)
    src = np.concatenate([rng.integers(0, n, 2 * n), loops])
    return _graph(n, src, np.concatenate([rng.integers(0, n, 2 * n), loops]), symmetric=False)


def _components(rng: np.random.Generator) -> Graph:
    """Several random components on shuffled vertex ids, plus isolated vertices."""
    sizes = rng.integers(1, 60, 6)
    n = int(sizes.sum()) + 10
    perm = rng.permutation(n)
    src, dst, start = [], [], 0
    for size in sizes.tolist():
        src.append(perm[start + rng.integers(0, size, 2 * size)])
        dst.append(perm[start + rng.integers(0, size, 2 * size)])
        start += size
    return _graph(n, np.concatenate(src), np.concatenate(dst), symmetric=True)


def _star(rng: np.random.Generator) -> Graph:
    """A hub joined to every vertex plus sparse random edges: skewed degrees."""
    n = int(rng.integers(300, 1000))
    hub = int(rng.integers(0, n))
    others = np.delete(np.arange(n), hub)
    src = np.concatenate([np.full(n - 1, hub), rng.integers(0, n, n // 2)])
    return _graph(n, src, np.concatenate([others, rng.integers(0, n, n // 2)]), symmetric=True)


def _path(rng: np.random.Generator) -> Graph:
    """A long shuffled path with a few chords: many levels."""
    n = int(rng.integers(100, 400))
    perm = rng.permutation(n)
    chords = rng.integers(0, n, (2, 5))
    src = np.concatenate([perm[:-1], chords[0]])
    return _graph(n, src, np.concatenate([perm[1:], chords[1]]), symmetric=True)


def _dense(rng: np.random.Generator) -> Graph:
    n = int(rng.integers(200, 500))
    return _random(rng, n, 8 * n, symmetric=True)


def _directed(rng: np.random.Generator) -> Graph:
    n = int(rng.integers(150, 400))
    return _random(rng, n, int(rng.integers(n, 3 * n)), symmetric=False)


SHAPES: dict[str, Callable[[np.random.Generator], Graph]] = {
    "single_vertex": _single_vertex,
    "no_edges": _no_edges,
    "self_loops": _self_loops,
    "components": _components,
    "star": _star,
    "path": _path,
    "dense": _dense,
    "directed": _directed,
}


def _call(kernel: Kernel, arrays: dict[str, np.ndarray], **scalars: object) -> None:
    """One launch as the CPU backend makes it: bind (validates), zero outputs, run."""
    call = kernel.bind(arrays, scalars)
    for p in kernel.buffer_params:
        if p.role == "out":
            arrays[p.name].fill(0)
    kernel.reference(arrays, call.scalars)


def _u64(state: np.ndarray, index: int, count: int = 1) -> np.ndarray:
    return state[index : index + 2 * count].view(np.uint64)


@dataclass
class Traversal:
    """What one traversal left behind: per-lane outputs and the state words."""

    counts: np.ndarray
    target_levels: np.ndarray | None
    levels: np.ndarray | None
    state: np.ndarray


def _traverse(
    graph: Graph,
    sources: np.ndarray,
    *,
    words: int,
    max_level: int = MSBFS_UNLIMITED,
    targets: np.ndarray | None = None,
    full_levels: bool = False,
    extra_repeats: int = 2,
) -> Traversal:
    """One traversal of ``len(sources)`` lanes, in the documented step order."""
    n, lanes = graph.n, sources.size
    sources = _read_only(sources.astype(np.int32))
    visited = np.full(n * words, GARBAGE, dtype=np.uint64)
    a = np.full(n * words, GARBAGE, dtype=np.uint64)
    b = np.full(n * words, GARBAGE, dtype=np.uint64)
    state = np.full(MSBFS_STATE_WORDS, 777, dtype=np.int32)
    lengths = {"offsets": graph.offsets, "sources": sources}
    _call(
        msbfs_init,
        {**lengths, "visited": visited, "frontier": a, "next": b, "state": state},
        max_level=max_level,
    )
    outputs: dict[str, np.ndarray] = {}
    if targets is not None:
        targets = _read_only(targets.astype(np.int32))
        outputs["target_levels"] = np.full(lanes * targets.size, 12345, dtype=np.int32)
        _call(
            msbfs_init_targets,
            {
                "sources": sources,
                "targets": targets,
                "target_levels": outputs["target_levels"],
                "state": _read_only(state.view()),
            },
        )
    if full_levels:
        outputs["levels"] = np.full(lanes * n, 12345, dtype=np.int32)
        _call(
            msbfs_init_levels,
            {**lengths, "levels": outputs["levels"], "state": _read_only(state.view())},
        )

    def half(frontier: np.ndarray, following: np.ndarray) -> None:
        pull = {
            "in_offsets": graph.in_offsets,
            "in_indices": graph.in_indices,
            "frontier": _read_only(frontier.view()),
            "next": following,
            "visited": visited,
            "state": state,
        }
        _call(msbfs_expand, pull)
        _call(msbfs_expand_hubs, pull)
        seen = {
            "offsets": graph.offsets,
            "next": _read_only(following.view()),
            "state": _read_only(state.view()),
        }
        if targets is not None:
            record = {**seen, "targets": targets, "target_levels": outputs["target_levels"]}
            _call(msbfs_record_targets, record)
        if full_levels:
            _call(msbfs_record_levels, {**seen, "levels": outputs["levels"]})
        _call(msbfs_advance, {"state": state})

    repeats = 0
    while not state[STATE_DONE]:
        assert repeats <= n + 1, "the traversal did not finish within n + 1 levels"
        half(a, b)
        half(b, a)
        repeats += 1
    watched: list[np.ndarray] = [visited, state, *outputs.values()]
    done = [x.copy() for x in watched]
    for _ in range(extra_repeats):  # a repeated sequence overshoots; that must be harmless
        half(a, b)
        half(b, a)
    for before, after in zip(done, watched, strict=True):
        np.testing.assert_array_equal(after, before)
    counts = np.full(lanes, -5, dtype=np.int32)  # an "out": _call zeroes it, as a backend does
    _call(msbfs_count, {**lengths, "visited": _read_only(visited.view()), "counts": counts})
    target_levels = outputs.get("target_levels")
    levels = outputs.get("levels")
    return Traversal(
        counts,
        None if target_levels is None or targets is None else target_levels.reshape(lanes, -1),
        None if levels is None else levels.reshape(lanes, n),
        state,
    )


@dataclass
class BatchResult:
    """Per-query outputs of a batch run as one or more traversals."""

    counts: np.ndarray
    target_levels: np.ndarray | None
    levels: np.ndarray | None
    traversals: list[Traversal]


def _run_batch(
    graph: Graph,
    sources: np.ndarray,
    *,
    words: int,
    max_level: int = MSBFS_UNLIMITED,
    targets: np.ndarray | None = None,
    full_levels: bool = False,
) -> BatchResult:
    """Split the queries into traversals of 64 * words lanes, the last padded with -1."""
    lanes = 64 * words
    runs = []
    for start in range(0, sources.size, lanes):
        chunk = np.full(lanes, -1, dtype=np.int32)
        part = sources[start : start + lanes]
        chunk[: part.size] = part
        run = _traverse(
            graph,
            chunk,
            words=words,
            max_level=max_level,
            targets=targets,
            full_levels=full_levels,
        )
        runs.append((part.size, run))

    def gather(pick: Callable[[Traversal], np.ndarray | None]) -> np.ndarray | None:
        parts = []
        for size, run in runs:
            part = pick(run)
            if part is None:
                return None
            parts.append(part[:size])
        return np.concatenate(parts)

    counts = gather(lambda r: r.counts)
    assert counts is not None
    return BatchResult(
        counts,
        gather(lambda r: r.target_levels),
        gather(lambda r: r.levels),
        [run for _, run in runs],
    )


def _scipy_distances(graph: Graph, sources: np.ndarray) -> np.ndarray:
    """SciPy's unweighted distances from each source (one row each), -1 where unreachable."""
    matrix = csr_array((np.ones(graph.src.size), (graph.src, graph.dst)), shape=(graph.n, graph.n))
    unique, inverse = np.unique(sources, return_inverse=True)
    dist = csgraph.shortest_path(matrix, directed=True, unweighted=True, indices=unique)
    dist = np.atleast_2d(dist)[inverse.reshape(-1)]
    return np.where(np.isinf(dist), -1, dist).astype(np.int32)


BATCHES = ["1", "2", "63", "64", "65", "64W", "64W+3"]


def _batch_size(batch: str, words: int) -> int:
    return {"64W": 64 * words, "64W+3": 64 * words + 3}.get(batch) or int(batch)


def _sources(rng: np.random.Generator, graph: Graph, count: int) -> np.ndarray:
    """Random sources, with repeats once there are more queries than a few."""
    sources = rng.integers(0, graph.n, count).astype(np.int32)
    if count >= 3:
        sources[-1] = sources[0]  # always at least one duplicate in larger batches
    return sources


# ---------------------------------------------------------------------- correctness


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("words", [1, 2, 3])
@pytest.mark.parametrize("batch", BATCHES)
def test_msbfs_full_levels_match_scipy_for_every_query(
    batch: str, words: int, directed: bool, rng: np.random.Generator
) -> None:
    """Every query's full levels equal SciPy's distances, across one or more traversals."""
    graph = _directed(rng) if directed else _random(rng, 300, 500, symmetric=True)
    sources = _sources(rng, graph, _batch_size(batch, words))

    result = _run_batch(graph, sources, words=words, full_levels=True)

    assert result.levels is not None
    np.testing.assert_array_equal(result.levels, _scipy_distances(graph, sources))


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("words", [1, 2, 3])
@pytest.mark.parametrize("batch", BATCHES)
def test_msbfs_counts_equal_reachable_vertices_per_query(
    batch: str, words: int, directed: bool, rng: np.random.Generator
) -> None:
    """Counts alone (no levels asked for) equal the number of finite SciPy distances."""
    graph = _directed(rng) if directed else _random(rng, 300, 400, symmetric=True)
    sources = _sources(rng, graph, _batch_size(batch, words))

    result = _run_batch(graph, sources, words=words)

    expected = np.count_nonzero(_scipy_distances(graph, sources) >= 0, axis=1)
    np.testing.assert_array_equal(result.counts, expected)
    assert result.levels is None
    assert result.target_levels is None


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("words", [1, 2, 3])
def test_msbfs_target_levels_equal_distances_at_the_targets(
    words: int, directed: bool, rng: np.random.Generator
) -> None:
    """Target levels equal SciPy's distances there; unreachable targets are -1."""
    graph = _directed(rng) if directed else _components(rng)
    sources = _sources(rng, graph, 64 * words + 3)
    dist = _scipy_distances(graph, sources)
    unreachable = np.flatnonzero((dist < 0).any(axis=0))
    picks = rng.integers(0, graph.n, 6)
    # A source, a repeated target and (where the graph has one) an unreachable vertex.
    targets = np.concatenate([picks, picks[:1], sources[:1], unreachable[:2]]).astype(np.int32)

    result = _run_batch(graph, sources, words=words, targets=targets)

    assert result.target_levels is not None
    np.testing.assert_array_equal(result.target_levels, dist[:, targets])


def test_msbfs_targets_outside_the_graph_stay_unreached(rng: np.random.Generator) -> None:
    """A target id outside [0, V) gets -1 in every lane; the others are unaffected."""
    graph = _dense(rng)
    sources = _sources(rng, graph, 20)
    targets = np.array([-1, graph.n, 0, 2**31 - 1], dtype=np.int32)

    result = _run_batch(graph, sources, words=1, targets=targets)

    assert result.target_levels is not None
    np.testing.assert_array_equal(result.target_levels[:, [0, 1, 3]], -1)
    np.testing.assert_array_equal(
        result.target_levels[:, 2], _scipy_distances(graph, sources)[:, 0]
    )


@pytest.mark.parametrize("words", [1, 2, 3])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_msbfs_levels_match_scipy_on_every_graph_shape(
    shape: str, words: int, rng: np.random.Generator
) -> None:
    """Full levels match SciPy on one vertex, no edges, self loops, components, hubs, paths."""
    graph = SHAPES[shape](rng)
    sources = _sources(rng, graph, int(rng.integers(1, 64 * words + 1)))

    result = _run_batch(graph, sources, words=words, full_levels=True)

    assert result.levels is not None
    np.testing.assert_array_equal(result.levels, _scipy_distances(graph, sources))


@pytest.mark.parametrize("k", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("shape", ["components", "path", "star", "directed"])
def test_msbfs_max_level_limits_every_query_to_k_hops(
    shape: str, k: int, rng: np.random.Generator
) -> None:
    """With max_level=k, levels, targets and counts cover exactly the vertices within k hops."""
    graph = SHAPES[shape](rng)
    sources = _sources(rng, graph, 100)
    dist = _scipy_distances(graph, sources)
    expected = np.where(dist <= k, dist, -1)
    targets = rng.integers(0, graph.n, 8).astype(np.int32)

    result = _run_batch(graph, sources, words=2, max_level=k, targets=targets, full_levels=True)

    assert result.levels is not None
    assert result.target_levels is not None
    np.testing.assert_array_equal(result.levels, expected)
    np.testing.assert_array_equal(result.target_levels, expected[:, targets])
    np.testing.assert_array_equal(result.counts, np.count_nonzero(expected >= 0, axis=1))
    (run,) = result.traversals
    deepest = int(dist.max())
    # Stopped by the limit (no empty expansion) or by the graph (one empty expansion).
    assert run.state[STATE_LEVELS_RUN] == (k if deepest >= k else deepest + 1)


def _hub_graph(rng: np.random.Generator, words: int) -> tuple[Graph, np.ndarray]:
    """A directed graph whose few hubs have in-degrees just above and well above hub_min."""
    hub_min = msbfs_hub_min_degree(words)
    n = 3 * hub_min
    hubs = rng.choice(n, 3, replace=False)
    degrees = [hub_min, hub_min + int(rng.integers(1, hub_min)), 2 * hub_min + 7]
    src = [rng.integers(0, n, 2 * n)]
    dst = [rng.integers(0, n, 2 * n)]
    for hub, degree in zip(hubs.tolist(), degrees, strict=True):
        src.append(rng.choice(n, degree, replace=False))
        dst.append(np.full(degree, hub))
        src.append(np.full(20, hub))  # the hubs lead on, so their levels matter
        dst.append(rng.integers(0, n, 20))
    return _graph(n, np.concatenate(src), np.concatenate(dst), symmetric=False), hubs


@pytest.mark.parametrize("words", [1, 2, 3])
def test_msbfs_hub_in_lists_give_scipy_levels(words: int, rng: np.random.Generator) -> None:
    """Vertices with in-degree >= hub_min, pulled by msbfs_expand_hubs, get SciPy's levels."""
    graph, hubs = _hub_graph(rng, words)
    assert (np.diff(graph.in_offsets)[hubs] >= msbfs_hub_min_degree(words)).all()
    sources = _sources(rng, graph, 64 * words)

    result = _run_batch(graph, sources, words=words, full_levels=True)

    assert result.levels is not None
    dist = _scipy_distances(graph, sources)
    np.testing.assert_array_equal(result.levels, dist)
    assert (dist[:, hubs] > 0).any()  # the hubs were discovered, not just sources


def test_msbfs_expand_leaves_hubs_to_expand_hubs(rng: np.random.Generator) -> None:
    """msbfs_expand zeroes a hub's next words and leaves its visited words unchanged."""
    graph, hubs = _hub_graph(rng, 1)
    n = graph.n
    sources = np.full(64, -1, dtype=np.int32)
    sources[:40] = rng.integers(0, n, 40)
    visited, a, b = (np.zeros(n, dtype=np.uint64) for _ in range(3))
    state = np.zeros(MSBFS_STATE_WORDS, dtype=np.int32)
    _call(
        msbfs_init,
        {
            "offsets": graph.offsets,
            "sources": sources,
            "visited": visited,
            "frontier": a,
            "next": b,
            "state": state,
        },
        max_level=MSBFS_UNLIMITED,
    )
    b.fill(GARBAGE)
    before = visited.copy()
    pull = {
        "in_offsets": graph.in_offsets,
        "in_indices": graph.in_indices,
        "frontier": _read_only(a.view()),
        "next": b,
        "visited": visited,
        "state": state,
    }

    _call(msbfs_expand, pull)

    np.testing.assert_array_equal(b[hubs], 0)
    np.testing.assert_array_equal(visited[hubs], before[hubs])
    _call(msbfs_expand_hubs, pull)
    dist = _scipy_distances(graph, sources[:40])
    reached = np.zeros(n, dtype=np.uint64)
    for lane in np.flatnonzero((dist == 1).any(axis=1)):
        reached[dist[lane] == 1] |= np.uint64(1) << np.uint64(lane)
    np.testing.assert_array_equal(b, reached)


def test_msbfs_duplicate_sources_get_identical_lanes(rng: np.random.Generator) -> None:
    """The same source in many lanes (in one word and across words) gives each its answer."""
    graph = _directed(rng)
    source = int(rng.integers(0, graph.n))
    sources = np.full(128, -1, dtype=np.int32)
    sources[[0, 1, 5, 63, 64, 100, 127]] = source
    sources[[2, 70]] = rng.integers(0, graph.n, 2)
    targets = rng.integers(0, graph.n, 5).astype(np.int32)

    run = _traverse(graph, sources, words=2, targets=targets, full_levels=True)

    used = np.flatnonzero(sources >= 0)
    dist = _scipy_distances(graph, sources[used])
    assert run.levels is not None
    assert run.target_levels is not None
    np.testing.assert_array_equal(run.levels[used], dist)
    np.testing.assert_array_equal(run.target_levels[used], dist[:, targets])
    np.testing.assert_array_equal(run.counts[used], np.count_nonzero(dist >= 0, axis=1))


def test_msbfs_unused_lanes_reach_nothing(rng: np.random.Generator) -> None:
    """Lanes whose source is -1 or outside [0, V) get count 0 and -1 everywhere."""
    graph = _dense(rng)
    sources = rng.integers(0, graph.n, 192).astype(np.int32)
    unused = rng.choice(192, 40, replace=False)
    sources[unused] = rng.choice([-1, -7, graph.n, 2**31 - 1], unused.size)
    targets = rng.integers(0, graph.n, 4).astype(np.int32)

    run = _traverse(graph, sources, words=3, targets=targets, full_levels=True)

    assert run.levels is not None
    assert run.target_levels is not None
    np.testing.assert_array_equal(run.counts[unused], 0)
    np.testing.assert_array_equal(run.levels[unused], -1)
    np.testing.assert_array_equal(run.target_levels[unused], -1)
    used = np.setdiff1d(np.arange(192), unused)
    np.testing.assert_array_equal(run.levels[used], _scipy_distances(graph, sources[used]))
    assert run.state[STATE_LANES] == used.size


def test_msbfs_lanes_beyond_64_w_are_not_traversed(rng: np.random.Generator) -> None:
    """With more sources bound than 64 * W lanes, the extra lanes reach nothing."""
    graph = _dense(rng)
    sources = rng.integers(0, graph.n, 64 + 10).astype(np.int32)
    targets = sources[:3].copy()

    run = _traverse(graph, sources, words=1, targets=targets, full_levels=True)

    assert run.levels is not None
    assert run.target_levels is not None
    np.testing.assert_array_equal(run.counts[64:], 0)
    np.testing.assert_array_equal(run.levels[64:], -1)
    np.testing.assert_array_equal(run.target_levels[64:], -1)
    np.testing.assert_array_equal(run.levels[:64], _scipy_distances(graph, sources[:64]))


def test_msbfs_no_valid_source_is_done_at_init(rng: np.random.Generator) -> None:
    """A traversal whose lanes are all unused is done at once, with nothing reached."""
    graph = _dense(rng)

    run = _traverse(graph, np.full(64, -1, dtype=np.int32), words=1, full_levels=True)

    assert run.state[STATE_DONE] == 1
    assert run.state[STATE_LEVELS_RUN] == 0
    np.testing.assert_array_equal(run.counts, 0)
    assert run.levels is not None
    np.testing.assert_array_equal(run.levels, -1)


@pytest.mark.parametrize("shape", ["components", "path", "directed"])
def test_msbfs_state_reached_equals_sum_of_counts(shape: str, rng: np.random.Generator) -> None:
    """The state's reached pairs equal the sum of the lane counts and SciPy's reach."""
    graph = SHAPES[shape](rng)
    sources = _sources(rng, graph, 150)

    run = _traverse(graph, sources, words=3)

    reach = int(np.count_nonzero(_scipy_distances(graph, sources) >= 0))
    assert int(_u64(run.state, STATE_REACHED)[0]) == reach == int(run.counts.sum())
    assert int(_u64(run.state, STATE_DISCOVERED)[0]) == 0


@pytest.mark.parametrize("shape", ["components", "path", "star"])
def test_msbfs_runs_one_empty_expansion_after_the_deepest_level(
    shape: str, rng: np.random.Generator
) -> None:
    """A full traversal stops at the deepest level, after one expansion that finds nothing."""
    graph = SHAPES[shape](rng)
    sources = _sources(rng, graph, 70)

    run = _traverse(graph, sources, words=2)

    deepest = int(_scipy_distances(graph, sources).max())
    assert run.state[STATE_LEVEL] == deepest
    assert run.state[STATE_LEVELS_RUN] == deepest + 1


# -------------------------------------------------------------------- state handling


def test_msbfs_init_writes_the_documented_state(rng: np.random.Generator) -> None:
    """msbfs_init: source bits in visited and frontier, next cleared, the state words set."""
    n, words = int(rng.integers(5, 50)), 2
    sources = np.full(128, -1, dtype=np.int32)
    sources[[0, 3, 64, 127]] = rng.integers(0, n, 4)
    sources[5] = sources[3]  # a duplicate in the same word: both bits set
    graph = _graph(n, np.empty(0), np.empty(0), symmetric=True)
    for max_level, done in ((0, 1), (-3, 1), (1, 0), (MSBFS_UNLIMITED, 0)):
        visited, a, b = (np.full(n * words, GARBAGE, dtype=np.uint64) for _ in range(3))
        state = np.full(MSBFS_STATE_WORDS, 9, dtype=np.int32)

        _call(
            msbfs_init,
            {
                "offsets": graph.offsets,
                "sources": sources,
                "visited": visited,
                "frontier": a,
                "next": b,
                "state": state,
            },
            max_level=max_level,
        )

        expected = np.zeros((n, words), dtype=np.uint64)
        for lane in (0, 3, 5, 64, 127):
            expected[sources[lane], lane // 64] |= np.uint64(1) << np.uint64(lane % 64)
        np.testing.assert_array_equal(visited.reshape(n, words), expected)
        np.testing.assert_array_equal(a, visited)
        np.testing.assert_array_equal(b, 0)
        active = np.zeros(MSBFS_MAX_WORDS, dtype=np.uint64)
        active[0] = (1 << 0) | (1 << 3) | (1 << 5)
        active[1] = (1 << 0) | (1 << 63)
        np.testing.assert_array_equal(_u64(state, STATE_ACTIVE, MSBFS_MAX_WORDS), active)
        np.testing.assert_array_equal(_u64(state, STATE_LIVE, MSBFS_MAX_WORDS), active)
        np.testing.assert_array_equal(_u64(state, STATE_NEXT_LIVE, MSBFS_MAX_WORDS), 0)
        header = [0, done, max_level, 0, words, 5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0]
        assert state[:STATE_ACTIVE].tolist() == header


@pytest.mark.parametrize(
    ("n", "vw"),
    [(10, 15), (10, 10 * (MSBFS_MAX_WORDS + 1)), (0, 0), (5, 0)],
    ids=["not_a_multiple", "too_wide", "no_vertices", "no_words"],
)
def test_msbfs_invalid_word_count_leaves_nothing_to_traverse(n: int, vw: int) -> None:
    """Bitsets that are not 1..MAX_WORDS words per vertex: width 0, done, bitsets cleared."""
    offsets = _read_only(np.zeros(n + 1, dtype=np.int64))
    sources = _read_only(np.zeros(64, dtype=np.int32))
    visited, a, b = (np.full(vw, GARBAGE, dtype=np.uint64) for _ in range(3))
    state = np.full(MSBFS_STATE_WORDS, 3, dtype=np.int32)
    counts = np.full(64, 8, dtype=np.int32)

    _call(
        msbfs_init,
        {
            "offsets": offsets,
            "sources": sources,
            "visited": visited,
            "frontier": a,
            "next": b,
            "state": state,
        },
        max_level=MSBFS_UNLIMITED,
    )
    _call(
        msbfs_count,
        {"offsets": offsets, "sources": sources, "visited": visited, "counts": counts},
    )

    assert state[STATE_WIDTH] == 0
    assert state[STATE_DONE] == 1
    assert state[STATE_LANES] == 0
    for bitset in (visited, a, b):
        np.testing.assert_array_equal(bitset, 0)
    np.testing.assert_array_equal(counts, 0)


def _state(level: int, discovered: int, next_live: list[int], max_level: int) -> np.ndarray:
    state = np.zeros(MSBFS_STATE_WORDS, dtype=np.int32)
    state[STATE_LEVEL] = level
    state[STATE_MAX_LEVEL] = max_level
    state[STATE_LEVELS_RUN] = level
    _u64(state, STATE_DISCOVERED)[0] = discovered
    _u64(state, STATE_REACHED)[0] = 100
    _u64(state, STATE_LIVE, MSBFS_MAX_WORDS)[:] = 0b1111
    _u64(state, STATE_NEXT_LIVE, MSBFS_MAX_WORDS)[: len(next_live)] = next_live
    return state


def test_msbfs_advance_moves_gained_lanes_to_live() -> None:
    """After a level that found pairs: level + 1, reached += found, live = lanes gained."""
    state = _state(level=2, discovered=7, next_live=[0b0110, 2**63], max_level=99)

    _call(msbfs_advance, {"state": state})

    assert state[STATE_LEVEL] == 3
    assert state[STATE_LEVELS_RUN] == 3
    assert state[STATE_DONE] == 0
    assert int(_u64(state, STATE_REACHED)[0]) == 107
    assert int(_u64(state, STATE_DISCOVERED)[0]) == 0
    live = _u64(state, STATE_LIVE, MSBFS_MAX_WORDS)
    assert live[:3].tolist() == [0b0110, 2**63, 0]
    np.testing.assert_array_equal(_u64(state, STATE_NEXT_LIVE, MSBFS_MAX_WORDS), 0)


def test_msbfs_advance_stops_when_nothing_was_found() -> None:
    """A level that found nothing sets done and only counts the expansion."""
    state = _state(level=4, discovered=0, next_live=[], max_level=99)
    before = state.copy()

    _call(msbfs_advance, {"state": state})

    assert state[STATE_DONE] == 1
    assert state[STATE_LEVELS_RUN] == before[STATE_LEVELS_RUN] + 1
    changed = np.flatnonzero(state != before).tolist()
    assert changed == [STATE_DONE, STATE_LEVELS_RUN]


def test_msbfs_advance_stops_at_max_level() -> None:
    """Reaching max_level sets done after counting what the level found."""
    state = _state(level=2, discovered=5, next_live=[1], max_level=3)

    _call(msbfs_advance, {"state": state})

    assert state[STATE_LEVEL] == 3
    assert state[STATE_DONE] == 1
    assert int(_u64(state, STATE_REACHED)[0]) == 105


def test_msbfs_kernels_do_nothing_once_done(rng: np.random.Generator) -> None:
    """With the done word set, every repeated kernel leaves bitsets, outputs and state alone."""
    graph = _dense(rng)
    n, words = graph.n, 2
    visited, a, b = (rng.integers(0, 2**63, n * words, dtype=np.uint64) for _ in range(3))
    state = _state(level=1, discovered=9, next_live=[3, 5], max_level=99)
    state[STATE_DONE] = 1
    targets = _read_only(rng.integers(0, n, 5).astype(np.int32))
    target_levels = rng.integers(-1, 9, 64 * words * 5).astype(np.int32)
    levels = rng.integers(-1, 9, 64 * words * n).astype(np.int32)
    before = [x.copy() for x in (visited, a, b, state, target_levels, levels)]
    pull = {
        "in_offsets": graph.in_offsets,
        "in_indices": graph.in_indices,
        "frontier": _read_only(a.view()),
        "next": b,
        "visited": visited,
        "state": state,
    }
    seen = {
        "offsets": graph.offsets,
        "next": _read_only(b.view()),
        "state": _read_only(state.view()),
    }

    _call(msbfs_expand, pull)
    _call(msbfs_expand_hubs, pull)
    _call(msbfs_record_targets, {**seen, "targets": targets, "target_levels": target_levels})
    _call(msbfs_record_levels, {**seen, "levels": levels})
    _call(msbfs_advance, {"state": state})

    for now, then in zip((visited, a, b, state, target_levels, levels), before, strict=True):
        np.testing.assert_array_equal(now, then)


# ------------------------------------------------------------------------ signatures


def test_msbfs_docstring_lists_the_state_layout_of_the_constants() -> None:
    """Every "index STATE_NAME" line of the module docstring matches that constant."""
    rows = [line.split() for line in (msbfs_kernels_module.__doc__ or "").splitlines()]
    listed = {row[1]: int(row[0]) for row in rows if len(row) > 1 and row[0].isdigit()}

    assert len(listed) == 11
    for name, index in listed.items():
        assert getattr(_msbfs, name) == index, name
    assert f"``MSBFS_STATE_WORDS`` ({MSBFS_STATE_WORDS})" in (msbfs_kernels_module.__doc__ or "")


def test_msbfs_kernels_derive_every_size_from_bound_lengths() -> None:
    """Bitsets are length "vw" and no kernel takes a width or size scalar from the caller."""
    for kernel in MSBFS_KERNELS:
        for p in kernel.buffer_params:
            if p.dtype == np.uint64:
                assert p.length == "vw", (kernel.name, p.name)
        caller_scalars = {p.name for p in kernel.scalar_params if not p.derived}
        assert caller_scalars <= {"max_level"}, kernel.name


@pytest.mark.parametrize("words", [1, 2, 3, 16])
def test_msbfs_launch_rules_give_one_warp_per_task(words: int) -> None:
    """expand: a warp per 32/group vertices; hubs: a warp per chunk; both capped, or empty."""
    group = 1 << (words - 1).bit_length()
    n, e = 1000, 50_000
    graph = _read_only(np.zeros(n + 1, dtype=np.int64))
    common = {
        "in_offsets": graph,
        "in_indices": np.zeros(e, dtype=np.int32),
        "frontier": np.zeros(n * words, dtype=np.uint64),
        "next": np.zeros(n * words, dtype=np.uint64),
        "visited": np.zeros(n * words, dtype=np.uint64),
        "state": np.zeros(MSBFS_STATE_WORDS, dtype=np.int32),
    }
    expand = msbfs_expand.bind(common, {}).launch
    hubs = msbfs_expand_hubs.bind(common, {}).launch

    tiles = -(-n // (32 // group))
    chunks = -(-e // (MSBFS_HUB_LANE_EDGES // group))
    assert expand.grid[0] == -(-tiles * 32 // expand.threads_per_block)
    assert hubs.grid[0] == -(-chunks * 32 // hubs.threads_per_block)
    empty = msbfs_expand_hubs.bind({**common, "in_indices": np.zeros(0, np.int32)}, {})
    assert empty.launch.empty


# ---------------------------------------------------------------------------- NVRTC


@pytest.mark.usefixtures("private_kernel_cache")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kernel", MSBFS_KERNELS, ids=lambda k: k.name)
def test_msbfs_kernel_compiles_without_warnings(kernel: Kernel, arch: str) -> None:
    """Each multi-source BFS kernel builds to a CUBIN with NVRTC, and NVRTC has nothing to say."""
    assert_builds_cleanly(kernel, arch)
