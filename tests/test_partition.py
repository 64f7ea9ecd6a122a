"""A graph split over the devices of a group: placement, and traversals on the split
graph (CPU backends as the group's devices) against SciPy."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import anyio
import numpy as np
import pytest
from graph_references import pagerank_float64, scipy_levels
from kernel_builds import assert_builds_cleanly
from partition_shapes import SHAPES, random_graph, reference_rows, split_limit

import vyre_async as va
from vyre_async.algorithms.bfs import KhopParams
from vyre_async.algorithms.msbfs import (
    MSBFS_PART_KERNELS,
    PartedTraversal,
    _part_layout,
    _partitioned,
    allocate_parted_scratch,
    run_parted_traversals,
)
from vyre_async.algorithms.msbfs._partitioned import levels_per_batch
from vyre_async.algorithms.pagerank import PAGERANK_PART_KERNELS, _part_state
from vyre_async.backends import CpuBackend, choose_placement, device_budgets
from vyre_async.errors import (
    ConfigurationError,
    DispatchError,
    OutOfMemoryError,
    UnsupportedFeatureError,
    ValidationError,
)
from vyre_async.graphs import CsrGraph, replica_graph_bytes
from vyre_async.kernels import Kernel
from vyre_async.testing import capture_logs


# ------------------------------------------------------------------------- kernels
@pytest.mark.usefixtures("private_kernel_cache")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize(
    "kernel", [*MSBFS_PART_KERNELS, *PAGERANK_PART_KERNELS], ids=lambda k: k.name
)
def test_partitioned_kernel_compiles_without_warnings(kernel: Kernel, arch: str) -> None:
    """Each partitioned-traversal kernel builds to a CUBIN with NVRTC, without warnings."""
    assert_builds_cleanly(kernel, arch)


@pytest.mark.parametrize(
    ("package", "header", "constants"),
    [
        ("msbfs", "msbfs_part_defines.cuh", _part_layout.PART_CUDA_DEFINES),
        ("pagerank", "pagerank_part_defines.cuh", _part_state.PART_CUDA_DEFINES),
    ],
)
def test_partitioned_define_headers_state_the_python_constants(
    package: str, header: str, constants: dict[str, int]
) -> None:
    """The partitioned kernels' #define headers and the Python layouts agree, name for name."""
    text = resources.files(f"vyre_async.algorithms.{package}").joinpath(header).read_text("utf-8")
    stated = dict(re.findall(r"^#define (\w+) (\S+)$", text, re.MULTILINE))
    assert stated == {name: str(value) for name, value in constants.items()}


# ----------------------------------------------------------------------- placement
def test_placement_replicates_while_a_copy_fits_every_budget() -> None:
    """A copy within the smallest budget is replicated."""
    placement = choose_placement([1000, 900], 900, [500, 480])
    assert placement.mode == "replicate"
    assert "900 bytes" in placement.reason


def test_placement_partitions_when_a_copy_exceeds_a_budget() -> None:
    """A copy over one device's budget, parts within every budget: partitioned."""
    placement = choose_placement([1000, 800], 900, [500, 480])
    assert placement.mode == "partition"
    assert "device 1" in placement.reason


def test_one_device_refuses_a_copy_over_its_budget_with_a_fix() -> None:
    """A group of one: a copy within its budget is replicated, one over it refused."""
    assert choose_placement([1000], 900, [900]).mode == "replicate"
    with pytest.raises(OutOfMemoryError, match="does not fit its one device") as caught:
        choose_placement([800], 900, [900])
    assert "devices='all'" in str(caught.value)


async def test_one_device_with_a_budget_below_the_graph_does_not_open(
    rng: np.random.Generator,
) -> None:
    """The budget that splits a graph over two devices is too small for one: the session
    over one device raises OutOfMemoryError before uploading anything."""
    graph = random_graph(rng, 900, 3600, symmetric=False)
    async with va.open_devices("cpu", devices=[0], memory_limit=split_limit(graph, 2)) as group:
        with pytest.raises(OutOfMemoryError, match="Fix:"):
            async with va.resident_graph(group, graph):
                pass
        assert group.backends[0].telemetry().bytes_uploaded == 0


def test_placement_refuses_a_part_over_its_budget_with_a_fix() -> None:
    """Neither fits: OutOfMemoryError naming the device and a fix."""
    with pytest.raises(OutOfMemoryError, match="device 1's part") as caught:
        choose_placement([1000, 400], 1200, [500, 480])
    assert "Fix:" in str(caught.value)


