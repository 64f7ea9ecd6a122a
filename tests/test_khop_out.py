"""k-hop vertex sets compacted on the device, into the caller's array (CPU backend), and
the compaction kernels against NumPy."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import numpy as np
import pytest
from graph_references import GRAPH_SHAPES, scipy_levels
from kernel_builds import assert_builds_cleanly

import vyre_async as va
from vyre_async.algorithms import _repeat
from vyre_async.algorithms.bfs import (
    KHOP_KERNELS,
    KHOP_TILE,
    _compact_layout,
    compact_tiles,
    khop_count,
    khop_scan,
    khop_scatter,
)
from vyre_async.graphs import CsrGraph
from vyre_async.kernels import Kernel


def _within(graph: CsrGraph, source: int, k: int) -> np.ndarray:
    dist = scipy_levels(graph, source)
    return np.flatnonzero((dist >= 0) & (dist <= k)).astype(np.int32)


def _sources(rng: np.random.Generator, graph: CsrGraph, count: int) -> list[int]:
    return [int(s) for s in rng.integers(0, graph.num_vertices, count)]


def _big_star(rng: np.random.Generator) -> CsrGraph:
    """More vertices than three tiles, so the set spans tiles (and a partial last one)."""
    n = 3 * KHOP_TILE + int(rng.integers(1, KHOP_TILE))
    hubs = rng.integers(0, n, 40)
    src = np.concatenate([np.repeat(hubs, 200), rng.integers(0, n, 3000)])
    dst = np.concatenate([rng.integers(0, n, 8000), rng.integers(0, n, 3000)])
    return CsrGraph.from_edges(src, dst, n, symmetric=bool(rng.integers(2)))


SHAPES = {**GRAPH_SHAPES, "big_star": _big_star}


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_khop_into_a_resident_buffer_equals_the_host_result(
    rng: np.random.Generator, shape: str
) -> None:
    """khop(out=ResidentBuffer) returns the set's length; the buffer's head is the set
    khop() returns and SciPy's vertices within k hops; its tail is left alone."""
    graph = SHAPES[shape](rng)
    n = graph.num_vertices
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        out = await backend.upload(np.full(n + 3, -7, np.int32))  # poisoned, and longer
        for source in _sources(rng, graph, 3):
            k = int(rng.integers(0, 5))
            want = _within(graph, source, k)
            length = await session.khop(source, k, out=out)
            assert length == want.size
            got = await backend.read(out)
            np.testing.assert_array_equal(got[:length], want)
            np.testing.assert_array_equal(await session.khop(source, k), want)
            await backend.write(out, np.full(n + 3, -7, np.int32))
            await session.khop(source, k, out=out)
            assert (await backend.read(out, length) == -7).all()
        await backend.free(out)


async def test_khop_into_a_numpy_array_fills_its_head(rng: np.random.Generator) -> None:
    """khop(out=ndarray) writes the set into its head and returns its length."""
    graph = _big_star(rng)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        out = np.full(graph.num_vertices, -7, np.int32)
        for source in _sources(rng, graph, 3):
            want = _within(graph, source, 2)
            out.fill(-7)
            length = await session.khop(source, 2, out=out)
            assert length == want.size
            np.testing.assert_array_equal(out[:length], want)
            assert (out[length:] == -7).all()


async def test_khop_with_out_runs_alone_under_batching(rng: np.random.Generator) -> None:
    """With batching on, khop(out=...) still writes the set into out (it runs alone)."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    config = va.BatchingConfig()
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph, batching=config) as session,
    ):
        out = await backend.alloc(4 * graph.num_vertices, np.int32)
        source = _sources(rng, graph, 1)[0]
        length = await session.khop(source, 2, out=out)
        np.testing.assert_array_equal(await backend.read(out, 0, length), _within(graph, source, 2))
        await backend.free(out)


async def test_misfit_outs_and_bad_k_are_refused_before_anything_runs(
    rng: np.random.Generator,
) -> None:
    """A wrong dtype, too short, strided, read-only, freed or foreign out, and k < 0: each
    a ValidationError with a fix, and the session ran nothing."""
    graph = GRAPH_SHAPES["random_symmetric"](rng)
    n = graph.num_vertices
    frozen = np.zeros(n, np.int32)
    frozen.flags.writeable = False
    async with (
        va.open_backend("cpu") as backend,
        va.open_backend("cpu") as other,
        va.resident_graph(backend, graph) as session,
    ):
        freed = await backend.alloc(4 * n, np.int32)
        await backend.free(freed)
        misfits: list[Any] = [
            np.zeros(n, np.int64),
            np.zeros(n - 1, np.int32),
            np.zeros(2 * n, np.int32)[::2],
            frozen,
            await backend.alloc(8 * n, np.int64),
            await backend.alloc(4 * (n - 1), np.int32),
            freed,
            await other.alloc(4 * n, np.int32),
            [0] * n,
        ]
        for misfit in misfits:
            with pytest.raises(va.ValidationError, match="Fix: "):
                await session.khop(0, 2, out=misfit)
        with pytest.raises(va.ValidationError, match=r"k must be a non-negative int.*Fix: "):
            await session.khop(0, -1, out=np.zeros(n, np.int32))
        assert session.stats().runs == 0


async def test_a_single_khop_runs_one_batch_of_k_levels(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone khop(k < 16) submits its traversal once, with exactly k repeated levels."""
    graph = GRAPH_SHAPES["long_path"](rng)
    repeats: list[int] = []
    run = va.backends.PreparedSequence.run

    def recording(self: va.backends.PreparedSequence, count: int, **kwargs: Any) -> Any:
        if self.repeated:
            repeats.append(count)
        return run(self, count, **kwargs)

    monkeypatch.setattr(va.backends.PreparedSequence, "run", recording)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        for k in (0, 1, 3, 15):
            repeats.clear()
            np.testing.assert_array_equal(await session.khop(0, k), _within(graph, 0, k))
            assert repeats == [k]


