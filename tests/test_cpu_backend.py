"""The CPU backend: dispatch, pending handles, ordering, timeouts, cancellation."""

from __future__ import annotations

from collections.abc import Mapping

import anyio
import numpy as np
import pytest

import vyre_async as va
from vyre_async.kernels import BufferParam, Kernel, ScalarParam, axpy, grid_stride, histogram256
from vyre_async.testing import Gate, gated_kernel


def _double_plus(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    arrays["y"][:] = arrays["y"] * 2 + scalars["c"]


#: Not commutative: applying c=1 then c=2 differs from c=2 then c=1, so order shows.
DOUBLE_PLUS = Kernel(
    name="double_plus",
    source='extern "C" __global__ void double_plus(float* y, float c, int n) {}',
    entry="double_plus",
    params=(
        BufferParam("y", np.float32, "inout", "n"),
        ScalarParam("c", np.float32),
        ScalarParam("n", np.int32, default="n"),
    ),
    launch=grid_stride("n"),
    reference=_double_plus,
)


@pytest.mark.parametrize("n", [0, 1, 257, 10_007])
async def test_axpy_dispatch_matches_float64(rng: np.random.Generator, n: int) -> None:
    """axpy on the CPU backend equals a float64 NumPy computation."""
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    a = float(rng.uniform(-3, 3))
    async with va.open_backend("cpu") as backend:
        out = await backend.dispatch(axpy, {"x": x, "y": y}, a=a)
    expected = np.float64(np.float32(a)) * x.astype(np.float64) + y.astype(np.float64)
    assert out["y"].dtype == np.float32
    np.testing.assert_allclose(out["y"], expected, rtol=1e-6, atol=1e-6)


async def test_host_inputs_are_staged_at_submit(rng: np.random.Generator) -> None:
    """Changing a host array after submit does not change the dispatch's result."""
    x = rng.standard_normal(100).astype(np.float32)
    y = np.zeros(100, dtype=np.float32)
    expected = 2.0 * x.astype(np.float64)
    async with va.open_backend("cpu") as backend:
        pending = backend.submit(axpy, {"x": x, "y": y}, a=2.0)
        x[:] = 1e6
        y[:] = 1e6
        out = await pending
    np.testing.assert_allclose(out["y"], expected, rtol=1e-6)
    assert (y == 1e6).all(), "the caller's inout array must not be written"


async def test_timed_reports_every_component(rng: np.random.Generator) -> None:
    """timed() returns the outputs and positive wall, device, enqueue and wait times."""
    data = rng.integers(0, 256, 5000, dtype=np.uint8)
    async with va.open_backend("cpu") as backend:
        pending = backend.submit(histogram256, {"data": data})
        result = await pending.timed()
        assert pending.is_ready()
    np.testing.assert_array_equal(result.outputs["counts"], np.bincount(data, minlength=256))
    t = result.timing
    assert t.wall_ns >= t.wait_ns > 0
    assert t.enqueue_ns > 0
    assert t.device_ns is not None
    assert t.device_ns > 0


async def test_awaiting_twice_returns_the_same_outputs() -> None:
    """A pending dispatch can be awaited again and gives the same arrays."""
    x = np.ones(8, dtype=np.float32)
    async with va.open_backend("cpu") as backend:
        pending = backend.submit(axpy, {"x": x, "y": x}, a=1.0)
        first = await pending
        second = await pending
    assert first["y"] is second["y"]


async def test_work_on_one_resident_buffer_runs_in_submit_order(
    rng: np.random.Generator,
) -> None:
    """Dispatches sharing a resident buffer apply in the order they were submitted."""
    y0 = rng.standard_normal(64).astype(np.float32)
    constants = [float(c) for c in rng.integers(1, 9, size=12)]
    async with va.open_backend("cpu", cpu_workers=4) as backend:
        buf = await backend.upload(y0)
        pendings = [backend.submit(DOUBLE_PLUS, {"y": buf}, c=c) for c in constants]
        for pending in reversed(pendings):
            await pending
        got = await backend.read(buf)
        await backend.free(buf)
    expected = y0.astype(np.float64)
    for c in constants:
        expected = expected * 2 + c
    np.testing.assert_allclose(got, expected, rtol=1e-5)


async def test_fixpoint_iterations_launch_back_to_back() -> None:
    """fixpoint_iterations=k applies the kernel k times to the inout buffer."""
    y = np.zeros(4, dtype=np.float32)
    async with va.open_backend("cpu") as backend:
        config = va.DispatchConfig(fixpoint_iterations=3)
        out = await backend.dispatch(DOUBLE_PLUS, {"y": y}, c=1.0, config=config)
        assert backend.telemetry().kernel_launches == 3
    np.testing.assert_array_equal(out["y"], np.full(4, 7.0, dtype=np.float32))


async def test_timeout_raises_dispatch_error_and_keeps_memory_reserved() -> None:
    """A timed-out await raises DispatchError; the buffer stays reserved until the work ends."""
    gate = Gate()
    kernel = gated_kernel(gate)
    async with va.open_backend("cpu") as backend:
        x = await backend.upload(np.arange(16, dtype=np.float32))
        pending = backend.submit(kernel, {"x": x}, config=va.DispatchConfig(timeout=0.05))
        with pytest.raises(va.DispatchError, match="Fix:"):
            await pending
        with pytest.raises(va.LifecycleError, match="unfinished"):
            await backend.free(x)
        gate.open()
        with anyio.fail_after(10):
            out = await pending
        assert pending.is_ready()
        await backend.free(x)
    np.testing.assert_array_equal(out["y"], np.arange(16, dtype=np.float32))


async def test_cancelled_await_leaves_backend_usable() -> None:
    """Cancelling an await frees the waiter; the dispatch finishes and the backend works on."""
    gate = Gate()
    kernel = gated_kernel(gate)
    async with va.open_backend("cpu") as backend:
        x = await backend.upload(np.arange(8, dtype=np.float32))
        pending = backend.submit(kernel, {"x": x})
        with anyio.move_on_after(0.05) as scope:
            await pending
        assert scope.cancelled_caught
        assert not pending.is_ready()
        with pytest.raises(va.LifecycleError, match="unfinished"):
            await backend.free(x)
        gate.open()
        out = await pending
        np.testing.assert_array_equal(out["y"], np.arange(8, dtype=np.float32))
        again = await backend.dispatch(
            axpy, {"x": np.ones(3, np.float32), "y": np.ones(3, np.float32)}, a=1.0
        )
        np.testing.assert_array_equal(again["y"], np.full(3, 2.0, dtype=np.float32))
        await backend.free(x)


async def test_failing_reference_raises_dispatch_error() -> None:
    """An exception inside a reference reaches the awaiter as DispatchError with a fix."""

    def broken(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
        raise ZeroDivisionError("planted")

    kernel = Kernel(
        name="broken",
        source="",
        entry="broken",
        params=(BufferParam("y", np.float32, "inout", "n"),),
        launch=grid_stride("n"),
        reference=broken,
    )
    async with va.open_backend("cpu") as backend:
        with pytest.raises(va.DispatchError, match=r"planted.*Fix:"):
            await backend.dispatch(kernel, {"y": np.ones(2, np.float32)})
        out = await backend.dispatch(
            axpy, {"x": np.ones(2, np.float32), "y": np.ones(2, np.float32)}, a=1.0
        )
    assert out["y"].tolist() == [2.0, 2.0]


async def test_host_array_for_output_parameter_is_refused() -> None:
    """Passing a host array for an output-only parameter raises ValidationError."""
    async with va.open_backend("cpu") as backend:
        with pytest.raises(va.ValidationError, match=r"'counts'.*Fix:"):
            backend.submit(
                histogram256,
                {"data": np.zeros(4, np.uint8), "counts": np.zeros(256, np.uint32)},
            )
        assert backend.telemetry().dispatches == 0


async def test_readers_share_a_buffer_and_writers_wait_for_them() -> None:
    """Two readers of a resident buffer run concurrently; a writer waits for both."""
    gate = Gate()
    async with va.open_backend("cpu", cpu_workers=4) as backend:
        x = await backend.upload(np.ones(8, np.float32))
        held = backend.submit(gated_kernel(gate), {"x": x})
        with anyio.fail_after(10):
            free_reader = await backend.dispatch(axpy, {"x": x, "y": np.ones(8, np.float32)}, a=1.0)
        assert not held.is_ready(), "the second reader must not wait for the first"
        writer = backend.submit(DOUBLE_PLUS, {"y": x}, c=1.0)
        with anyio.move_on_after(0.05):
            await writer
        assert not writer.is_ready(), "a writer must wait for the readers before it"
        gate.open()
        assert (await held)["y"].tolist() == [1.0] * 8, "the reader saw the value before the write"
        await writer
        assert (await backend.read(x)).tolist() == [3.0] * 8
        await backend.free(x)
    assert free_reader["y"].tolist() == [2.0] * 8
