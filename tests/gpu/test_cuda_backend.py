"""The CUDA backend on a real GPU, against the CPU backend and float64 NumPy."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Mapping

import anyio
import anyio.lowlevel
import numpy as np
import pytest

import vyre_async as va
from vyre_async.kernels import (
    BufferParam,
    Kernel,
    LaunchShape,
    ScalarParam,
    axpy,
    grid_stride,
    histogram256,
    sum_reduce,
)
from vyre_async.testing import spin_kernel

SIZES = [1, 255, 256, 257, 4097, 1_000_003]


async def _on_cpu(
    kernel: Kernel, inputs: Mapping[str, np.ndarray], **scalars: object
) -> dict[str, np.ndarray]:
    async with va.open_backend("cpu") as cpu:
        return await cpu.dispatch(kernel, inputs, **scalars)


@pytest.mark.parametrize("n", SIZES)
async def test_axpy_matches_cpu_backend(cuda: va.Backend, rng: np.random.Generator, n: int) -> None:
    """CUDA axpy equals the CPU backend and float64 NumPy within one float32 ulp."""
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    a = float(rng.uniform(-4, 4))
    got = (await cuda.dispatch(axpy, {"x": x, "y": y}, a=a))["y"]
    want = (await _on_cpu(axpy, {"x": x, "y": y}, a=a))["y"]
    exact = np.float64(np.float32(a)) * x.astype(np.float64) + y.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-6)
    np.testing.assert_allclose(got, exact, rtol=2e-7, atol=1e-6)


@pytest.mark.parametrize("n", SIZES)
async def test_sum_matches_float64(cuda: va.Backend, rng: np.random.Generator, n: int) -> None:
    """CUDA sum equals the float64 sum within float32 accumulation error."""
    x = rng.standard_normal(n).astype(np.float32)
    got = (await cuda.dispatch(sum_reduce, {"x": x}))["out"]
    exact = x.astype(np.float64).sum()
    assert got.shape == (1,)
    assert abs(float(got[0]) - exact) <= 1e-6 * float(np.abs(x).astype(np.float64).sum()) + 1e-6


@pytest.mark.parametrize("n", SIZES)
async def test_histogram_matches_bincount(
    cuda: va.Backend, rng: np.random.Generator, n: int
) -> None:
    """CUDA histogram256 equals NumPy's bincount exactly."""
    data = rng.integers(0, 256, n, dtype=np.uint8)
    got = (await cuda.dispatch(histogram256, {"data": data}))["counts"]
    np.testing.assert_array_equal(got, np.bincount(data, minlength=256).astype(np.uint32))


async def test_unawaited_dispatch_outputs_survive_backend_close(rng: np.random.Generator) -> None:
    """A dispatch never awaited before close still returns its outputs afterwards."""
    x = rng.standard_normal(1000).astype(np.float32)
    async with va.open_backend("cuda") as backend:
        pending = backend.submit(axpy, {"x": x, "y": x}, a=1.0)
    np.testing.assert_allclose((await pending)["y"], 2 * x.astype(np.float64), rtol=1e-6)


async def test_zero_length_dispatch_skips_launch(cuda: va.Backend) -> None:
    """A zero-length input returns empty outputs without launching."""
    empty = np.zeros(0, np.float32)
    out = await cuda.dispatch(axpy, {"x": empty, "y": empty}, a=1.0)
    assert out["y"].shape == (0,)
    assert cuda.telemetry().kernel_launches == 0