@pytest.mark.parametrize("limit", [0, -5, 1.5, "1GiB", [], [100, 0], True])
async def test_bad_memory_limit_is_a_configuration_error(limit: object) -> None:
    """A memory_limit that is no positive byte count is refused before anything opens."""
    with pytest.raises(ConfigurationError, match="Fix:"):
        async with va.open_devices("cpu", devices=[0, 1], memory_limit=limit):  # type: ignore[arg-type]
            pass


async def test_memory_limit_list_of_the_wrong_length_is_refused() -> None:
    """One budget per device: a list of another length is a ConfigurationError."""
    with pytest.raises(ConfigurationError, match="2 budgets for 3 devices"):
        async with va.open_devices("cpu", devices=[0, 1, 2], memory_limit=[10**6, 10**6]):
            pass


async def test_group_without_memory_limit_replicates(rng: np.random.Generator) -> None:
    """Each device's free memory holds a small graph: it is replicated, and the log says why."""
    graph = random_graph(rng, 300, 900, symmetric=False)
    with capture_logs() as logs:
        async with (
            va.open_devices("cpu", devices=[0, 1]) as group,
            va.resident_graph(group, graph) as session,
        ):
            assert session.placement is not None
            assert session.placement.mode == "replicate"
            copies = session.device_graph_bytes
    assert copies[0] == copies[1] == replica_graph_bytes(graph)
    placed = [e for e in logs if e["event"] == "graph_placed"]
    assert placed
    assert placed[0]["placement"] == "replicate"
    assert placed[0]["reason"]


