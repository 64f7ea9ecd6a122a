"""The CUDA backend's host path on the simulated driver (``cuda_sim``): no GPU needed.

The simulator runs each kernel's NumPy reference where the device would run the
kernel, so these tests check what the backend's Python does (bound launches,
staging, argument blocks, fences, waiting, releases, guards) against float64
references; what the GPU computes is checked in ``tests/gpu/``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import numpy as np
import pytest

import vyre_async as va
from vyre_async.errors import DeviceLostError, DispatchError, LifecycleError, ValidationError
from vyre_async.kernels import axpy, histogram256, sum_reduce
from vyre_async.testing import spin_kernel

sys.path.insert(0, str(Path(__file__).parent))
import cuda_sim

#: Ceilings on the Python function calls of one repeated awaited resident dispatch
#: (library code and the event loop's, the simulator's own calls excluded), with the
#: event finishing at the second query (two loop turns). Measured under pytest: 86 on
#: asyncio and 181 on trio (a trio checkpoint is about 40 calls of trio's own) for a
#: dispatch, a prepared call at most as many. The guard is deterministic: it fails when
#: the hot path grows. Before bound launches one such dispatch made about 300 calls on
#: asyncio.
CALL_CEILINGS = {"asyncio": 95, "trio": 190}


@pytest.fixture
async def sim(monkeypatch: pytest.MonkeyPatch) -> cuda_sim.SimulatedDriver:
    """The simulated driver, installed for this test."""
    return cuda_sim.install(monkeypatch, lag=1)


@pytest.fixture
async def cuda(sim: cuda_sim.SimulatedDriver) -> AsyncIterator[Any]:
    """A CUDA backend on the simulated driver, checked for leaks on the way out."""
    async with va.open_backend("cuda") as backend:
        before = backend.live_allocations()
        yield backend
        after = backend.live_allocations()
        assert after == before, f"live allocations changed: {before} -> {after}"


def axpy_ref(a: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (np.float64(a) * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)


async def test_host_input_dispatch_equals_the_float64_reference(
    cuda: Any, rng: np.random.Generator
) -> None:
    """Host inputs go through staging; outputs are new arrays equal to float64 axpy."""
    n = int(rng.integers(1, 5000))
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    y_before = y.copy()
    for a in (2.0, -0.5, 3.0):  # the same binding again: a lookup, new scalars
        out = await cuda.dispatch(axpy, {"x": x, "y": y}, a=a)
        np.testing.assert_allclose(out["y"], axpy_ref(a, x, y), rtol=1e-6, atol=1e-6)
        assert out["y"] is not y
    np.testing.assert_array_equal(y, y_before)  # the caller's array is untouched


async def test_outputs_are_written_into_a_poisoned_staging_block(
    cuda: Any, rng: np.random.Generator, sim: cuda_sim.SimulatedDriver
) -> None:
    """A reused staging block full of garbage still gives zeroed-then-written outputs."""
    data = rng.integers(0, 256, 10_000, dtype=np.uint8)
    first = await cuda.dispatch(histogram256, {"data": data})
    for launch in cuda._launches.values():
        for staging in launch.spares:
            staging.pinned.array[:] = 0xFF  # poison what the next dispatch reuses
            sim.view(staging.block.ptr, staging.block.nbytes)[:] = 0xFF
    second = await cuda.dispatch(histogram256, {"data": data})
    expected = np.bincount(data, minlength=256).astype(np.uint32)
    np.testing.assert_array_equal(first["counts"], expected)
    np.testing.assert_array_equal(second["counts"], expected)


async def test_resident_dispatches_run_in_place_in_order(
    cuda: Any, rng: np.random.Generator
) -> None:
    """Resident axpy applied three times equals the float64 model of the three."""
    n = 4096
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    xb, yb = await cuda.upload(x), await cuda.upload(y)
    model = y.astype(np.float64)
    for a in (1.5, -2.0, 0.25):
        assert await cuda.dispatch(axpy, {"x": xb, "y": yb}, a=a) == {}
        model = (a * x.astype(np.float64) + model).astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(await cuda.read(yb), model, rtol=1e-5, atol=1e-5)
    await cuda.free(xb)
    await cuda.free(yb)


async def test_a_prepared_dispatch_runs_its_bound_inputs_with_new_scalars(
    cuda: Any, rng: np.random.Generator
) -> None:
    """prepare() binds once; each call takes new scalars and the host arrays' contents."""
    n = 777
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    prepared = await cuda.prepare(axpy, {"x": x, "y": y}, a=1.0)
    assert isinstance(prepared, va.PreparedDispatch)
    np.testing.assert_allclose((await prepared())["y"], axpy_ref(1.0, x, y), rtol=1e-6)
    np.testing.assert_allclose((await prepared(a=4.0))["y"], axpy_ref(4.0, x, y), rtol=1e-6)
    x[:] = rng.standard_normal(n)  # held arrays are read at each call
    np.testing.assert_allclose((await prepared())["y"], axpy_ref(1.0, x, y), rtol=1e-6)
    with pytest.raises(ValidationError, match="not finite"):
        await prepared(a=float("inf"))
    np.testing.assert_allclose((await prepared())["y"], axpy_ref(1.0, x, y), rtol=1e-6)


