"""BFS and PageRank kernels: their CPU references, driven as resident sequences are.

Each traversal runs the references in the documented order (the init kernel once,
then the repeated body, well past the point where the state says done) and is
checked against SciPy's shortest paths, NetworkX's PageRank or a float64 power
iteration written here, on fresh random graphs. Inputs are read-only, so a reference
that writes an ``in`` buffer fails loudly. Every kernel is also built with NVRTC.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import networkx as nx
import numpy as np
import pytest
from kernel_builds import assert_builds_cleanly
from scipy.sparse import csgraph, csr_array

from vyre_async.algorithms.bfs import (
    BFS_KERNELS,
    BFS_STATE_WORDS,
    BFS_UNLIMITED,
    STATE_DIRECTION,
    STATE_DISCOVERED,
    STATE_DONE,
    STATE_FRONTIER,
    STATE_LEVEL,
    STATE_LEVELS_RUN,
    STATE_MAX_LEVEL,
    STATE_REACHED,
    bfs_advance,
    bfs_bottom_up,
    bfs_init,
    bfs_top_down,
)
from vyre_async.algorithms.pagerank import (
    PAGERANK_KERNELS,
    PR_STATE_WORDS,
    STATE_ITERATIONS,
    STATE_LAST_DIFF,
    pr_check,
    pr_dangling,
    pr_gather,
    pr_init,
    pr_renumber,
    pr_update,
)
from vyre_async.algorithms.pagerank import STATE_DONE as PR_DONE
from vyre_async.kernels import Kernel


@dataclass(frozen=True)
class Graph:
    """A CSR graph as the kernels take it, and its transpose."""

    n: int
    src: np.ndarray
    dst: np.ndarray

    def csr(self, transposed: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Read-only (offsets int64, indices int32) of the graph or of its transpose."""
        rows, cols = (self.dst, self.src) if transposed else (self.src, self.dst)
        order = np.lexsort((cols, rows))
        offsets = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.n), out=offsets[1:])
        return _read_only(offsets), _read_only(cols[order].astype(np.int32))

    def out_degree(self) -> np.ndarray:
        """Read-only int32 out-degrees."""
        return _read_only(np.bincount(self.src, minlength=self.n).astype(np.int32))


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _graph(n: int, src: np.ndarray, dst: np.ndarray, *, symmetric: bool) -> Graph:
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    # Unique edges: NetworkX's DiGraph keeps one of each, and PageRank is compared to it.
    edges = np.unique(np.stack([src, dst], axis=1), axis=0).reshape(-1, 2)
    return Graph(n, edges[:, 0].copy(), edges[:, 1].copy())


def _random(rng: np.random.Generator, n: int, m: int, *, symmetric: bool) -> Graph:
    return _graph(n, rng.integers(0, n, m), rng.integers(0, n, m), symmetric=symmetric)


def _single_vertex(rng: np.random.Generator) -> Graph:
    return _graph(1, np.empty(0), np.empty(0), symmetric=True)