async def test_memory_limit_forces_a_split_and_the_log_says_why(rng: np.random.Generator) -> None:
    """A budget below a copy splits the graph; each device holds about half of it."""
    graph = random_graph(rng, 4000, 16000, symmetric=False)
    with capture_logs() as logs:
        async with (
            va.open_devices("cpu", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
            va.resident_graph(group, graph) as session,
        ):
            assert session.placement is not None
            assert session.placement.mode == "partition"
            parts = session.device_graph_bytes
    assert len(parts) == 2
    assert max(parts) <= 0.55 * replica_graph_bytes(graph)
    placed = [e for e in logs if e["event"] == "graph_placed"]
    assert placed
    assert placed[0]["placement"] == "partition"
    assert "more than device" in placed[0]["reason"]


async def test_budget_below_every_part_is_out_of_memory_with_a_fix(
    rng: np.random.Generator,
) -> None:
    """A budget no part fits: the session does not open, OutOfMemoryError says how to fix it."""
    graph = random_graph(rng, 600, 3000, symmetric=False)
    async with va.open_devices("cpu", devices=[0, 1], memory_limit=1000) as group:
        with pytest.raises(OutOfMemoryError, match="fits neither") as caught:
            async with va.resident_graph(group, graph):
                pass
        assert "Fix:" in str(caught.value)


# ------------------------------------------------------------ traversals, split
@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_split_bfs_many_levels_and_counts_equal_scipy(
    shape: str, devices: int, rng: np.random.Generator
) -> None:
    """bfs_many on a split graph: every level, and every reached count, equal SciPy's."""
    graph = SHAPES[shape](rng)
    sources = rng.integers(0, graph.num_vertices, 70).astype(np.int32)
    expected = reference_rows(graph, sources)
    limit = split_limit(graph, devices)
    async with (
        va.open_devices("cpu", devices=list(range(devices)), memory_limit=limit) as group,
        va.resident_graph(group, graph) as session,
    ):
        assert session.placement is not None
        assert session.placement.mode == "partition"
        levels = await session.bfs_many(sources)
        counts = await session.bfs_many(sources, readback="counts")
    np.testing.assert_array_equal(levels, expected)
    np.testing.assert_array_equal(counts, (expected >= 0).sum(axis=1))


@pytest.mark.parametrize("shape", ["random_directed", "last_range_without_edges"])
async def test_split_single_queries_equal_scipy(shape: str, rng: np.random.Generator) -> None:
    """bfs, reach_count and khop of one source on a split graph equal SciPy's answers."""
    graph = SHAPES[shape](rng)
    source = int(rng.integers(0, 150))
    expected = scipy_levels(graph, source)
    async with (
        va.open_devices("cpu", devices=[0, 1, 2], memory_limit=split_limit(graph, 3)) as group,
        va.resident_graph(group, graph) as session,
    ):
        levels = await session.bfs(source)
        into = np.full(graph.num_vertices, -7, np.int32)
        written = await session.bfs(source, out=into)
        reached = await session.reach_count(source)
        within = await session.khop(source, 2)
        by_query = await session.query("khop", source, KhopParams(k=3, readback="levels"))
    np.testing.assert_array_equal(levels, expected)
    assert written is into
    np.testing.assert_array_equal(into, expected)
    assert reached == int((expected >= 0).sum())
    np.testing.assert_array_equal(within, np.flatnonzero((expected >= 0) & (expected <= 2)))
    np.testing.assert_array_equal(by_query, np.flatnonzero((expected >= 0) & (expected <= 3)))


@pytest.mark.parametrize("direction", ["top_down", "bottom_up", "auto"])
async def test_every_level_in_one_direction_equals_scipy(
    direction: str, rng: np.random.Generator
) -> None:
    """Levels forced top-down (outboxes to owners) or bottom-up (frontier all-gathered)
    on every level, and chosen by frontier size, all equal SciPy."""
    graph = random_graph(rng, 601, 2400, symmetric=False)
    sources = rng.integers(0, graph.num_vertices, 130).astype(np.int32)
    async with (
        va.open_devices("cpu", devices=[0, 1, 2], memory_limit=split_limit(graph, 3)) as group,
        va.resident_graph(group, graph) as session,
    ):
        partition = session._partition
        assert partition is not None
        rows = await run_parted_traversals(
            partition,
            sources,
            max_level=2**31 - 1,
            readback="levels",
            direction=direction,  # type: ignore[arg-type]
        )
    np.testing.assert_array_equal(rows, reference_rows(graph, sources))


def _paths_and_islands(rng: np.random.Generator) -> CsrGraph:
    """Directed paths of 1 to 40 edges over a shuffled 503 vertices, the rest isolated:
    lanes started on them stop gaining vertices each at its own level (at once on an
    isolated vertex)."""
    order = rng.permutation(503)
    src, dst, at = [], [], 0
    for length in range(1, 41, 3):
        path = order[at : at + length + 1]
        src.append(path[:-1])
        dst.append(path[1:])
        at += length + 1
    return CsrGraph.from_edges(np.concatenate(src), np.concatenate(dst), 503)


@pytest.mark.parametrize("devices", [2, 3])
async def test_lanes_that_stop_gaining_at_different_levels_equal_scipy(
    devices: int, rng: np.random.Generator
) -> None:
    """Bottom-up on every level, lanes over three words whose traversals end at
    different levels (or at once, from an isolated vertex) are looked for only while
    some device gains them: every level still equals SciPy."""
    graph = _paths_and_islands(rng)
    sources = rng.integers(0, graph.num_vertices, 150).astype(np.int32)
    async with (
        va.open_devices(
            "cpu", devices=list(range(devices)), memory_limit=split_limit(graph, devices)
        ) as group,
        va.resident_graph(group, graph) as session,
    ):
        partition = session._partition
        assert partition is not None
        rows = await run_parted_traversals(
            partition, sources, max_level=2**31 - 1, readback="levels", direction="bottom_up"
        )
    np.testing.assert_array_equal(rows, reference_rows(graph, sources))


async def test_many_sources_run_in_passes_that_fit_the_budget(rng: np.random.Generator) -> None:
    """More sources than one pass's lanes (a small budget): passes, rows in order."""
    graph = random_graph(rng, 401, 1600, symmetric=True)
    sources = rng.integers(0, graph.num_vertices, 200).astype(np.int32)
    async with (
        va.open_devices("cpu", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
        va.resident_graph(group, graph) as session,
    ):
        rows = await session.bfs_many(sources, budget_bytes=1)
    np.testing.assert_array_equal(rows, reference_rows(graph, sources))


async def test_a_kind_without_a_split_run_is_refused_with_a_fix(
    rng: np.random.Generator,
) -> None:
    """Shortest paths and a 'targets' readback on a split graph: UnsupportedFeatureError."""
    graph = random_graph(rng, 500, 2000, symmetric=False)
    async with (
        va.open_devices("cpu", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
        va.resident_graph(group, graph) as session,
    ):
        with pytest.raises(UnsupportedFeatureError, match="Fix:"):
            await session.components()
        with pytest.raises(UnsupportedFeatureError, match="'targets' readback"):
            await session.bfs_many([0, 1], readback="targets", targets=[2])
        with pytest.raises(ValidationError, match="out of range"):
            await session.bfs(graph.num_vertices)


@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_split_pagerank_equals_float64_power_iteration(
    shape: str, devices: int, rng: np.random.Generator
) -> None:
    """PageRank on a split graph equals float64 power iteration (dangling mass spread as
    NetworkX does) within float32 rounding, and sums to 1."""
    graph = SHAPES[shape](rng)
    async with (
        va.open_devices(
            "cpu", devices=list(range(devices)), memory_limit=split_limit(graph, devices)
        ) as group,
        va.resident_graph(group, graph) as session,
    ):
        ranks = await session.pagerank(damping=0.85, tol=1e-7)
        stats = session.stats()
    expected = pagerank_float64(graph, 0.85)
    np.testing.assert_allclose(ranks, expected, rtol=1e-4, atol=1e-6)
    assert abs(float(ranks.sum(dtype=np.float64)) - 1.0) < 1e-4
    assert stats.levels >= 1


async def test_split_pagerank_stops_at_max_iter(rng: np.random.Generator) -> None:
    """max_iter=3 on a split graph runs three iterations: the ranks of three float64 steps."""
    graph = SHAPES["random_directed"](rng)
    async with (
        va.open_devices("cpu", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
        va.resident_graph(group, graph) as session,
    ):
        ranks = await session.pagerank(damping=0.85, tol=1e-9, max_iter=3)
        stats = session.stats()
    assert stats.levels == 3
    np.testing.assert_allclose(ranks, three_steps(graph, 0.85), rtol=1e-5, atol=1e-7)


def three_steps(graph: CsrGraph, damping: float) -> np.ndarray:
    """Three float64 power iterations from uniform ranks."""
    n = graph.num_vertices
    src = np.repeat(np.arange(n), np.diff(graph.offsets))
    out_degree = np.bincount(src, minlength=n).astype(np.float64)
    dangling = out_degree == 0
    x = np.full(n, 1.0 / n)
    for _ in range(3):
        share = np.divide(x, out_degree, out=np.zeros(n), where=~dangling)
        pulled = np.bincount(graph.indices, weights=share[src], minlength=n)
        x = damping * (pulled + x[dangling].sum() / n) + (1.0 - damping) / n
    return x


async def test_split_khop_many_equals_scipy_within_k(rng: np.random.Generator) -> None:
    """bfs_many with k on a split graph: SciPy's levels up to k, -1 beyond."""
    graph = SHAPES["random_directed"](rng)
    sources = rng.integers(0, graph.num_vertices, 90).astype(np.int32)
    expected = reference_rows(graph, sources)
    expected[expected > 2] = -1
    async with (
        va.open_devices("cpu", devices=[0, 1, 2], memory_limit=split_limit(graph, 3)) as group,
        va.resident_graph(group, graph) as session,
    ):
        rows = await session.bfs_many(sources, k=2)
    np.testing.assert_array_equal(rows, expected)


async def test_concurrent_queries_on_a_split_graph_each_get_their_rows(
    rng: np.random.Generator,
) -> None:
    """Six bfs_many calls at once on a split graph (each its own scratch): SciPy's rows."""
    graph = SHAPES["random_symmetric"](rng)
    calls = [rng.integers(0, graph.num_vertices, 40).astype(np.int32) for _ in range(6)]
    rows: dict[int, np.ndarray] = {}
    async with (
        va.open_devices("cpu", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
        va.resident_graph(group, graph) as session,
    ):

        async def call(i: int) -> None:
            rows[i] = await session.bfs_many(calls[i])

        async with anyio.create_task_group() as tg:
            for i in range(len(calls)):
                tg.start_soon(call, i)
    for i, sources in enumerate(calls):
        np.testing.assert_array_equal(rows[i], reference_rows(graph, sources))


async def test_a_failed_read_of_one_devices_rows_raises_its_own_error(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The devices' shares of the rows are read at once; one that fails raises its own
    VyreError (with its fix), not a group of errors."""
    graph = SHAPES["random_directed"](rng)
    sources = rng.integers(0, graph.num_vertices, 5).astype(np.int32)
    async with (
        va.open_devices("cpu", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
        va.resident_graph(group, graph) as session,
    ):
        original = group.backends[1].read

        async def failing(buffer: Any, offset: int = 0, count: int | None = None) -> Any:
            if count is not None and count > 1:  # a share of the rows, not the state
                raise DispatchError("the read failed", fix="try again.")
            return await original(buffer, offset, count)

        monkeypatch.setattr(group.backends[1], "read", failing)
        with pytest.raises(DispatchError, match="Fix: try again"):
            await session.bfs_many(sources)


@pytest.mark.parametrize("devices", [2, 3])
async def test_a_lone_bfs_reads_each_devices_levels_straight_into_its_row(
    devices: int, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone BFS on a split graph: every device with vertices reads its range of the
    levels once, into that range of the array returned (no array in between), and the
    row equals SciPy's; a device without vertices reads nothing."""
    graph = SHAPES["device_without_vertices" if devices == 3 else "random_directed"](rng)
    source = int(rng.integers(0, graph.num_vertices))
    async with (
        va.open_devices(
            "cpu", devices=list(range(devices)), memory_limit=split_limit(graph, devices)
        ) as group,
        va.resident_graph(group, graph) as session,
    ):
        partition = session._partition
        assert partition is not None
        await session.bfs(source)  # its scratch is kept: the next BFS reads these buffers
        (scratch,) = partition._idle[("msbfs", "parts", 1, "levels")]
        levels_buffers = [mine["levels"] for mine in scratch.buffers]  # type: ignore[attr-defined]
        reads: list[tuple[int, int, np.ndarray | None]] = []
        for d, backend in enumerate(group.backends):
            original = backend.read

            async def spy(
                buffer: Any,
                offset: int = 0,
                count: int | None = None,
                *,
                out: np.ndarray | None = None,
                d: int = d,
                original: Any = original,
            ) -> Any:
                if buffer is levels_buffers[d]:
                    reads.append((d, offset, out))
                return await original(buffer, offset, count, out=out)

            monkeypatch.setattr(backend, "read", spy)
        row = await session.bfs(source)
    np.testing.assert_array_equal(row, scipy_levels(graph, source))
    ranges = partition.ranges
    owners = [d for d in range(devices) if ranges.size(d) > 0]
    assert sorted(d for d, _, _ in reads) == owners
    for d, offset, out in reads:
        first, stop = ranges.bounds(d)
        assert offset == 0
        assert out is not None
        assert np.shares_memory(out, row)
        assert out.ctypes.data == row.ctypes.data + 4 * first
        assert out.size == stop - first


def test_wide_slots_get_fewer_levels_per_host_wait() -> None:
    """A level past the end still copies its slots: 1 GiB slots run one level per host
    wait, small ones up to the cap of 64."""
    assert levels_per_batch(1 << 30) == 1
    assert levels_per_batch(64 << 20) == 4
    assert levels_per_batch(4096) == 64


@pytest.mark.parametrize("devices", [2, 3])
async def test_a_level_a_wait_copies_no_slot_in_the_level_that_finds_the_end(
    devices: int, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With slots so wide that a batch is one level, each ordered pair copies one
    frontier slot per level expanded, none in the level whose direction step finds the
    end (statistics in every level), and the rows equal SciPy's."""
    monkeypatch.setattr(_partitioned, "BATCH_COPY_BYTES", 1)  # every slot "wide"
    graph = SHAPES["random_directed"](rng)
    sources = rng.integers(0, graph.num_vertices, 70).astype(np.int32)
    async with (
        va.open_devices(
            "cpu", devices=list(range(devices)), memory_limit=split_limit(graph, devices)
        ) as group,
        va.resident_graph(group, graph) as session,
    ):
        partition = session._partition
        assert partition is not None
        ranges = partition.ranges
        scratch = await allocate_parted_scratch(
            partition.backends, partition.parts, ranges, 2, "levels"
        )
        runner = PartedTraversal(partition.backends, partition.links, ranges)
        before = partition.links.bytes_copied
        try:
            rows = await runner.run(scratch, sources)
        finally:
            await scratch.free()
        copied = partition.links.bytes_copied - before
    pairs = devices * (devices - 1)
    levels = runner.levels
    assert runner.host_waits == levels + 1
    stats = _part_layout.PART_STATS * (levels + 1)
    assert copied == 8 * pairs * (levels * ranges.chunk * 2 + stats)
    np.testing.assert_array_equal(rows, reference_rows(graph, sources))


async def test_one_small_budget_in_a_per_device_list_splits_the_graph(
    rng: np.random.Generator,
) -> None:
    """memory_limit=[plenty, a part's worth]: the copy does not fit device 1, so split."""
    graph = random_graph(rng, 900, 3600, symmetric=False)
    async with (
        va.open_devices(
            "cpu", devices=[0, 1], memory_limit=[1 << 40, split_limit(graph, 2)]
        ) as group,
        va.resident_graph(group, graph) as session,
    ):
        assert session.placement is not None
        assert session.placement.mode == "partition"
        assert "device 1" in session.placement.reason
        assert session.placement.budgets[0] < 1 << 40  # never above the free memory


async def test_free_memory_below_the_limit_is_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A device's budget is its memory_limit, at most its free memory (a group of CPU
    backends shares the host's equally)."""

    async def free(self: CpuBackend) -> int:
        return 3000

    monkeypatch.setattr(CpuBackend, "free_memory", free)
    async with va.open_devices("cpu", devices=[0, 1, 2], memory_limit=[500, 2000, 900]) as group:
        assert await device_budgets(group) == (500, 1000, 900)
