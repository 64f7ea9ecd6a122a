"""Multi-source traversals (bfs_many) on the CPU backend, against SciPy per query."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import numpy as np
import pytest
from graph_references import GRAPH_SHAPES, scipy_levels

import vyre_async as va
from vyre_async.algorithms.msbfs import TraversalQuery, chunk_bytes


@pytest.mark.parametrize("count", [1, 5, 64, 65, 130])
@pytest.mark.parametrize("shape", ["random_directed", "rmat_skewed", "disconnected"])
async def test_bfs_many_levels_equal_scipy_per_query(
    rng: np.random.Generator, shape: str, count: int
) -> None:
    """Every query of a batch (duplicates included) equals its own SciPy BFS."""
    graph = GRAPH_SHAPES[shape](rng)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, count)]
    sources[-1] = sources[0]  # a duplicate source
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        levels = await session.bfs_many(sources)
    assert levels.shape == (count, graph.num_vertices)
    for row, source in zip(levels, sources, strict=True):
        np.testing.assert_array_equal(row, scipy_levels(graph, source))


async def test_bfs_many_counts_and_targets_read_back_only_what_was_asked(
    rng: np.random.Generator,
) -> None:
    """counts and targets readbacks equal SciPy's reach and distances at the targets."""
    graph = GRAPH_SHAPES["random_directed"](rng)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 70)]
    targets = [int(t) for t in rng.integers(0, graph.num_vertices, 9)]
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        counts = await session.bfs_many(sources, readback="counts")
        at_targets = await session.bfs_many(sources, readback="targets", targets=targets)
    for i, source in enumerate(sources):
        dist = scipy_levels(graph, source)
        assert counts[i] == int((dist >= 0).sum())
        np.testing.assert_array_equal(at_targets[i], dist[targets])


async def test_bfs_many_khop_and_small_budget_split_into_chunks(rng: np.random.Generator) -> None:
    """k-hop batches equal distances <= k, also when the budget forces several chunks."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 40)]
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        six = [TraversalQuery(id=i, source=0, kind="khop", k=2) for i in range(6)]
        budget = session.stats().graph_bytes_uploaded + chunk_bytes(graph.num_vertices, 1, six)
        levels = await session.bfs_many(sources, k=2, budget_bytes=budget)
        assert session.stats().runs == 1
    for row, source in zip(levels, sources, strict=True):
        dist = scipy_levels(graph, source)
        np.testing.assert_array_equal(row, np.where(dist <= 2, dist, -1))


@pytest.mark.parametrize("batching", [None, va.BatchingConfig(max_batch=8)])
async def test_bfs_many_refuses_bad_sources_with_a_fix(
    rng: np.random.Generator, batching: va.BatchingConfig | None
) -> None:
    """An out-of-range source in a batch raises ValidationError before anything runs."""
    graph = GRAPH_SHAPES["random_symmetric"](rng)
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph, batching=batching) as session,
    ):
        n = graph.num_vertices
        for bad in ([0, n], [3, -1], np.array([1, n + 5], np.int64), np.array([[0, 1]])):
            with pytest.raises(va.ValidationError, match="Fix:"):
                await session.bfs_many(bad)
        with pytest.raises(va.ValidationError, match=rf"source vertex {n + 5} .*Fix:"):
            await session.bfs_many(np.array([1, n + 5, 2, -3], np.int64))
        for wrong in ([True, False], [0.5, 1.0], ["0"]):
            with pytest.raises(TypeError, match="int vertex id"):
                await session.bfs_many(wrong)  # type: ignore[arg-type]
        for kwargs in (
            {"k": -1},
            {"k": True},
            {"readback": "all"},
            {"readback": "targets"},
            {"readback": "targets", "targets": [n]},
        ):
            with pytest.raises(va.ValidationError, match="Fix:"):
                await session.bfs_many([0, 1], **kwargs)  # type: ignore[arg-type]
        # Nothing refused left anything behind: the session still answers.
        assert (await session.bfs_many([0], readback="counts")).shape == (1,)


@pytest.mark.parametrize("batching", [None, va.BatchingConfig(max_batch=16)])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint16])
async def test_bfs_many_takes_integer_arrays_and_keeps_no_reference(
    rng: np.random.Generator, batching: va.BatchingConfig | None, dtype: type[np.integer]
) -> None:
    """A NumPy array of sources gives the same rows as the list; changing it after the
    call starts does not change what runs."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    sources = rng.integers(0, graph.num_vertices, 50).astype(dtype)
    want = np.stack([scipy_levels(graph, int(s)) for s in sources])
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph, batching=batching) as session,
    ):
        running = session.bfs_many(sources)
        async with anyio.create_task_group() as tg:
            result: list[np.ndarray] = []

            async def call() -> None:
                result.append(await running)

            tg.start_soon(call)
            for _ in range(3):  # the call's first step runs (trio shuffles each batch)
                await anyio.lowlevel.checkpoint()
            sources[:] = 0  # the caller reuses its array while the call runs
    np.testing.assert_array_equal(result[0], want)