def _self_loops(rng: np.random.Generator) -> Graph:
    n = int(rng.integers(50, 200))
    loops = rng.choice(n, n // 3, replace=False)
    base = _random(rng, n, 2 * n, symmetric=True)
    return _graph(
        n, np.concatenate([base.src, loops]), np.concatenate([base.dst, loops]), symmetric=False
    )


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
    base = _random(rng, n, n // 2, symmetric=False)
    src = np.concatenate([np.full(n - 1, hub), base.src])
    return _graph(n, src, np.concatenate([others, base.dst]), symmetric=True)


def _path(rng: np.random.Generator) -> Graph:
    """A long shuffled path with a few chords: many levels."""
    n = int(rng.integers(100, 400))
    perm = rng.permutation(n)
    chords = rng.integers(0, n, (2, 5))
    src = np.concatenate([perm[:-1], chords[0]])
    return _graph(n, src, np.concatenate([perm[1:], chords[1]]), symmetric=True)


def _dense(rng: np.random.Generator) -> Graph:
    n = int(rng.integers(200, 600))
    return _random(rng, n, 8 * n, symmetric=True)


UNDIRECTED: dict[str, Callable[[np.random.Generator], Graph]] = {
    "single_vertex": _single_vertex,
    "self_loops": _self_loops,
    "components": _components,
    "star": _star,
    "path": _path,
    "dense": _dense,
}


def _call(kernel: Kernel, arrays: dict[str, np.ndarray], **scalars: object) -> None:
    """One launch as the CPU backend makes it: bind (validates), zero outputs, run."""
    call = kernel.bind(arrays, scalars)
    for p in kernel.buffer_params:
        if p.role == "out":
            arrays[p.name].fill(0)
    kernel.reference(arrays, call.scalars)


@dataclass
class BfsRun:
    """What one traversal left behind."""

    levels: np.ndarray
    state: np.ndarray
    directions: list[int]


def _bfs(
    graph: Graph,
    source: int,
    *,
    max_level: int = BFS_UNLIMITED,
    bottom_up: int = 0,
    extra_repeats: int = 3,
) -> BfsRun:
    """``bfs_init`` once, then ``[top_down, bottom_up, advance]`` until done, and more."""
    offsets, indices = graph.csr()
    in_offsets, in_indices = graph.csr(transposed=True)
    levels = np.full(graph.n, 12345, dtype=np.int32)  # garbage: init must overwrite it
    state = np.full(BFS_STATE_WORDS, 777, dtype=np.int32)
    _call(bfs_init, {"levels": levels, "state": state}, source=source, max_level=max_level)
    directions = []
    steps = 0
    while not state[STATE_DONE]:
        assert steps <= graph.n + 1, "BFS did not finish within n + 1 levels"
        directions.append(int(state[STATE_DIRECTION]))
        _run_bfs_step(offsets, indices, in_offsets, in_indices, levels, state, bottom_up)
        steps += 1
    done_levels, done_state = levels.copy(), state.copy()
    for _ in range(extra_repeats):  # a repeated sequence overshoots; that must be harmless
        _run_bfs_step(offsets, indices, in_offsets, in_indices, levels, state, bottom_up)
    np.testing.assert_array_equal(levels, done_levels)
    np.testing.assert_array_equal(state, done_state)
    return BfsRun(levels, state, directions)


def _run_bfs_step(
    offsets: np.ndarray,
    indices: np.ndarray,
    in_offsets: np.ndarray,
    in_indices: np.ndarray,
    levels: np.ndarray,
    state: np.ndarray,
    bottom_up: int,
) -> None:
    common = {"levels": levels, "state": state}
    _call(bfs_top_down, {"offsets": offsets, "indices": indices, **common})
    _call(bfs_bottom_up, {"in_offsets": in_offsets, "in_indices": in_indices, **common})
    _call(bfs_advance, {"levels": _read_only(levels.view()), "state": state}, bottom_up=bottom_up)


def _scipy_distances(graph: Graph, source: int) -> np.ndarray:
    """Unweighted shortest-path lengths from SciPy, -1 where unreachable."""
    offsets, indices = graph.csr()
    matrix = csr_array(
        (np.ones(indices.size), indices, offsets), shape=(max(graph.n, 1), max(graph.n, 1))
    )
    dist = csgraph.shortest_path(matrix, directed=True, unweighted=True, indices=source)
    return np.where(np.isinf(dist), -1, dist).astype(np.int32)


def _sources(rng: np.random.Generator, graph: Graph) -> list[int]:
    hub = int(np.argmax(np.bincount(graph.src, minlength=graph.n)))
    return sorted({hub, *rng.integers(0, graph.n, 3).tolist()})


@pytest.mark.parametrize("bottom_up", [0, 1])
@pytest.mark.parametrize("shape", list(UNDIRECTED))
def test_bfs_levels_match_scipy_shortest_paths(
    shape: str, bottom_up: int, rng: np.random.Generator
) -> None:
    """A full BFS gives SciPy's unweighted distances (-1 unreachable) and reach count."""
    graph = UNDIRECTED[shape](rng)
    for source in _sources(rng, graph):
        expected = _scipy_distances(graph, source)

        run = _bfs(graph, source, bottom_up=bottom_up)

        np.testing.assert_array_equal(run.levels, expected, err_msg=f"source {source}")
        assert run.state[STATE_REACHED] == np.count_nonzero(expected >= 0)
        assert run.state[STATE_LEVEL] == expected.max()
        # Every level up to the deepest is expanded, then one more finds nothing.
        assert run.state[STATE_LEVELS_RUN] == expected.max() + 1
        assert run.state[STATE_DISCOVERED] == 0


@pytest.mark.parametrize("bottom_up", [0, 1])
def test_bfs_on_directed_graph_follows_edge_direction(
    bottom_up: int, rng: np.random.Generator
) -> None:
    """On a directed graph top-down (and bottom-up over the transpose) give SciPy's levels."""
    n = int(rng.integers(200, 800))
    graph = _random(rng, n, int(rng.integers(n, 4 * n)), symmetric=False)
    for source in _sources(rng, graph):
        expected = _scipy_distances(graph, source)

        run = _bfs(graph, source, bottom_up=bottom_up)

        np.testing.assert_array_equal(run.levels, expected, err_msg=f"source {source}")
        assert run.state[STATE_REACHED] == np.count_nonzero(expected >= 0)


def test_bfs_switches_to_bottom_up_on_a_skewed_graph(rng: np.random.Generator) -> None:
    """From a leaf of a star the frontier explodes: bottom-up runs, with the same levels."""
    graph = _star(rng)
    hub = int(np.argmax(np.bincount(graph.src, minlength=graph.n)))
    leaf = int(rng.choice(np.flatnonzero(np.arange(graph.n) != hub)))

    pushed = _bfs(graph, leaf, bottom_up=0)
    pulled = _bfs(graph, leaf, bottom_up=1)

    assert set(pushed.directions) == {0}
    assert 1 in pulled.directions
    np.testing.assert_array_equal(pulled.levels, pushed.levels)
    np.testing.assert_array_equal(pulled.levels, _scipy_distances(graph, leaf))
    np.testing.assert_array_equal(pulled.state[STATE_REACHED], pushed.state[STATE_REACHED])


@pytest.mark.parametrize("k", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("shape", ["components", "path", "star"])
def test_bfs_max_level_stops_after_k_hops(shape: str, k: int, rng: np.random.Generator) -> None:
    """With max_level=k exactly the vertices within k hops get their levels."""
    graph = UNDIRECTED[shape](rng)
    source = int(rng.integers(0, graph.n))
    dist = _scipy_distances(graph, source)
    expected = np.where(dist <= k, dist, -1)

    run = _bfs(graph, source, max_level=k, bottom_up=1)

    np.testing.assert_array_equal(run.levels, expected)
    assert run.state[STATE_REACHED] == np.count_nonzero(expected >= 0)
    assert run.state[STATE_MAX_LEVEL] == k
    deepest = int(dist.max())
    # Stopped by the limit (no empty expansion) or by the graph (one empty expansion).
    assert run.state[STATE_LEVELS_RUN] == (k if deepest >= k else deepest + 1)


@pytest.mark.parametrize("source", [-1, 7, 2**31 - 1])
def test_bfs_out_of_range_source_reaches_nothing(source: int) -> None:
    """A source outside [0, n) leaves every level at -1 and the state done, reached 0."""
    graph = _graph(7, np.arange(6), np.arange(1, 7), symmetric=True)

    run = _bfs(graph, source)

    np.testing.assert_array_equal(run.levels, np.full(7, -1, dtype=np.int32))
    assert run.state[STATE_DONE] == 1
    assert run.state[STATE_REACHED] == 0
    assert run.state[STATE_FRONTIER] == 0


def test_bfs_init_writes_the_documented_state(rng: np.random.Generator) -> None:
    """bfs_init: level 0 at the source only, and state [0, 0, done, 0, 1, max, 1, 0]."""
    n = int(rng.integers(1, 50))
    source = int(rng.integers(0, n))
    for max_level, done in ((0, 1), (-3, 1), (1, 0), (BFS_UNLIMITED, 0)):
        levels = np.zeros(n, dtype=np.int32)
        state = np.full(BFS_STATE_WORDS, 9, dtype=np.int32)

        _call(bfs_init, {"levels": levels, "state": state}, source=source, max_level=max_level)

        assert state.tolist() == [0, 0, done, 0, 1, max_level, 1, 0]
        assert np.flatnonzero(levels == 0).tolist() == [source]
        assert np.count_nonzero(levels == -1) == n - 1


def _advance(state: list[int], n: int, bottom_up: int) -> list[int]:
    words = np.array(state, dtype=np.int32)
    _call(bfs_advance, {"levels": np.zeros(n, dtype=np.int32), "state": words}, bottom_up=bottom_up)
    return [int(w) for w in words]


def test_bfs_advance_picks_direction_with_hysteresis() -> None:
    """Bottom-up above n/16 discovered, top-down again below n/64, never when not allowed."""
    n = 640  # n/16 = 40, n/64 = 10
    top, bottom = 0, 1
    # state: level, discovered, done, direction, reached, max_level, frontier, levels_run
    assert _advance([2, 41, 0, top, 5, 99, 3, 2], n, 1) == [3, 0, 0, bottom, 46, 99, 41, 3]
    assert _advance([2, 40, 0, top, 5, 99, 3, 2], n, 1)[STATE_DIRECTION] == top
    assert _advance([2, 11, 0, bottom, 5, 99, 3, 2], n, 1)[STATE_DIRECTION] == bottom
    assert _advance([2, 10, 0, bottom, 5, 99, 3, 2], n, 1)[STATE_DIRECTION] == bottom
    assert _advance([2, 9, 0, bottom, 5, 99, 3, 2], n, 1)[STATE_DIRECTION] == top
    assert _advance([2, 500, 0, top, 5, 99, 3, 2], n, 0)[STATE_DIRECTION] == top
    # Nothing discovered: done, and only the expansion is counted.
    assert _advance([2, 0, 0, bottom, 5, 99, 3, 2], n, 1) == [2, 0, 1, bottom, 5, 99, 3, 3]
    # The new level reaches max_level: done after counting what was found.
    assert _advance([2, 7, 0, top, 5, 3, 3, 2], n, 1) == [3, 0, 1, top, 12, 3, 7, 3]


def test_bfs_kernels_do_nothing_once_done(rng: np.random.Generator) -> None:
    """With the done word set, every BFS kernel leaves levels and state untouched."""
    graph = _dense(rng)
    offsets, indices = graph.csr()
    for direction in (0, 1):
        levels = np.full(graph.n, -1, dtype=np.int32)
        levels[0] = 0
        state = np.array([0, 3, 1, direction, 1, BFS_UNLIMITED, 1, 4], dtype=np.int32)
        before = (levels.copy(), state.copy())

        _run_bfs_step(offsets, indices, offsets, indices, levels, state, 1)

        np.testing.assert_array_equal(levels, before[0])
        np.testing.assert_array_equal(state, before[1])


# ---------------------------------------------------------------------------- PageRank


@dataclass
class PageRankRun:
    """Final ranks (from whichever buffer holds them) and the state words."""

    ranks: np.ndarray
    state: np.ndarray


def _pagerank(
    graph: Graph, rng: np.random.Generator, *, damping: float, tol: float, max_iter: int
) -> PageRankRun:
    """``pr_init`` on A, then the documented two-iteration body until done, and more.

    The shares are stored in a random order (any permutation must give the same
    ranks), with the in-lists renumbered to match by ``pr_renumber``.
    """
    in_offsets, graph_in_indices = graph.csr(transposed=True)
    out_degree = graph.out_degree()
    rank_of = rng.permutation(graph.n).astype(np.int32)
    in_indices = np.full(len(graph_in_indices), -1, dtype=np.int32)  # garbage: all written
    _call(
        pr_renumber,
        {"in_indices": graph_in_indices, "rank_of": rank_of, "renumbered": in_indices},
    )
    np.testing.assert_array_equal(in_indices, rank_of[graph_in_indices])
    a = np.full(graph.n, np.nan, dtype=np.float32)  # garbage: init must overwrite A
    b = np.full(graph.n, np.nan, dtype=np.float32)  # garbage: init must zero B
    state = np.full(PR_STATE_WORDS, 5.0, dtype=np.float32)
    contrib = np.full(graph.n, np.nan, dtype=np.float32)  # garbage: init must set it
    _call(
        pr_init,
        {
            "rank": a,
            "other": b,
            "contrib": contrib,
            "out_degree": out_degree,
            "rank_of": rank_of,
            "pr_state": state,
        },
        tol=tol,
        max_iter=max_iter,
    )

    def half(src: np.ndarray, dst: np.ndarray) -> None:
        _call(
            pr_dangling,
            {"rank": _read_only(src.view()), "out_degree": out_degree, "pr_state": state},
        )
        gather = {"in_offsets": in_offsets, "in_indices": in_indices, "sums": dst}
        shares = _read_only(contrib.view())
        _call(pr_gather, {**gather, "contrib": shares, "pr_state": _read_only(state.view())})
        update = {
            "rank_in": src,
            "rank_out": dst,
            "out_degree": out_degree,
            "rank_of": rank_of,
            "contrib": contrib,
        }
        _call(pr_update, {**update, "pr_state": state}, damping=damping)
        _call(pr_check, {"pr_state": state})

    for _ in range(max(0, max_iter) // 2 + 3):  # overshoots, as a repeated sequence does
        half(a, b)
        half(b, a)
    assert state[PR_DONE] == 1
    return PageRankRun(b if int(state[STATE_ITERATIONS]) % 2 else a, state)


def _power_iteration(graph: Graph, damping: float, iterations: int | None = None) -> np.ndarray:
    """float64 PageRank from a uniform start, dangling mass spread uniformly (as NetworkX)."""
    n = graph.n
    degree = np.bincount(graph.src, minlength=n).astype(np.float64)
    dangling = degree == 0
    x = np.full(n, 1.0 / n)
    for step in range(100_000):
        if iterations is not None and step == iterations:
            break
        share = np.divide(x, degree, out=np.zeros(n), where=~dangling)
        pulled = np.bincount(graph.dst, weights=share[graph.src], minlength=n)
        new = damping * (pulled + x[dangling].sum() / n) + (1.0 - damping) / n
        converged = np.abs(new - x).sum() < 1e-15
        x = new
        if converged and iterations is None:
            break
    return x


def _networkx_pagerank(graph: Graph, damping: float) -> np.ndarray:
    digraph = nx.DiGraph()
    digraph.add_nodes_from(range(graph.n))
    digraph.add_edges_from(zip(graph.src.tolist(), graph.dst.tolist(), strict=True))
    ranks = nx.pagerank(digraph, alpha=damping, tol=1e-12, max_iter=1000)
    return np.array([ranks[v] for v in range(graph.n)])


def _relative_error(ours: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(ours.astype(np.float64) - ref)) / np.max(ref))


PAGERANK_SHAPES: dict[str, Callable[[np.random.Generator], Graph]] = {
    "single_vertex": _single_vertex,
    "no_edges": lambda rng: _graph(
        int(rng.integers(2, 40)), np.empty(0), np.empty(0), symmetric=False
    ),
    "directed_dangling": lambda rng: _random(rng, 800, 1600, symmetric=False),
    "undirected": lambda rng: _random(rng, 600, 3000, symmetric=True),
    "self_loops": _self_loops,
    "components": _components,
    "star": _star,
}


#: The accuracy asked of float32 PageRank, relative to the top rank. A settled float32
#: iteration sits at a fixed point biased by rounding amplified up to 1/(1-d): measured
#: at most 6.6e-7 (d=0.85) and 3.1e-6 (d=0.95) over 150 random directed graphs.
F32_FLOOR = 1e-5
#: Largest L1 change float32 iterates may keep once settled (ranks alternating by an
#: ulp or two, about 2**-23 of the total mass); measured up to 1.9e-7 (star, d=0.95).
F32_DIFF_FLOOR = 4e-7


@pytest.mark.parametrize("damping", [0.5, 0.85, 0.95])
@pytest.mark.parametrize("shape", list(PAGERANK_SHAPES))
def test_pagerank_stopped_at_tol_is_within_its_error_bound_of_networkx(
    shape: str, damping: float, rng: np.random.Generator
) -> None:
    """With tol=1e-7 the error is at most d/(1-d) * last L1 change plus float32 rounding.

    The iteration contracts by d in L1, so stopping after a change of delta leaves at
    most d/(1-d) * delta; on sparse directed graphs that alone is up to 5e-5 of the
    top rank, in float64 as well. float32 may never get its change below 1e-7 (see
    F32_DIFF_FLOOR); then max_iter stops it.
    """
    graph = PAGERANK_SHAPES[shape](rng)
    expected = _networkx_pagerank(graph, damping)

    run = _pagerank(graph, rng, damping=damping, tol=1e-7, max_iter=1000)

    last_diff = float(run.state[STATE_LAST_DIFF])
    converged = run.state[STATE_ITERATIONS] < 1000
    assert (last_diff < 1e-7) if converged else (last_diff < F32_DIFF_FLOOR)
    error = float(np.max(np.abs(run.ranks.astype(np.float64) - expected)))
    bound = damping / (1 - damping) * last_diff + F32_FLOOR * float(expected.max())
    assert error <= bound
    assert run.ranks.dtype == np.float32
    assert abs(float(run.ranks.sum(dtype=np.float64)) - 1.0) <= 1e-5


@pytest.mark.parametrize("damping", [0.85, 0.95])
@pytest.mark.parametrize("shape", list(PAGERANK_SHAPES))
def test_pagerank_float32_settles_within_1e_5_of_networkx(
    shape: str, damping: float, rng: np.random.Generator
) -> None:
    """Run to the float32 limit (tol=0, 600 iterations): within 1e-5 of the top rank."""
    graph = PAGERANK_SHAPES[shape](rng)
    expected = _networkx_pagerank(graph, damping)

    run = _pagerank(graph, rng, damping=damping, tol=0.0, max_iter=600)

    assert run.state[STATE_ITERATIONS] == 600
    assert run.state[STATE_LAST_DIFF] < F32_DIFF_FLOOR
    assert _relative_error(run.ranks, expected) <= F32_FLOOR


def test_pagerank_of_a_large_hub_matches_float64_power_iteration(
    rng: np.random.Generator,
) -> None:
    """A hub pulling from 20k vertices keeps its digits: within 1e-5 of float64."""
    n = 20_000
    hub = int(rng.integers(0, n))
    base = _random(rng, n, 3 * n, symmetric=False)
    spokes = np.delete(np.arange(n), hub)
    graph = _graph(
        n,
        np.concatenate([spokes, base.src]),
        np.concatenate([np.full(n - 1, hub), base.dst]),
        symmetric=False,
    )
    expected = _power_iteration(graph, 0.85)

    run = _pagerank(graph, rng, damping=0.85, tol=0.0, max_iter=200)

    assert int(np.argmax(run.ranks)) == hub
    assert _relative_error(run.ranks, expected) <= F32_FLOOR


@pytest.mark.parametrize("max_iter", [1, 2, 3, 6])
def test_pagerank_runs_exactly_max_iter_iterations(max_iter: int, rng: np.random.Generator) -> None:
    """With tol=0 it stops after max_iter iterations, ranks in the buffer parity says."""
    graph = _random(rng, 300, 900, symmetric=False)
    expected = _power_iteration(graph, 0.85, iterations=max_iter)

    run = _pagerank(graph, rng, damping=0.85, tol=0.0, max_iter=max_iter)

    assert run.state[STATE_ITERATIONS] == max_iter
    assert _relative_error(run.ranks, expected) <= 1e-5


@pytest.mark.parametrize("max_iter", [0, -4])
def test_pagerank_without_iterations_keeps_uniform_ranks(max_iter: int) -> None:
    """max_iter <= 0: done at once, no iteration counted, ranks stay 1/n in buffer A."""
    graph = _random(np.random.default_rng(0), 50, 100, symmetric=False)

    run = _pagerank(graph, np.random.default_rng(1), damping=0.85, tol=1e-7, max_iter=max_iter)

    assert run.state[STATE_ITERATIONS] == 0
    np.testing.assert_array_equal(run.ranks, np.full(50, np.float32(1.0) / np.float32(50)))


def test_pagerank_kernels_do_nothing_once_done(rng: np.random.Generator) -> None:
    """With the done word set, the PageRank kernels leave ranks and state untouched."""
    graph = _random(rng, 100, 300, symmetric=False)
    in_offsets, in_indices = graph.csr(transposed=True)
    rank_in = rng.random(100).astype(np.float32)
    rank_out = rng.random(100).astype(np.float32)
    state = np.array([0.25, 0.5, 1.0, 3.0, 1e-7, 100.0, 0.125, 0.0], dtype=np.float32)
    before = (rank_in.copy(), rank_out.copy(), state.copy())
    common = {"out_degree": graph.out_degree(), "pr_state": state}

    contrib = rng.random(100).astype(np.float32)
    before = (*before, contrib.copy())
    _call(pr_dangling, {"rank": _read_only(rank_in.view()), **common})
    _call(
        pr_gather,
        {
            "in_offsets": in_offsets,
            "in_indices": in_indices,
            "contrib": _read_only(contrib.view()),
            "sums": rank_out,
            "pr_state": state,
        },
    )
    _call(
        pr_update,
        {
            "rank_in": rank_in,
            "rank_out": rank_out,
            "contrib": contrib,
            "rank_of": rng.permutation(100).astype(np.int32),
            **common,
        },
        damping=0.85,
    )
    _call(pr_check, {"pr_state": state})

    np.testing.assert_array_equal(rank_in, before[0])
    np.testing.assert_array_equal(rank_out, before[1])
    np.testing.assert_array_equal(state, before[2])
    np.testing.assert_array_equal(contrib, before[3])


# ---------------------------------------------------------------------------- NVRTC


KERNELS: Mapping[str, Kernel] = {k.name: k for k in (*BFS_KERNELS, *PAGERANK_KERNELS)}


@pytest.mark.usefixtures("private_kernel_cache")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_graph_kernel_compiles_without_warnings(name: str, arch: str) -> None:
    """Each graph kernel builds to a CUBIN with NVRTC, and NVRTC has nothing to say."""
    assert_builds_cleanly(KERNELS[name], arch)
