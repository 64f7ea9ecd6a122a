"""Objects that run tasks while open close from any task, and leave the caller's scopes intact."""

from __future__ import annotations

import contextlib

import anyio
import anyio.lowlevel
import numpy as np
import pytest
from graph_references import GRAPH_SHAPES, scipy_levels

import vyre_async as va
from vyre_async.batching import DynamicBatcher
from vyre_async.kernels import axpy

#: Seconds any of these tests may take before it counts as hung.
BOUND_S = 30.0


async def _close_in_another_task(closable: va.Backend | va.ResidentGraphSession) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(closable.aclose)


async def test_session_closed_by_another_task_leaves_the_owners_scopes_intact(
    rng: np.random.Generator,
) -> None:
    """A batching session closed by another task: the owner's block and scopes exit cleanly."""
    graph = GRAPH_SHAPES["random_directed"](rng)
    with anyio.fail_after(BOUND_S), anyio.CancelScope() as outer:
        async with (
            va.open_backend("cpu") as backend,
            va.resident_graph(backend, graph, batching=va.BatchingConfig()) as session,
        ):
            await _close_in_another_task(session)
            assert session.state is va.LifecycleState.CLOSED
            await anyio.lowlevel.checkpoint()  # the owner's block is not cancelled
            with pytest.raises(va.LifecycleError, match=r"closed.*Fix:"):
                await session.bfs(0)
        await anyio.lowlevel.checkpoint()
    assert not outer.cancel_called


async def test_queries_queued_when_another_task_closes_the_session_are_answered(
    rng: np.random.Generator,
) -> None:
    """Queries submitted before another task closes the session still get their levels."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 40)]
    results: dict[int, np.ndarray] = {}
    config = va.BatchingConfig(max_batch=8)
    with anyio.fail_after(BOUND_S):
        async with (
            va.open_backend("cpu") as backend,
            va.resident_graph(backend, graph, batching=config) as session,
        ):

            async def query(i: int) -> None:
                results[i] = await session.bfs(sources[i])

            async def close_once_all_are_submitted() -> None:
                while (stats := session.batch_stats()) is not None and stats.submitted < len(
                    sources
                ):
                    await anyio.lowlevel.checkpoint()
                await session.aclose()

            async with anyio.create_task_group() as tg:
                for i in range(len(sources)):
                    tg.start_soon(query, i)
                tg.start_soon(close_once_all_are_submitted)
    assert sorted(results) == list(range(len(sources)))
    for i, source in enumerate(sources):
        np.testing.assert_array_equal(results[i], scipy_levels(graph, source))


async def test_session_closed_inside_a_nested_cancel_scope_leaves_it_intact(
    rng: np.random.Generator,
) -> None:
    """``aclose()`` inside a cancel scope opened within the block leaves that scope intact."""
    graph = GRAPH_SHAPES["random_directed"](rng)
    with anyio.fail_after(BOUND_S):
        async with (
            va.open_backend("cpu") as backend,
            va.resident_graph(backend, graph, batching=va.BatchingConfig()) as session,
        ):
            with anyio.move_on_after(BOUND_S) as nested:
                await session.aclose()
            assert not nested.cancel_called
        assert session.state is va.LifecycleState.CLOSED


async def test_backend_closed_by_another_task_finishes_its_work_and_leaves_the_owner_intact(
    rng: np.random.Generator,
) -> None:
    """A backend closed by another task: a pending dispatch finishes, the owner exits cleanly."""
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    with anyio.fail_after(BOUND_S), anyio.CancelScope() as outer:
        async with va.open_backend("cpu") as backend:
            pending = backend.submit(axpy, {"x": x, "y": y}, a=2.0)
            await _close_in_another_task(backend)
            assert backend.state is va.LifecycleState.CLOSED
            out = await pending
            await anyio.lowlevel.checkpoint()  # the owner's block is not cancelled
        await anyio.lowlevel.checkpoint()
    assert not outer.cancel_called
    np.testing.assert_allclose(out["y"], 2.0 * x.astype(np.float64) + y, rtol=1e-6)


async def test_device_group_closed_by_another_task_leaves_the_owner_intact() -> None:
    """``group.aclose()`` from another task closes every backend; the owner's block exits."""
    with anyio.fail_after(BOUND_S), anyio.CancelScope() as outer:
        async with va.open_devices("cpu", devices=[0, 1]) as group:
            async with anyio.create_task_group() as tg:
                tg.start_soon(group.aclose)
            assert all(b.state is va.LifecycleState.CLOSED for b in group.backends)
        await anyio.lowlevel.checkpoint()
    assert not outer.cancel_called


async def test_batcher_closed_by_another_task_drains_and_leaves_the_owner_intact() -> None:
    """A DynamicBatcher stopped by another task answers its queue; the owner's group exits."""

    async def double(batch: list[int]) -> list[int]:
        await anyio.lowlevel.checkpoint()
        return [2 * r for r in batch]

    batcher: DynamicBatcher[int, int] = DynamicBatcher(double, max_batch=4)
    answers: dict[int, int] = {}

    async def ask(r: int) -> None:
        answers[r] = await batcher.submit(r)

    async def close_once_all_are_submitted() -> None:
        while batcher.stats().submitted < 10:
            await anyio.lowlevel.checkpoint()
        await batcher.aclose()

    with anyio.fail_after(BOUND_S), anyio.CancelScope() as outer:
        async with anyio.create_task_group() as owner:
            await owner.start(batcher.run)
            async with anyio.create_task_group() as callers:
                for r in range(10):
                    callers.start_soon(ask, r)
                callers.start_soon(close_once_all_are_submitted)
    assert not outer.cancel_called
    assert answers == {r: 2 * r for r in range(10)}


async def test_leaving_a_session_block_in_another_task_than_its_owner_is_refused(
    rng: np.random.Generator,
) -> None:
    """``__aexit__`` from a task other than the live owner: LifecycleError, the session closed."""
    graph = GRAPH_SHAPES["random_directed"](rng)
    errors: list[va.LifecycleError] = []
    with anyio.fail_after(BOUND_S), anyio.CancelScope() as outer:
        async with va.open_backend("cpu") as backend:
            session = va.resident_graph(backend, graph, batching=va.BatchingConfig())
            async with contextlib.AsyncExitStack() as stack:
                await stack.enter_async_context(session)
                elsewhere = stack.pop_all()

            async def leave_elsewhere() -> None:
                try:
                    await elsewhere.aclose()
                except va.LifecycleError as exc:
                    errors.append(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(leave_elsewhere)
            assert session.state is va.LifecycleState.CLOSED
            await session.__aexit__(None, None, None)  # the owner leaves its own block
        await anyio.lowlevel.checkpoint()
    assert not outer.cancel_called
    assert len(errors) == 1
    assert "in the task that entered it" in str(errors[0])
    assert "Fix:" in str(errors[0])