async def test_a_prepared_dispatch_outliving_its_backend_is_refused(
    sim: cuda_sim.SimulatedDriver,
) -> None:
    """A prepared call after the backend closed raises LifecycleError with a fix and
    launches nothing."""
    async with va.open_backend("cuda") as backend:
        x = np.ones(8, np.float32)
        prepared = await backend.prepare(axpy, {"x": x, "y": x.copy()}, a=1.0)
        await prepared()
    launches = sim.calls.get("cuLaunchKernel", 0)
    with pytest.raises(LifecycleError, match=r"closed.*Fix:"):
        await prepared()
    assert sim.calls.get("cuLaunchKernel", 0) == launches


async def test_a_freed_buffer_under_a_cached_binding_is_refused(cuda: Any) -> None:
    """After a free, the cached binding and a prepared dispatch refuse the buffer."""
    x = np.ones(64, np.float32)
    xb, yb = await cuda.upload(x), await cuda.upload(x)
    await cuda.dispatch(axpy, {"x": xb, "y": yb}, a=1.0)
    prepared = await cuda.prepare(axpy, {"x": xb, "y": yb}, a=1.0)
    await cuda.free(xb)
    with pytest.raises(LifecycleError, match=r"already freed.*Fix:"):
        await cuda.dispatch(axpy, {"x": xb, "y": yb}, a=1.0)
    with pytest.raises(LifecycleError, match=r"already freed.*Fix:"):
        await prepared()
    await cuda.free(yb)


async def test_a_buffer_reallocated_at_a_freed_address_is_a_new_binding(
    cuda: Any, rng: np.random.Generator
) -> None:
    """A buffer freed and allocated again at the same address is bound afresh: the new
    handle computes on its own data and the old handle stays refused."""
    n = 256
    x = rng.standard_normal(n).astype(np.float32)
    old_y = await cuda.upload(np.zeros(n, np.float32))
    xb = await cuda.upload(x)
    await cuda.dispatch(axpy, {"x": xb, "y": old_y}, a=1.0)
    old_address = cuda._registry.storage(old_y).ptr
    await cuda.free(old_y)
    new_y = await cuda.upload(np.full(n, 5.0, np.float32))
    assert cuda._registry.storage(new_y).ptr == old_address  # the pool gave it back
    await cuda.dispatch(axpy, {"x": xb, "y": new_y}, a=2.0)
    np.testing.assert_allclose(await cuda.read(new_y), axpy_ref(2.0, x, np.full(n, 5.0)))
    with pytest.raises(LifecycleError, match="already freed"):
        await cuda.dispatch(axpy, {"x": xb, "y": old_y}, a=1.0)
    await cuda.free(xb)
    await cuda.free(new_y)