async def test_concurrent_queries_are_coalesced_and_each_gets_its_own_result(
    rng: np.random.Generator,
) -> None:
    """Hundreds of concurrent bfs/khop/reach calls (mixed priorities) share traversals."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    count = 300
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, count)]
    kinds = [("bfs", "khop", "reach")[int(i)] for i in rng.integers(0, 3, count)]
    priorities = rng.integers(-2, 3, count)
    results: dict[int, object] = {}
    config = va.BatchingConfig(max_batch=128)
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph, batching=config) as session,
    ):

        async def query(i: int) -> None:
            extra = {"priority": int(priorities[i]), "queue_timeout": 60.0}
            if kinds[i] == "bfs":
                results[i] = await session.bfs(sources[i], **extra)
            elif kinds[i] == "khop":
                results[i] = await session.khop(sources[i], 2, **extra)
            else:
                results[i] = await session.reach_count(sources[i], **extra)

        async with anyio.create_task_group() as tg:
            for i in range(count):
                tg.start_soon(query, i)
        stats = session.batch_stats()
    assert stats is not None
    assert stats.served == count
    assert stats.batches < count / 4, "concurrent queries must share traversals"
    assert stats.lanes_max <= 128
    for i, source in enumerate(sources):
        dist = scipy_levels(graph, source)
        if kinds[i] == "bfs":
            np.testing.assert_array_equal(results[i], dist)
        elif kinds[i] == "khop":
            np.testing.assert_array_equal(results[i], np.flatnonzero((dist >= 0) & (dist <= 2)))
        else:
            assert results[i] == int((dist >= 0).sum())


@pytest.mark.parametrize(("k", "readback"), [(None, "levels"), (None, "counts"), (2, "levels")])
async def test_batched_bfs_many_blocks_share_batches_with_single_calls(
    rng: np.random.Generator, k: int | None, readback: str
) -> None:
    """Concurrent bfs_many calls (blocks of max_batch) and lone calls each get SciPy's rows."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    many = [[int(s) for s in rng.integers(0, graph.num_vertices, n)] for n in (1, 37, 150)]
    singles = [int(s) for s in rng.integers(0, graph.num_vertices, 20)]
    rows: dict[int, np.ndarray] = {}
    counts: dict[int, int] = {}
    config = va.BatchingConfig(max_batch=64)
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph, batching=config) as session,
    ):

        async def call_many(i: int) -> None:
            rows[i] = await session.bfs_many(many[i], k=k, readback=readback)  # type: ignore[arg-type]

        async def call_one(i: int) -> None:
            counts[i] = await session.reach_count(singles[i])

        async with anyio.create_task_group() as tg:
            for i in range(len(many)):
                tg.start_soon(call_many, i)
            for i in range(len(singles)):
                tg.start_soon(call_one, i)
        stats = session.batch_stats()
        empty = await session.bfs_many([], readback=readback)  # type: ignore[arg-type]
    assert stats is not None
    assert stats.lanes_max <= 64
    assert empty.shape[0] == 0
    for i, sources in enumerate(many):
        assert rows[i].shape[0] == len(sources)
        for row, source in zip(rows[i], sources, strict=True):
            dist = scipy_levels(graph, source)
            if k is not None:
                dist = np.where(dist <= k, dist, -1)
            want = int((dist >= 0).sum()) if readback == "counts" else dist
            np.testing.assert_array_equal(row, want)
    for i, source in enumerate(singles):
        assert counts[i] == int((scipy_levels(graph, source) >= 0).sum())


async def test_cancelled_waiters_do_not_disturb_their_batch(rng: np.random.Generator) -> None:
    """Cancelling some of many concurrent queries leaves the others' results correct."""
    graph = GRAPH_SHAPES["random_directed"](rng)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 120)]
    cancel = {int(i) for i in rng.choice(120, 40, replace=False)}
    results: dict[int, np.ndarray] = {}
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph, batching=va.BatchingConfig(max_batch=64)) as session,
    ):

        async def query(i: int, scope: anyio.CancelScope) -> None:
            with scope:
                results[i] = await session.bfs(sources[i])

        scopes = {i: anyio.CancelScope() for i in range(120)}
        async with anyio.create_task_group() as tg:
            for i in range(120):
                tg.start_soon(query, i, scopes[i])
            await anyio.lowlevel.checkpoint()
            for i in cancel:
                scopes[i].cancel()
        after = await session.bfs(sources[0])
    assert set(results) >= set(range(120)) - cancel
    for i, levels in results.items():
        np.testing.assert_array_equal(levels, scipy_levels(graph, sources[i]))
    np.testing.assert_array_equal(after, scipy_levels(graph, sources[0]))