async def test_pending_dispatch_lifecycle_and_timing(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """submit returns at once; await gives outputs; timed() with timing gives device time."""
    x = rng.standard_normal(1 << 20).astype(np.float32)
    pending = cuda.submit(axpy, {"x": x, "y": x}, a=1.0, config=va.DispatchConfig(timing=True))
    result = await pending.timed()
    assert pending.is_ready()
    np.testing.assert_allclose(result.outputs["y"], 2 * x.astype(np.float64), rtol=1e-6)
    t = result.timing
    assert t.device_ns is not None
    assert 0 < t.device_ns < t.wall_ns
    assert t.enqueue_ns > 0
    assert (await pending)["y"] is result.outputs["y"]


async def test_resident_round_trip_and_ranges(cuda: va.Backend, rng: np.random.Generator) -> None:
    """upload/read/write/read_many on the device return exactly the expected bytes."""
    array = rng.standard_normal((33, 17)).astype(np.float64)
    buf = await cuda.upload(array)
    np.testing.assert_array_equal(await cuda.read(buf), array)
    patch = rng.standard_normal(20)
    await cuda.write(buf, patch, offset=100)
    flat = array.reshape(-1).copy()
    flat[100:120] = patch
    parts = await cuda.read_many(
        [va.ReadRange(buf, 0, 7), va.ReadRange(buf, 95, 30), va.ReadRange(buf, 3, 0)]
    )
    np.testing.assert_array_equal(parts[0], flat[:7])
    np.testing.assert_array_equal(parts[1], flat[95:125])
    assert parts[2].size == 0
    zeros = await cuda.alloc(4096, np.int32)
    np.testing.assert_array_equal(await cuda.read(zeros), np.zeros(1024, np.int32))
    await cuda.free(buf)
    await cuda.free(zeros)


DOUBLE_PLUS = Kernel(
    name="double_plus",
    source=r"""
extern "C" __global__ void double_plus(float* y, float c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * 2.0f + c;
}
""",
    entry="double_plus",
    params=(
        BufferParam("y", np.float32, "inout", "n"),
        ScalarParam("c", np.float32),
        ScalarParam("n", np.int32, default="n"),
    ),
    launch=grid_stride("n", max_blocks=1 << 20),
    reference=lambda arrays, scalars: np.copyto(arrays["y"], arrays["y"] * 2 + scalars["c"]),
)


async def test_shared_resident_buffer_keeps_submit_order(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """Dispatches on one resident buffer apply in submission order across streams."""
    y0 = rng.uniform(-1, 1, 10_000).astype(np.float32)
    constants = [float(c) for c in rng.integers(1, 9, size=16)]
    buf = await cuda.upload(y0)
    pendings = [cuda.submit(DOUBLE_PLUS, {"y": buf}, c=c) for c in constants]
    for pending in reversed(pendings):
        await pending
    got = await cuda.read(buf)
    await cuda.free(buf)
    want = y0.astype(np.float64)
    for c in constants:
        want = want * 2 + c
    np.testing.assert_allclose(got, want, rtol=1e-5)


async def test_repeated_sequence_matches_cpu(cuda: va.Backend, rng: np.random.Generator) -> None:
    """A repeated resident sequence equals the float64 model with one sync point."""
    n, repeats = 100_003, 25
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    xb, yb = await cuda.upload(x), await cuda.upload(y)
    total = await cuda.alloc(4, np.float32)
    cuda.reset_telemetry()
    head = await cuda.submit_repeated(
        [],
        [va.SequenceStep(axpy, {"x": xb, "y": yb}, {"a": 0.5})],
        repeat_count=repeats,
        reads=[va.ReadRange(yb, n - 5)],
    )
    (summed,) = await cuda.submit_sequence(
        [va.SequenceStep(sum_reduce, {"x": yb, "out": total})], reads=[va.ReadRange(total)]
    )
    t = cuda.telemetry()
    for b in (xb, yb, total):
        await cuda.free(b)
    model = y.astype(np.float64) + 0.5 * repeats * x.astype(np.float64)
    np.testing.assert_allclose(head[0], model[n - 5 :], rtol=1e-5, atol=1e-5)
    assert abs(float(summed[0]) - model.sum()) <= 1e-5 * float(np.abs(model).sum())
    assert t.kernel_launches == repeats + 1
    assert t.sync_points == 2


async def test_cancelled_await_keeps_memory_until_kernel_ends(cuda: va.Backend) -> None:
    """Cancelling an await mid-kernel frees the waiter; the block is reused only after the event."""
    backend = cuda
    # Mid-kernel, not mid-compile; axpy's submit below then binds (and allocates) at once.
    await backend.load_kernels(spin_kernel, axpy)  # type: ignore[attr-defined]
    x = np.arange(1 << 16, dtype=np.float32)
    live = backend.live_allocations()["device"]  # type: ignore[attr-defined]
    pending = backend.submit(spin_kernel, {"x": x}, cycles=400_000_000)  # ~0.2 s
    with anyio.move_on_after(0.02) as scope:
        await pending
    assert scope.cancelled_caught
    assert not pending.is_ready()
    assert backend.live_allocations()["device"] == live + 1  # type: ignore[attr-defined]
    other = backend.submit(axpy, {"x": x, "y": x}, a=1.0)
    assert backend.live_allocations()["device"] == live + 2  # type: ignore[attr-defined]
    with anyio.fail_after(30):
        out = await pending
        np.testing.assert_array_equal(out["y"], x)
        await other
    assert backend.live_allocations()["device"] == live  # type: ignore[attr-defined]


async def test_timeout_config_raises_and_work_completes(cuda: va.Backend) -> None:
    """DispatchConfig.timeout raises DispatchError; the dispatch still finishes later."""
    x = np.ones(1024, dtype=np.float32)
    pending = cuda.submit(
        spin_kernel, {"x": x}, cycles=200_000_000, config=va.DispatchConfig(timeout=0.01)
    )
    with pytest.raises(va.DispatchError, match="Fix:"):
        await pending
    with anyio.fail_after(30):
        await cuda.submit(axpy, {"x": x, "y": x}, a=1.0)
        while not pending.is_ready():  # noqa: ASYNC110 - polling the public is_ready() is the point
            await anyio.sleep(0.01)
    # Once ready, awaiting returns at once (the timeout only bounds waiting).
    np.testing.assert_array_equal((await pending)["y"], x)


async def test_many_concurrent_submits_all_correct(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """Hundreds of in-flight dispatches from one loop each return their own result."""
    xs = [rng.standard_normal(int(rng.integers(1, 5000))).astype(np.float32) for _ in range(300)]
    pendings = [cuda.submit(axpy, {"x": x, "y": x}, a=float(i)) for i, x in enumerate(xs)]
    async with anyio.create_task_group() as tg:
        results: dict[int, np.ndarray] = {}

        async def wait(i: int) -> None:
            results[i] = (await pendings[i])["y"]

        for i in range(len(xs)):
            tg.start_soon(wait, i)
    for i, x in enumerate(xs):
        np.testing.assert_allclose(
            results[i], (i + 1.0) * x.astype(np.float64), rtol=1e-6, atol=1e-6
        )


async def test_oversized_block_is_refused_before_launch(cuda: va.Backend) -> None:
    """A launch rule asking for 2048 threads per block raises UnsupportedFeatureError."""
    wide = Kernel(
        name="wide",
        source=axpy.source,
        entry=axpy.entry,
        params=axpy.params,
        launch=lambda sizes: LaunchShape(grid=(1, 1, 1), block=(2048, 1, 1)),
        reference=axpy.reference,
    )
    x = np.ones(8, np.float32)
    with pytest.raises(va.UnsupportedFeatureError, match=r"2048 threads.*Fix:"):
        await cuda.dispatch(wide, {"x": x, "y": x}, a=1.0)
    assert (await cuda.dispatch(axpy, {"x": x, "y": x}, a=1.0))["y"].tolist() == [2.0] * 8


async def test_compile_error_reaches_the_awaiter(cuda: va.Backend) -> None:
    """A kernel that does not compile raises CompileError with NVRTC's log on await."""
    broken = Kernel(
        name="broken",
        source='extern "C" __global__ void broken(float* y, int n) { y[0] = undefined_name; }',
        entry="broken",
        params=(
            BufferParam("y", np.float32, "inout", "n"),
            ScalarParam("n", np.int32, default="n"),
        ),
        launch=grid_stride("n"),
        reference=lambda arrays, scalars: None,
    )
    with pytest.raises(va.CompileError, match="Fix:") as info:
        await cuda.dispatch(broken, {"y": np.ones(4, np.float32)})
    assert "undefined_name" in info.value.log


FAULT_SCRIPT = textwrap.dedent(
    """
    import sys, anyio, numpy as np, vyre_async as va
    from vyre_async.kernels import BufferParam, Kernel, ScalarParam, grid_stride, axpy

    fault = Kernel(
        name="fault",
        source='extern "C" __global__ void fault(float* y, int n) '
        '{ ((float*)8)[threadIdx.x] = y[0]; }',
        entry="fault",
        params=(
            BufferParam("y", np.float32, "inout", "n"),
            ScalarParam("n", np.int32, default="n"),
        ),
        launch=grid_stride("n"),
        reference=lambda a, s: None,
    )

    async def main():
        async with va.open_backend("cuda") as backend:
            try:
                await backend.dispatch(fault, {"y": np.ones(32, np.float32)})
            except va.DeviceLostError as exc:
                print("first:", exc)
            else:
                sys.exit("the faulting kernel did not report device-lost")
            try:
                ones = np.ones(2, np.float32)
                backend.submit(axpy, {"x": ones, "y": ones}, a=1.0)
            except va.DeviceLostError as exc:
                print("second:", exc)
            else:
                sys.exit("a lost backend accepted more work")
        print("closed cleanly")

    anyio.run(main)
    """
)


def test_faulting_kernel_gives_device_lost_not_a_hang() -> None:
    """An illegal-address kernel raises DeviceLostError and the backend refuses work after it."""
    # A sticky error poisons the process's context, so it runs in a child process.
    done = subprocess.run(  # noqa: S603 - runs this interpreter on a fixed script
        [sys.executable, "-c", FAULT_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "first:" in done.stdout
    assert "Fix:" in done.stdout
    assert "second:" in done.stdout
    assert "open a new backend" in done.stdout
    assert "closed cleanly" in done.stdout


async def test_upload_group_is_one_block_freed_with_its_last_member(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """upload_group takes one device block, returned only when every member is freed."""
    arrays = [
        rng.integers(0, 9, 4097).astype(np.int64),
        rng.standard_normal(333).astype(np.float32),
    ]
    live = cuda.live_allocations()["device"]  # type: ignore[attr-defined]
    buffers = await cuda.upload_group(arrays)
    assert cuda.live_allocations()["device"] == live + 1  # type: ignore[attr-defined]
    for buffer, array in zip(buffers, arrays, strict=True):
        np.testing.assert_array_equal(await cuda.read(buffer), array)
    await cuda.free(buffers[0])
    assert cuda.live_allocations()["device"] == live + 1  # type: ignore[attr-defined]
    np.testing.assert_array_equal(await cuda.read(buffers[1]), arrays[1])
    await cuda.free(buffers[1])
    assert cuda.live_allocations()["device"] == live  # type: ignore[attr-defined]


async def test_prepared_run_equals_the_float64_model_as_submit_does(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """prepared.run and prepared.submit, alternated with new prefix scalars, follow the
    float64 model; the body is replayed as a graph once it is long enough."""
    n = 50_001
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    xb, yb = await cuda.upload(x), await cuda.upload(y)
    prepared = cuda.prepare_repeated(
        [va.SequenceStep(axpy, {"x": xb, "y": yb}, {"a": 0.0})],
        [va.SequenceStep(axpy, {"x": xb, "y": yb}, {"a": 0.5})],
        reads=[va.ReadRange(yb, n - 7)],
    )
    cuda.reset_telemetry()
    model = y.astype(np.float64)
    plan = ((3.0, 20, "run"), (-1.25, 0, "submit"), (3.0, 40, "run"), (0.5, 20, "run"))
    for a, repeats, way in plan:
        if way == "run":
            (tail,), device_ns = await prepared.run(repeats, scalars={"a": a})
            assert device_ns > 0
        else:
            (tail,) = await prepared.submit(repeats, scalars={"a": a})
        model = model + (a + 0.5 * repeats) * x.astype(np.float64)
        np.testing.assert_allclose(tail, model[n - 7 :], rtol=1e-5, atol=1e-4)
    t = cuda.telemetry()
    for b in (xb, yb):
        await cuda.free(b)
    assert t.sync_points == len(plan)
    assert t.kernel_launches == sum(1 + repeats for _, repeats, _ in plan)
    assert t.graphs_captured >= 1


async def test_cancelled_prepared_run_keeps_its_memory_until_the_device_is_done(
    cuda: va.Backend,
) -> None:
    """A cancelled run leaves its work to the watcher; its events and read block come
    back only after the kernel ended, and a later read sees what it wrote."""
    x = np.arange(1 << 12, dtype=np.float32)
    xb = await cuda.upload(x)
    yb = await cuda.alloc(x.nbytes, np.float32)
    prepared = cuda.prepare_repeated(
        [va.SequenceStep(spin_kernel, {"x": xb, "y": yb}, {"cycles": 400_000_000})],
        [],
        reads=[va.ReadRange(yb, 0, 4)],
    )
    await prepared.run(0, scalars={"cycles": 1})  # kernels loaded, the plan made
    before = cuda.live_allocations()  # type: ignore[attr-defined]
    with anyio.move_on_after(0.02) as scope:
        await prepared.run(0)
    assert scope.cancelled_caught
    during = cuda.live_allocations()  # type: ignore[attr-defined]
    assert during["in_flight"] == before["in_flight"] + 1
    assert during["events"] == before["events"] + 3  # timing pair and completion
    assert during["pinned"] == before["pinned"] + 1
    assert cuda._watcher.busy_lanes == 1  # type: ignore[attr-defined]
    with anyio.fail_after(30):
        got = await cuda.read(yb)  # waits for the run, its last writer
    np.testing.assert_array_equal(got, x)
    assert cuda.live_allocations() == before  # type: ignore[attr-defined]
    for b in (xb, yb):
        await cuda.free(b)


async def test_a_prepared_run_longer_than_the_spin_budget_still_returns(
    cuda: va.Backend,
) -> None:
    """A run past the waiter's spin budget is finished by the watcher and returns."""
    x = np.arange(1 << 10, dtype=np.float32)
    xb = await cuda.upload(x)
    yb = await cuda.alloc(x.nbytes, np.float32)
    prepared = cuda.prepare_repeated(
        [va.SequenceStep(spin_kernel, {"x": xb, "y": yb}, {"cycles": 100_000_000})],
        [],
        reads=[va.ReadRange(yb, 5, 3)],
    )
    with anyio.fail_after(30):
        (head,), device_ns = await prepared.run(0)
    np.testing.assert_array_equal(head, x[5:8])
    assert device_ns > 10_000_000  # well past the 2 ms budget
    for b in (xb, yb):
        await cuda.free(b)


async def test_a_read_holds_its_buffer_behind_a_running_writer(cuda: va.Backend) -> None:
    """A read waiting for a kernel that writes its buffer counts as a user: free() is
    refused until the read has its copy, which is what the kernel wrote."""
    await cuda.load_kernels(spin_kernel)  # type: ignore[attr-defined]
    x = np.arange(1 << 12, dtype=np.float32)
    y = await cuda.alloc(x.nbytes, np.float32)
    registry = cuda._registry  # type: ignore[attr-defined]
    pending = cuda.submit(spin_kernel, {"x": x, "y": y}, cycles=400_000_000)  # ~0.2 s
    got: list[np.ndarray] = []

    async def read() -> None:
        got.append(await cuda.read(y))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            while len(registry.users(y)) < 2:  # the kernel and the read
                await anyio.lowlevel.checkpoint()
            assert not pending.is_ready()  # 0.2 s of spinning
            with pytest.raises(va.LifecycleError, match=r"2 unfinished dispatches, reads or"):
                await cuda.free(y)
        await pending
    await cuda.free(y)
    np.testing.assert_array_equal(got[0], x)


@pytest.mark.parametrize("choice", ["auto", "cuda-bindings"])
async def test_both_launchers_run_resident_dispatches_as_the_float64_model(
    choice: str, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dispatches launched by CuPy's launcher (where CuPy is installed) and by
    cuda-bindings' equal float64 NumPy: single launches, repeated launches, and
    host inputs."""
    monkeypatch.setenv("VYRE_ASYNC_LAUNCHER", choice)
    try:
        import cupy_backends.cuda.api.driver  # noqa: F401

        expected = "cupy" if choice == "auto" else "cuda-bindings"
    except ImportError:
        expected = "cuda-bindings"
    n = 4097
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    async with va.open_backend("cuda") as cuda:
        assert cuda.launcher == expected  # type: ignore[attr-defined]
        xb, yb = await cuda.upload(x), await cuda.upload(y)
        for _ in range(5):
            await cuda.dispatch(axpy, {"x": xb, "y": yb}, a=0.5)
        config = va.DispatchConfig(fixpoint_iterations=3)
        await cuda.dispatch(axpy, {"x": xb, "y": yb}, config=config, a=2.0)
        out = await cuda.dispatch(axpy, {"x": x, "y": y}, a=-1.5)
        want = y.astype(np.float64) + 5 * 0.5 * x.astype(np.float64) + 3 * 2.0 * x
        np.testing.assert_allclose(await cuda.read(yb), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out["y"], y.astype(np.float64) - 1.5 * x, rtol=1e-6, atol=1e-6)
        await cuda.free(xb)
        await cuda.free(yb)