async def test_a_cancelled_await_keeps_memory_and_guards_until_the_work_ends(
    cuda: Any, sim: cuda_sim.SimulatedDriver
) -> None:
    """Cancelling an await stops the waiter only: the buffers stay in use (free is
    refused) and the staging memory stays out until the event finishes."""
    x = np.ones(128, np.float32)
    xb, yb = await cuda.upload(x), await cuda.upload(x)
    baseline = cuda.live_allocations()
    with sim.holding():
        with anyio.move_on_after(0.05) as scope:
            await cuda.dispatch(axpy, {"x": xb, "y": yb}, a=1.0)
        assert scope.cancelled_caught
        assert cuda.live_allocations()["in_flight"] == 1
        with pytest.raises(LifecycleError, match="unfinished"):
            await cuda.free(yb)
        with anyio.move_on_after(0.05):
            await cuda.dispatch(axpy, {"x": x, "y": x}, a=1.0)  # staged host work
        assert cuda.live_allocations()["pinned"] > baseline["pinned"]
    with anyio.fail_after(5):
        await cuda.settle([xb, yb])
        await cuda._watcher.drain()  # the cancelled host dispatch too
    assert cuda.live_allocations() == baseline
    await cuda.free(xb)
    await cuda.free(yb)


async def test_concurrent_awaits_cancelled_while_parked_still_run_every_dispatch_once(
    cuda: Any, rng: np.random.Generator
) -> None:
    """Tasks awaiting dispatches side by side park behind whichever polls, take its
    role over, or are cancelled while parked or polling: a cancelled await stops only
    the waiter, so every dispatch still runs once, in order on its buffer, and all
    memory comes back."""
    tasks, rounds = 8, 6
    # Loaded ahead, so each dispatch is enqueued before its await first yields (an
    # unloaded kernel loads first, and a cancel landing then stops the dispatch too).
    await cuda.load_kernels(axpy)
    x = rng.standard_normal(256).astype(np.float32)
    ys = [rng.standard_normal(256).astype(np.float32) for _ in range(tasks)]
    xb = await cuda.upload(x)
    ybs = [await cuda.upload(y) for y in ys]
    baseline = cuda.live_allocations()
    cancelled = 0

    async def run(i: int) -> None:
        nonlocal cancelled
        for k in range(rounds):
            with anyio.CancelScope() as scope:
                if (i + k) % 3 == 0:
                    scope.cancel()  # lands at the await's first yield, after the enqueue
                await cuda.dispatch(axpy, {"x": xb, "y": ybs[i]}, a=0.5 + k)
            cancelled += scope.cancelled_caught

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for i in range(tasks):
                tg.start_soon(run, i)
        await cuda.settle([xb, *ybs])
        await cuda._watcher.drain()
    assert cancelled == sum((i + k) % 3 == 0 for i in range(tasks) for k in range(rounds))
    assert cuda.live_allocations() == baseline
    for y, yb in zip(ys, ybs, strict=True):
        want = y.astype(np.float64)
        for k in range(rounds):
            want = np.float64(0.5 + k) * x.astype(np.float64) + want
        np.testing.assert_allclose(await cuda.read(yb), want, rtol=1e-5, atol=1e-5)
    assert cuda._watcher.in_flight == 0
    for buffer in (xb, *ybs):
        await cuda.free(buffer)


async def test_dispatches_of_one_turn_share_one_fence(
    cuda: Any, sim: cuda_sim.SimulatedDriver, rng: np.random.Generator
) -> None:
    """Sixty-four tasks dispatching at once record far fewer events than dispatches,
    and every task gets its own, right result."""
    x, y = (
        rng.standard_normal(1000).astype(np.float32),
        rng.standard_normal(1000).astype(np.float32),
    )
    await cuda.dispatch(axpy, {"x": x, "y": y}, a=0.0)  # bound and warm
    records = sim.calls.get("cuEventRecord", 0)
    results: dict[int, np.ndarray] = {}

    async def one(index: int) -> None:
        results[index] = (await cuda.dispatch(axpy, {"x": x, "y": y}, a=float(index)))["y"]

    async with anyio.create_task_group() as tg:
        for index in range(64):
            tg.start_soon(one, index)
    for index in range(64):
        np.testing.assert_allclose(results[index], axpy_ref(index, x, y), rtol=1e-5, atol=1e-5)
    assert sim.calls["cuEventRecord"] - records <= 16