@pytest.mark.parametrize("in_flight", [1, 2])
async def test_in_flight_batches_run_at_once_and_each_gets_its_rows(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch, in_flight: int
) -> None:
    """With in_flight=N at most N batches traverse the one device at a time, and N of
    them do when full blocks queue back to back; every row still equals SciPy's."""
    kind = type(va.algorithms.bfs.BFS)
    running = 0
    most = 0
    traverse = kind.run_many

    async def counted(*args: object, **kwargs: object) -> np.ndarray:
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            return await traverse(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            running -= 1

    monkeypatch.setattr(kind, "run_many", counted)
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    sources = rng.integers(0, graph.num_vertices, 16 * 8)
    config = va.BatchingConfig(max_batch=16, in_flight=in_flight)
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph, batching=config) as session,
    ):
        counts = await session.bfs_many(sources, readback="counts")
    assert most == in_flight
    want = [int((scipy_levels(graph, int(s)) >= 0).sum()) for s in sources]
    np.testing.assert_array_equal(counts, want)


async def test_traversals_of_one_shape_reuse_their_scratch_and_stay_right(
    rng: np.random.Generator,
) -> None:
    """Later traversals of a shape allocate nothing and upload only their sources, and
    a reused scratch holds nothing of the traversal before it: every row equals SciPy's
    (levels, counts, k-hop, and targets whose list changes between calls)."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    n = graph.num_vertices
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        for _ in range(3):
            sources = [int(s) for s in rng.integers(0, n, 70)]
            targets = [int(t) for t in rng.integers(0, n, 5)]
            before = backend.telemetry()
            levels = await session.bfs_many(sources)
            counts = await session.bfs_many(sources, readback="counts")
            hops = await session.bfs_many(sources, k=1)
            at = await session.bfs_many(sources, readback="targets", targets=targets)
            made = backend.telemetry().resident_allocations - before.resident_allocations
            for i, source in enumerate(sources):
                dist = scipy_levels(graph, source)
                np.testing.assert_array_equal(levels[i], dist)
                assert counts[i] == int((dist >= 0).sum())
                np.testing.assert_array_equal(hops[i], np.where(dist <= 1, dist, -1))
                np.testing.assert_array_equal(at[i], dist[targets])
        # The last round found a scratch of each of its three shapes (levels twice).
        assert made == 0
        assert session.stats().allocations_avoided >= 8


@pytest.mark.parametrize("bound", ["sets", "bytes"])
async def test_idle_scratch_is_capped_and_freed_with_the_session(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch, bound: str
) -> None:
    """A replica's idle scratches stay within the pool's bounds (sets, bytes), the least
    recently used shapes freed first; closing the session frees the rest with the graph."""
    from vyre_async.sessions import _replica

    graph = GRAPH_SHAPES["random_directed"](rng)
    shapes = (10, 70, 130, 200, 260, 330)  # 1 to 6 lane words: six shapes
    async with va.open_backend("cpu") as backend:
        before = backend.telemetry().resident_buffers_live
        async with va.resident_graph(backend, graph) as session:
            (replica,) = session._replicas
            if bound == "sets":
                monkeypatch.setattr(_replica, "IDLE_SETS", 4)
            else:  # room for the newest shapes' counts scratches: words 5 and 6
                n = graph.num_vertices
                sizes = [3 * 8 * n * w + 4 * 64 * w + 4 * 64 * w for w in (5, 6)]
                monkeypatch.setattr(_replica, "IDLE_BYTES", sum(sizes) + 4096)
            for count in shapes:
                counts = await session.bfs_many(list(range(count)), readback="counts")
                assert counts.shape == (count,)
            kept = [key[1][0] for key, _ in replica.idle_keys()]
            assert kept == ([3, 4, 5, 6] if bound == "sets" else [5, 6])
        assert backend.telemetry().resident_buffers_live == before


async def test_a_cancelled_traversal_leaves_no_scratch_behind(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bfs_many cancelled while its traversal holds a scratch does not give that
    scratch to the next traversal (its work may still be running): the buffers are
    freed, and the next run is right."""
    from vyre_async.algorithms.msbfs import _run

    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 64)]
    started = anyio.Event()
    run = _run.MultiSourceTraversal._run

    async def stalled(self: object, *args: object) -> np.ndarray:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        (replica,) = session._replicas
        live = backend.telemetry().resident_buffers_live
        monkeypatch.setattr(_run.MultiSourceTraversal, "_run", stalled)
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.bfs_many, sources)
            await started.wait()
            assert backend.telemetry().resident_buffers_live > live  # the scratch
            tg.cancel_scope.cancel()
        assert replica.idle_keys() == []
        assert backend.telemetry().resident_buffers_live == live
        monkeypatch.setattr(_run.MultiSourceTraversal, "_run", run)
        levels = await session.bfs_many(sources)
        assert [key[0] for key, count in replica.idle_keys()] == ["msbfs"]
    for row, source in zip(levels, sources, strict=True):
        np.testing.assert_array_equal(row, scipy_levels(graph, source))
