"""CuPy and PyTorch arrays in and out of the CUDA backend, on a real GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import vyre_async as va
from vyre_async.graphs import rmat
from vyre_async.kernels import axpy
from vyre_async.testing import spin_kernel

cp = pytest.importorskip("cupy")
torch = pytest.importorskip("torch")
SPIN = cp.RawKernel(spin_kernel.source, spin_kernel.entry, backend="nvrtc")


@pytest.fixture(scope="module", autouse=True)
def _warm_cupy_and_torch() -> None:
    """Run each CuPy and PyTorch operation these tests use once, outside the event loop.

    Both libraries compile kernels and load libraries on first use, reading files: in
    an async test that is blocking work (blockbuster refuses it) that is theirs, not
    vyre_async's, which stays watched.
    """
    a = cp.zeros(8, cp.float32)
    a *= 2
    cp.asnumpy(cp.full(8, -7, cp.int32) + a.sum().astype(cp.int32))
    SPIN.kernel  # noqa: B018 - compiles the CuPy RawKernel
    t = torch.randn(64, 64, device="cuda")
    t = t @ t / 64.0
    u = torch.full((8,), 3.0, device="cuda") + t[0, 0] * 0
    u += 1
    (torch.zeros(8, device="cuda") + u).cpu()
    torch.from_numpy(np.ones(8, np.float32)).cuda()
    torch.cuda.synchronize()


def model(a: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return a * x.astype(np.float64) + y.astype(np.float64)


async def test_dispatch_on_cupy_arrays_equals_the_numpy_path_in_place(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """CuPy inputs give what NumPy inputs give, written into the CuPy array itself."""
    x, y = (
        rng.standard_normal(100_003).astype(np.float32),
        rng.standard_normal(100_003).astype(np.float32),
    )
    host = await cuda.dispatch(axpy, {"x": x, "y": y}, a=1.5)
    dx, dy = cp.asarray(x), cp.asarray(y)
    pointer = dy.data.ptr
    cp.cuda.get_current_stream().synchronize()
    assert await cuda.dispatch(axpy, {"x": dx, "y": dy}, a=1.5) == {}
    assert dy.data.ptr == pointer
    np.testing.assert_array_equal(cp.asnumpy(dy), host["y"])
    np.testing.assert_allclose(cp.asnumpy(dy), model(1.5, x, y), rtol=1e-6)


async def test_dispatch_on_torch_tensors_equals_the_numpy_path_in_place(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """PyTorch CUDA tensors (read through DLPack) give what NumPy inputs give, in place."""
    x, y = (
        rng.standard_normal(4096).astype(np.float32),
        rng.standard_normal(4096).astype(np.float32),
    )
    host = await cuda.dispatch(axpy, {"x": x, "y": y}, a=-0.75)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    pointer = ty.data_ptr()
    await cuda.dispatch(axpy, {"x": tx, "y": ty}, a=-0.75)
    assert ty.data_ptr() == pointer
    np.testing.assert_array_equal(ty.cpu().numpy(), host["y"])


async def test_a_pending_producer_kernel_is_waited_for_on_the_device(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """A slow CuPy kernel still writing an input on CuPy's stream is waited for: the
    dispatch reads what it wrote (CAI v3 stream), with no host synchronisation."""
    n = 1 << 16
    x = rng.standard_normal(n).astype(np.float32)
    source = cp.asarray(x)
    staged = cp.zeros(n, cp.float32)  # poison: all zeros until the slow kernel lands
    y = cp.zeros(n, cp.float32)
    spin = SPIN
    shape = spin_kernel.launch({"n": n})
    stream = cp.cuda.Stream(non_blocking=True)
    cp.cuda.get_current_stream().synchronize()
    with stream:
        spin(shape.grid, shape.block, (source, staged, np.int64(200_000_000), np.int32(n)))
        await cuda.dispatch(axpy, {"x": staged, "y": y}, a=1.0)  # while the spin runs
    np.testing.assert_allclose(cp.asnumpy(y), x, rtol=1e-6)


async def test_a_pending_torch_kernel_is_waited_for_through_dlpack(cuda: va.Backend) -> None:
    """A PyTorch tensor written by work still queued on a PyTorch stream is read after it."""
    n = 1 << 20
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        big = torch.randn(4096, 4096, device="cuda")
        for _ in range(8):  # tens of milliseconds of queued work
            big = big @ big / 64.0
        x = torch.full((n,), 3.0, device="cuda") + big[0, 0] * 0
        y = torch.zeros(n, device="cuda")
        await cuda.dispatch(axpy, {"x": x, "y": y}, a=2.0)
    torch.cuda.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), 6.0 + 0 * x.cpu().numpy(), rtol=1e-6)


async def test_cupy_and_torch_alias_a_resident_buffer(cuda: va.Backend) -> None:
    """cupy.asarray(buf) and torch.from_dlpack(buf) use the buffer's own memory."""
    buf = await cuda.upload(np.arange(1024, dtype=np.float32))
    view = cp.asarray(buf)
    assert view.data.ptr == buf.ptr
    view *= 2
    cp.cuda.get_current_stream().synchronize()
    np.testing.assert_array_equal(await cuda.read(buf), 2 * np.arange(1024, dtype=np.float32))
    tensor = torch.from_dlpack(buf)
    assert tensor.data_ptr() == buf.ptr
    tensor += 1
    torch.cuda.synchronize()
    np.testing.assert_array_equal(await cuda.read(buf), 2 * np.arange(1024, dtype=np.float32) + 1)
    del view, tensor
    await cuda.free(buf)