async def test_a_failed_launch_among_coalesced_dispatches_fails_only_itself(
    cuda: Any, sim: cuda_sim.SimulatedDriver, rng: np.random.Generator
) -> None:
    """Of nine dispatches submitted in one turn the middle one fails to launch: it
    raises at once; the others share fences (one event per stream) and give right
    results."""
    x = rng.standard_normal(500).astype(np.float32)
    await cuda.dispatch(axpy, {"x": x, "y": x}, a=1.0)
    await cuda.dispatch(sum_reduce, {"x": x})
    sim.failing_launches[sum_reduce.entry] = cuda_sim.R.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    pendings = {}
    with sim.holding():
        for index in range(9):
            if index == 4:
                with pytest.raises(DispatchError, match=r"OUT_OF_RESOURCES.*Fix:"):
                    cuda.submit(sum_reduce, {"x": x})
            else:
                pendings[index] = cuda.submit(axpy, {"x": x, "y": x}, a=float(index))
        fences = {id(p._completion.fence) for p in pendings.values()}
        assert len(fences) < len(pendings)
    sim.failing_launches.clear()
    for index, pending in pendings.items():
        np.testing.assert_allclose((await pending)["y"], axpy_ref(index, x, x), rtol=1e-6)


async def test_a_device_fault_fails_every_dispatch_of_its_fence(
    sim: cuda_sim.SimulatedDriver,
) -> None:
    """A sticky error on a shared fence fails each of its dispatches with DeviceLostError."""
    x = np.ones(64, np.float32)
    async with va.open_backend("cuda") as backend:
        await backend.dispatch(axpy, {"x": x, "y": x}, a=1.0)
        sim.next_event_result = cuda_sim.R.CUDA_ERROR_ILLEGAL_ADDRESS
        errors: list[BaseException] = []

        async def run() -> None:
            try:
                await backend.dispatch(axpy, {"x": x, "y": x}, a=1.0)
            except DeviceLostError as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(run)
        assert len(errors) == 3
        with pytest.raises(DeviceLostError, match="lost earlier"):
            await backend.dispatch(axpy, {"x": x, "y": x}, a=1.0)


async def test_submit_returns_a_pending_dispatch_and_unawaited_outputs_survive_close(
    sim: cuda_sim.SimulatedDriver, rng: np.random.Generator
) -> None:
    """submit() makes a PendingDispatch; one never awaited before the backend closed
    still gives its outputs afterwards."""
    x, y = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    async with va.open_backend("cuda") as backend:
        pending = backend.submit(axpy, {"x": x, "y": y}, a=2.0)
        timed = await backend.submit(
            axpy, {"x": x, "y": y}, a=1.0, config=va.DispatchConfig(timing=True)
        ).timed()
        assert timed.timing.device_ns == 500_000  # the simulator's 0.5 ms
    np.testing.assert_allclose((await pending)["y"], axpy_ref(2.0, x, y), rtol=1e-6)


async def test_work_whose_kernel_loads_after_submit_survives_an_immediate_close(
    sim: cuda_sim.SimulatedDriver, rng: np.random.Generator
) -> None:
    """A backend closed right after submit() of kernels not loaded yet (and of large
    inputs staged later) waits for that work: each gives its outputs, nothing leaks."""
    x = rng.standard_normal(300).astype(np.float32)
    big = rng.standard_normal(600_000).astype(np.float32)  # 2.4 MB: staged in a thread
    async with va.open_backend("cuda") as backend:
        pending = [backend.submit(axpy, {"x": x, "y": x}, a=float(a)) for a in range(8)]
        pending.append(backend.submit(spin_kernel, {"x": x}, cycles=1))
        pending.append(backend.submit(axpy, {"x": big, "y": big}, a=1.0))
    left = (set(sim._device_blocks), set(sim._pinned))  # what the closed backend kept
    outputs = [await p for p in pending]
    for a, out in enumerate(outputs[:8]):
        np.testing.assert_allclose(out["y"], axpy_ref(float(a), x, x), rtol=1e-6)
    np.testing.assert_array_equal(outputs[8]["y"], x)
    np.testing.assert_allclose(outputs[9]["y"], axpy_ref(1.0, big, big), rtol=1e-6)
    assert left == (set(), set())