class _Batches:
    """Prepared batches that report done after ``done_after`` repeats in all."""

    def __init__(self, done_after: int) -> None:
        self.done_after = done_after
        self.repeats: list[int] = []

    async def run(self, count: int, **kwargs: Any) -> tuple[list[np.ndarray], int]:
        self.repeats.append(count)
        done = int(sum(self.repeats) >= self.done_after)
        return [np.array([done], np.int32)], 0


@pytest.mark.parametrize(
    ("first", "done_after", "want"),
    [(0, 0, [0]), (0, 3, [0, 1, 2]), (2, 2, [2]), (3, 10, [3, 6, 12])],
)
async def test_run_prepared_starts_at_the_first_batch_and_doubles(
    first: int, done_after: int, want: list[int]
) -> None:
    """run_prepared's first batch has first_batch repeats; later ones double (from 1)."""
    batches = _Batches(done_after)
    await _repeat.run_prepared(batches, batches, 0, first_batch=first)  # type: ignore[arg-type]
    assert batches.repeats == want


# ------------------------------------------------------------------------ kernels


def _scalars(kernel: Kernel, arrays: dict[str, np.ndarray]) -> Any:
    return kernel.bind(arrays, {}).scalars


def _run(kernel: Kernel, arrays: dict[str, np.ndarray]) -> None:
    assert kernel.reference is not None
    kernel.reference(arrays, _scalars(kernel, arrays))


@pytest.mark.parametrize("extra", [0, 1, KHOP_TILE - 1, KHOP_TILE, 5 * KHOP_TILE + 17])
def test_count_scan_scatter_compact_any_levels(rng: np.random.Generator, extra: int) -> None:
    """Counts per tile, their exclusive sums and the total, then the reached vertices
    (level >= 0) in order: as NumPy's flatnonzero gives them, whatever the levels hold."""
    n = extra + int(rng.integers(0, 3))
    levels = rng.integers(-3, 4, n).astype(np.int32)
    tiles = compact_tiles(n)
    counts = np.full(tiles + 1, 99, np.int32)  # poisoned
    _run(khop_count, {"levels": levels, "tile_counts": counts})
    want = np.flatnonzero(levels >= 0)
    np.testing.assert_array_equal(
        counts[:tiles], np.bincount(want // KHOP_TILE, minlength=tiles)[:tiles]
    )
    assert counts[tiles] == 99
    _run(khop_scan, {"tile_counts": counts})
    assert counts[tiles] == want.size
    out = np.full(max(n, 1) + 2, -5, np.int32)
    _run(khop_scatter, {"levels": levels, "tile_offsets": counts, "out": out})
    np.testing.assert_array_equal(out[: want.size], want)
    assert (out[want.size :] == -5).all()


def test_scatter_never_writes_outside_its_output(rng: np.random.Generator) -> None:
    """Positions past the output's end (or negative offsets) are skipped, not written."""
    n = 3 * KHOP_TILE
    levels = np.zeros(n, np.int32)
    counts = np.zeros(compact_tiles(n) + 1, np.int32)
    _run(khop_count, {"levels": levels, "tile_counts": counts})
    _run(khop_scan, {"tile_counts": counts})
    out = np.full(100, -5, np.int32)
    _run(khop_scatter, {"levels": levels, "tile_offsets": counts, "out": out})
    np.testing.assert_array_equal(out, np.arange(100))
    counts[:] = -KHOP_TILE  # garbage: every tile's positions are negative
    out.fill(-5)
    _run(khop_scatter, {"levels": levels, "tile_offsets": counts, "out": out})
    assert (out == -5).all()


def test_tile_launches_give_one_block_per_tile_and_nothing_for_no_tiles() -> None:
    """count and scatter: a block per tile (capped); no blocks for an empty graph."""
    for n, blocks in ((1, 1), (KHOP_TILE, 1), (KHOP_TILE + 1, 2)):
        levels = np.zeros(n, np.int32)
        counts = np.zeros(compact_tiles(n) + 1, np.int32)
        launch = khop_count.bind({"levels": levels, "tile_counts": counts}, {}).launch
        assert launch.grid == (blocks, 1, 1)
        assert launch.threads_per_block == _compact_layout.KHOP_BLOCK
    empty = {"levels": np.zeros(0, np.int32), "tile_counts": np.zeros(1, np.int32)}
    assert khop_count.bind(empty, {}).launch.empty


def test_the_defines_header_states_the_python_constants() -> None:
    """khop_defines.cuh and the Python constants agree, name for name."""
    text = resources.files("vyre_async.algorithms.bfs").joinpath("khop_defines.cuh").read_text()
    stated = dict(re.findall(r"^#define (\w+) (\S+)$", text, re.MULTILINE))
    assert stated == {name: str(value) for name, value in _compact_layout.CUDA_DEFINES.items()}


@pytest.mark.usefixtures("private_kernel_cache")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kernel", KHOP_KERNELS, ids=lambda k: k.name)
def test_compaction_kernel_compiles_without_warnings(kernel: Kernel, arch: str) -> None:
    """Each compaction kernel builds to a CUBIN with NVRTC, and NVRTC has nothing to say."""
    assert_builds_cleanly(kernel, arch)