async def test_an_export_is_ordered_after_the_buffers_unfinished_work(cuda: va.Backend) -> None:
    """A CuPy view taken while a slow kernel still writes the buffer sees its result."""
    n = 1 << 16
    x = np.arange(n, dtype=np.float32)
    source = await cuda.upload(x)
    target = await cuda.alloc(x.nbytes, np.float32)
    await cuda.load_kernels(spin_kernel)  # type: ignore[attr-defined]
    pending = cuda.submit(spin_kernel, {"x": source, "y": target}, cycles=200_000_000)
    view = cp.asarray(target)  # ordered after the spin on the device
    np.testing.assert_array_equal(cp.asnumpy(view), x)
    await pending
    del view
    for buffer in (source, target):
        await cuda.free(buffer)


@pytest.mark.parametrize("batched", [False, True], ids=["direct", "batched"])
async def test_session_levels_fill_a_device_array(cuda: va.Backend, batched: bool) -> None:
    """session.bfs(out=<CuPy array>) and pagerank(out=...) equal their host results."""
    graph = rmat(12, 8, seed=3)
    hub = int(np.argmax(graph.out_degree()))
    batching = va.BatchingConfig() if batched else None
    async with va.resident_graph(cuda, graph, batching=batching) as session:
        host = await session.bfs(hub)
        out = cp.full(graph.num_vertices, -7, cp.int32)
        got = await session.bfs(hub, out=out)
        assert got is out
        np.testing.assert_array_equal(cp.asnumpy(out), host)
        if not batched:
            ranks = await session.pagerank()
            device_ranks = cp.zeros(graph.num_vertices, cp.float32)
            await session.pagerank(out=device_ranks)
            np.testing.assert_array_equal(cp.asnumpy(device_ranks), ranks)


async def test_outputs_on_the_device_are_resident_buffers_cupy_can_read(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """dispatch(outputs="device") returns resident buffers holding the host path's result."""
    x, y = (
        rng.standard_normal(5000).astype(np.float32),
        rng.standard_normal(5000).astype(np.float32),
    )
    host = await cuda.dispatch(axpy, {"x": x, "y": y}, a=3.0)
    got: Any = await cuda.dispatch(axpy, {"x": x, "y": y}, a=3.0, outputs="device")
    np.testing.assert_array_equal(cp.asnumpy(cp.asarray(got["y"])), host["y"])
    await cuda.free(got["y"])