async def test_submits_of_one_binding_while_its_kernel_loads_share_one_launch(
    cuda: Any, rng: np.random.Generator
) -> None:
    """Several submit()s of one binding before its kernel loaded each answer, and keep
    one cached launch between them (the fixture holds live allocations at baseline)."""
    xs = [rng.standard_normal(256).astype(np.float32) for _ in range(6)]
    pending = [cuda.submit(axpy, {"x": x, "y": x}, a=float(i)) for i, x in enumerate(xs)]
    for i, (x, p) in enumerate(zip(xs, pending, strict=True)):
        np.testing.assert_allclose((await p)["y"], axpy_ref(float(i), x, x), rtol=1e-6)


async def test_a_kernel_not_loaded_yet_is_loaded_then_dispatched(
    cuda: Any, rng: np.random.Generator
) -> None:
    """submit() of a kernel never loaded binds now and enqueues once it has loaded."""
    x = rng.standard_normal(64).astype(np.float32)
    pending = cuda.submit(spin_kernel, {"x": x}, cycles=1)
    out = await pending
    np.testing.assert_array_equal(out["y"], x)


async def test_large_host_inputs_are_staged_in_a_worker_thread(
    cuda: Any, monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator
) -> None:
    """Inputs over 1 MiB are copied into staging off the event loop."""
    calls: list[str] = []
    run_sync = anyio.to_thread.run_sync

    async def recording(func: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(getattr(func, "__name__", "?"))
        return await run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", recording)
    n = 600_000  # 2.4 MB per buffer
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = await cuda.dispatch(axpy, {"x": x, "y": y}, a=0.5)
    np.testing.assert_allclose(out["y"], axpy_ref(0.5, x, y), rtol=1e-6)
    assert "copy" in calls


async def test_a_buffer_freed_while_large_inputs_are_staged_is_refused(
    cuda: Any, sim: cuda_sim.SimulatedDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resident buffer freed while the dispatch's large host inputs are copied in a
    worker thread is refused after the copy: nothing is launched, the staging memory
    goes back, and the backend keeps working."""
    n = 600_000  # 2.4 MB: staged in a worker thread
    x = np.ones(n, np.float32)
    yb, zb = await cuda.upload(np.zeros(n, np.float32)), await cuda.upload(np.ones(n, np.float32))
    await cuda.dispatch(axpy, {"x": x, "y": yb}, a=1.0)  # bound and cached
    run_sync = anyio.to_thread.run_sync

    async def freeing_meanwhile(func: Any, *args: Any, **kwargs: Any) -> Any:
        result = await run_sync(func, *args, **kwargs)
        if getattr(func, "__name__", "") == "copy":
            monkeypatch.setattr(anyio.to_thread, "run_sync", run_sync)
            await cuda.free(yb)
        return result

    monkeypatch.setattr(anyio.to_thread, "run_sync", freeing_meanwhile)
    launches = sim.calls.get("cuLaunchKernel", 0)
    with pytest.raises(LifecycleError, match=r"already freed.*Fix:"):
        await cuda.dispatch(axpy, {"x": x, "y": yb}, a=1.0)
    assert sim.calls.get("cuLaunchKernel", 0) == launches
    out = await cuda.dispatch(axpy, {"x": x, "y": zb}, a=2.0)
    assert out == {}
    np.testing.assert_array_equal(await cuda.read(zb), np.full(n, 3.0, np.float32))
    await cuda.free(zb)


async def test_telemetry_counts_every_kind_of_awaited_dispatch_and_resets(cuda: Any) -> None:
    """Single launches over resident buffers (counted on a shorter path), repeated
    launches and host-input dispatches all show in dispatches, kernel launches and
    sync points; a reset zeroes them all."""
    x = np.ones(64, np.float32)
    xb, yb = await cuda.upload(x), await cuda.upload(x)
    cuda.reset_telemetry()
    for _ in range(3):
        await cuda.dispatch(axpy, {"x": xb, "y": yb}, a=1.0)
    await cuda.dispatch(
        axpy, {"x": xb, "y": yb}, config=va.DispatchConfig(fixpoint_iterations=4), a=1.0
    )
    await cuda.dispatch(axpy, {"x": x, "y": x}, a=1.0)
    t = cuda.telemetry()
    assert (t.dispatches, t.kernel_launches, t.sync_points) == (5, 3 + 4 + 1, 5)
    assert cuda.activity()[:2] == (5, 8)
    cuda.reset_telemetry()
    t = cuda.telemetry()
    assert (t.dispatches, t.kernel_launches, t.sync_points) == (0, 0, 0)
    await cuda.dispatch(axpy, {"x": xb, "y": yb}, a=1.0)
    assert (cuda.telemetry().dispatches, cuda.activity()[:2]) == (1, (1, 1))
    np.testing.assert_array_equal(await cuda.read(yb), np.full(64, 1.0 + 8.0, np.float32))
    await cuda.free(xb)
    await cuda.free(yb)


async def test_work_that_depends_on_one_stream_stays_on_it(
    cuda: Any, sim: cuda_sim.SimulatedDriver
) -> None:
    """A dispatch that must follow unfinished work on one stream joins that stream:
    ordered by the stream, with no cross-stream wait."""
    x = np.ones(64, np.float32)
    xb, yb = await cuda.upload(x), await cuda.upload(x)
    with sim.holding():
        first = cuda.submit(axpy, {"x": xb, "y": yb}, a=1.0)
        second = cuda.submit(axpy, {"x": xb, "y": yb}, a=1.0)
        assert sim.calls.get("cuStreamWaitEvent", 0) == 0
    await first
    await second
    np.testing.assert_array_equal(await cuda.read(yb), np.full(64, 3.0, np.float32))
    await cuda.free(xb)
    await cuda.free(yb)


def _library_calls(frame: Any) -> bool:
    return not frame.f_code.co_filename.endswith("cuda_sim.py")


async def _count_calls(coroutine_factory: Any) -> int:
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call") and _library_calls(frame):
            count += 1

    sys.setprofile(profile)
    try:
        await coroutine_factory()
    finally:
        sys.setprofile(None)
    return count


async def until(condition: Any) -> None:
    """Let the loop run until ``condition()`` holds (a test hang fails after 5 s)."""
    with anyio.fail_after(5):
        while not condition():  # noqa: ASYNC110 - backend state, with no event to wait on
            await anyio.sleep(0.001)


@pytest.mark.parametrize("follower", ["dispatch", "read", "settle"])
async def test_work_behind_a_writer_cancelled_before_its_enqueue_waits_for_what_it_waited_for(
    cuda: Any, sim: cuda_sim.SimulatedDriver, rng: np.random.Generator, follower: str
) -> None:
    """A writer cancelled while it waited for a read of its buffer never waited for the
    writer before it. A dispatch or read claimed behind it must wait for that writer
    instead, and ``settle`` must too: nothing runs or returns before the first writer
    finishes, and the results equal the float64 model of the work that ran."""
    n = 512
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    xb, yb = await cuda.upload(x), await cuda.upload(y)
    record = cuda._registry._record(yb)
    got: dict[str, Any] = {}
    writer = anyio.CancelScope()

    async def read_first() -> None:
        got["read"] = await cuda.read(yb)

    async def second_writer() -> None:
        with writer:
            await cuda.dispatch(axpy, {"x": xb, "y": yb}, a=3.0)

    async def follow() -> None:
        if follower == "dispatch":
            got["follower"] = (await cuda.dispatch(sum_reduce, {"x": yb}))["out"]
        elif follower == "read":
            got["follower"] = await cuda.read(yb)
        else:
            await cuda.settle([yb])
            got["follower"] = first.is_ready()

    def enqueued() -> tuple[int, int]:
        return sim.launches.count(sum_reduce.entry), sim.calls.get("cuMemcpyDtoHAsync", 0)

    async with anyio.create_task_group() as tg:
        with sim.holding():  # the first writer runs until the block ends
            first = cuda.submit(axpy, {"x": xb, "y": yb}, a=2.0)
            before = enqueued()
            tg.start_soon(read_first)
            await until(lambda: record.reads)
            tg.start_soon(second_writer)
            await until(lambda: record.last_write is not first._completion)
            second = record.last_write
            if follower != "settle":  # claimed behind the second writer before it fails
                tg.start_soon(follow)
                await until(lambda: record.reads)
            writer.cancel()
            await until(lambda: second.done)
            if follower == "settle":
                tg.start_soon(follow)
            for _ in range(50):
                await anyio.lowlevel.checkpoint()
            assert enqueued() == before, "work ran beside the writer it must follow"
            assert "follower" not in got
    await first
    y1 = axpy_ref(2.0, x, y)  # the second writer never ran
    np.testing.assert_allclose(got["read"], y1, rtol=1e-6)
    if follower == "dispatch":
        want = [y1.astype(np.float64).sum()]
        np.testing.assert_allclose(got["follower"], want, rtol=1e-4, atol=1e-3)
    elif follower == "read":
        np.testing.assert_array_equal(got["follower"], got["read"])
    else:
        assert got["follower"] is True
    np.testing.assert_allclose(await cuda.read(yb), y1, rtol=1e-6)
    await cuda.free(xb)
    await cuda.free(yb)


async def test_a_repeated_resident_dispatch_stays_under_its_call_ceiling(
    cuda: Any, anyio_backend: str
) -> None:
    """One repeated awaited resident dispatch, and one prepared call, make at most a
    fixed number of Python calls (a deterministic guard of the hot path)."""
    x = np.ones(1024, np.float32)
    xb, yb = await cuda.upload(x), await cuda.upload(x)
    try:
        prepared = await cuda.prepare(axpy, {"x": xb, "y": yb}, a=1.0)
        for _ in range(20):
            await cuda.dispatch(axpy, {"x": xb, "y": yb}, a=1.0)
            await prepared()
        # The fewest of five: trio shuffles which ready task runs first, so now and
        # then another task's step lands inside the counted await.
        dispatch = min(
            [await _count_calls(lambda: cuda.dispatch(axpy, {"x": xb, "y": yb}, a=1.0))]
            + [
                await _count_calls(lambda: cuda.dispatch(axpy, {"x": xb, "y": yb}, a=1.0))
                for _ in range(4)
            ]
        )
        direct = min([await _count_calls(prepared) for _ in range(5)])
    finally:
        await cuda.free(xb)
        await cuda.free(yb)
    ceiling = CALL_CEILINGS[anyio_backend]
    assert dispatch <= ceiling, f"{dispatch} calls per dispatch"
    assert direct <= ceiling, f"{direct} calls per prepared call"


def _double_plus() -> va.Kernel:
    """``y = 2 y + c`` in place: each result depends on the order of application."""
    from vyre_async.kernels import BufferParam, ScalarParam, grid_stride

    return va.Kernel(
        name="double_plus",
        source='extern "C" __global__ void double_plus(float* y, float c, int n) {}',
        entry="double_plus",
        params=(
            BufferParam("y", np.float32, "inout", "n"),
            ScalarParam("c", np.float32),
            ScalarParam("n", np.int32, default="n"),
        ),
        launch=grid_stride("n"),
        reference=lambda arrays, scalars: np.copyto(arrays["y"], arrays["y"] * 2 + scalars["c"]),
    )


async def test_submissions_of_a_kernel_still_loading_keep_submission_order(
    cuda: Any, rng: np.random.Generator
) -> None:
    """Sixteen submissions on one buffer of a kernel not loaded yet (each enqueued from a
    task once it has loaded) apply in the order they were submitted."""
    kernel = _double_plus()
    y0 = rng.uniform(-1, 1, 1000).astype(np.float32)
    constants = [float(c) for c in rng.integers(1, 9, size=16)]
    buf = await cuda.upload(y0)
    pendings = [cuda.submit(kernel, {"y": buf}, c=c) for c in constants]
    for pending in reversed(pendings):
        await pending
    got = await cuda.read(buf)
    await cuda.free(buf)
    want = y0.astype(np.float64)
    for c in constants:
        want = want * 2 + c
    np.testing.assert_allclose(got, want, rtol=1e-5)


async def test_a_submission_copies_small_host_inputs_before_it_returns(
    cuda: Any, rng: np.random.Generator
) -> None:
    """Host inputs of a submission whose kernel still loads are copied at submit: the
    caller may overwrite its array at once."""
    kernel = _double_plus()
    y = rng.uniform(-1, 1, 100).astype(np.float32)
    want = y.astype(np.float64) * 2 + 3
    pending = cuda.submit(kernel, {"y": y}, c=3.0)
    y[:] = 1000.0
    np.testing.assert_allclose((await pending)["y"], want, rtol=1e-6)


async def test_an_empty_dispatch_returns_empty_outputs_without_a_launch(
    cuda: Any, sim: cuda_sim.SimulatedDriver
) -> None:
    """Zero-length inputs give zero-length outputs and launch nothing."""
    empty = np.zeros(0, np.float32)
    launched = len(sim.launches)
    out = await cuda.dispatch(axpy, {"x": empty, "y": empty}, a=1.0)
    assert out["y"].shape == (0,)
    assert len(sim.launches) == launched


async def test_a_large_contiguous_upload_copies_from_host_memory_off_the_event_loop(
    sim: cuda_sim.SimulatedDriver, rng: np.random.Generator
) -> None:
    """A 2 MiB C-contiguous upload takes no page-locked staging block: one
    ``cuMemcpyHtoD`` from the array itself, then a sync of that thread's stream, both in
    a worker thread, never on the event loop's; it reads back equal."""
    from vyre_async.backends.cuda import CudaBackend

    data = rng.standard_normal(1 << 19).astype(np.float32)  # 2 MiB: a large copy
    async with CudaBackend(max_cached_pinned_bytes=0) as backend:
        pinned = sim.calls.get("cuMemHostAlloc", 0)
        buffer = await backend.upload(data)
        staged = sim.calls.get("cuMemHostAlloc", 0) - pinned
        copied_by = set(sim.threads.get("cuMemcpyHtoD", ()))
        synced_by = set(sim.threads.get("cuStreamSynchronize", ()))
        back = await backend.read(buffer)
        await backend.free(buffer)
    assert staged == 0, "the upload was staged through page-locked memory"
    assert sim.calls["cuMemcpyHtoD"] == 1
    assert copied_by
    assert threading.get_ident() not in copied_by
    assert copied_by <= synced_by
    np.testing.assert_array_equal(back, data)


async def test_a_large_allocation_is_made_off_the_event_loop(
    sim: cuda_sim.SimulatedDriver, cuda: Any
) -> None:
    """A 4 MiB zeroed allocation (a traversal's scratch) calls ``cuMemAlloc`` in a
    worker thread, never on the event loop's, and reads back as zeros."""
    sim.threads.pop("cuMemAlloc", None)  # the allocations of the backend's opening
    buffer = await cuda.alloc(4 << 20, np.uint8)
    allocated_by = set(sim.threads["cuMemAlloc"])
    back = await cuda.read(buffer)
    await cuda.free(buffer)
    assert threading.get_ident() not in allocated_by
    np.testing.assert_array_equal(back, np.zeros(4 << 20, np.uint8))
