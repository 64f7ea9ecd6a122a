"""Large reads (driver-staged and piecewise) and BFS through hub vertices, on a real GPU.

Reads of 2 to 32 MiB go through the driver's pageable copy, larger ones in pieces
through page-locked staging; the size-parametrized tests cover both.
"""

from __future__ import annotations

import anyio
import numpy as np
import pytest
from graph_references import scipy_levels

import vyre_async as va
from vyre_async.backends.cuda._readback import PIECE_BYTES
from vyre_async.backends.cuda._reads import PAGEABLE_READ_MAX_BYTES
from vyre_async.graphs import CsrGraph, rmat

try:  # CuPy is on the GPU machines, not in CI; imported here, not on the event loop
    import cupyx
except ImportError:
    cupyx = None


#: Piece counts whose reads take the driver's path (5) and the piecewise one.
PIECE_COUNTS = (5, PAGEABLE_READ_MAX_BYTES // PIECE_BYTES + 1)


@pytest.mark.parametrize("pieces", PIECE_COUNTS)
async def test_large_read_equals_the_uploaded_bytes(
    cuda: va.Backend, rng: np.random.Generator, pieces: int
) -> None:
    """A large read (with an odd tail) returns exactly the uploaded array."""
    rows = (pieces * PIECE_BYTES + 12) // 12  # whole pieces and an odd tail of 12-byte rows
    array = rng.integers(-(2**31), 2**31 - 1, 3 * rows, dtype=np.int32)
    buf = await cuda.upload(array.reshape(-1, 3))
    got = await cuda.read(buf)
    assert got.shape == (array.size // 3, 3)
    np.testing.assert_array_equal(got.reshape(-1), array)
    await cuda.free(buf)


async def test_large_read_many_returns_every_range_exactly(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """Several large and small ranges of one read come back byte for byte, in order."""
    array = rng.standard_normal(3 * PIECE_BYTES // 8 + 101)
    buf = await cuda.upload(array)
    ranges = [(17, PIECE_BYTES // 8 + 5), (0, 3), (1000, array.size - 1000), (5, 0)]
    parts = await cuda.read_many([va.ReadRange(buf, o, c) for o, c in ranges])
    for part, (offset, count) in zip(parts, ranges, strict=True):
        np.testing.assert_array_equal(part, array[offset : offset + count])
    await cuda.free(buf)


async def test_large_read_sees_the_dispatch_before_it(cuda: va.Backend) -> None:
    """A large read after a dispatch that writes the buffer returns the written data."""
    n = 3 * PIECE_BYTES // 4 + 7
    x = await cuda.upload(np.arange(n, dtype=np.float32))
    y = await cuda.upload(np.ones(n, dtype=np.float32))
    cuda.submit(va.kernels.axpy, {"x": x, "y": y}, a=2.0)
    got = await cuda.read(y)
    np.testing.assert_array_equal(got, 2.0 * np.arange(n, dtype=np.float32) + 1.0)
    await cuda.settle([x, y])
    await cuda.free(x)
    await cuda.free(y)


@pytest.mark.parametrize("pieces", PIECE_COUNTS)
async def test_cancelled_large_read_leaks_nothing(
    cuda: va.Backend, rng: np.random.Generator, pieces: int
) -> None:
    """Cancelling a large read midway frees its staging; the next read is still exact."""
    array = rng.integers(0, 255, pieces * PIECE_BYTES, dtype=np.uint8)
    buf = await cuda.upload(array)
    for delay in (0.0, 50e-6, 200e-6):
        with anyio.move_on_after(delay):
            await cuda.read(buf)
    np.testing.assert_array_equal(await cuda.read(buf), array)
    # The cancelled reads' pieces land on other streams; their staging goes back to
    # the pool only then, and the fixture compares live allocations after the test.
    live = cuda.live_allocations  # type: ignore[attr-defined]
    with anyio.fail_after(5):
        while live()["in_flight"]:  # noqa: ASYNC110 - a counter, with no event to wait on
            await anyio.sleep(0.001)
    await cuda.free(buf)


@pytest.mark.parametrize("nbytes", [(2 << 20) - 4, 3 << 20, 20 << 20, (32 << 20) + 4])
async def test_reads_around_the_driver_copy_band_are_exact(
    cuda: va.Backend, rng: np.random.Generator, nbytes: int
) -> None:
    """Either side of each band edge, read and read(out=) give back the exact bytes."""
    array = rng.integers(-(2**31), 2**31 - 1, nbytes // 4, dtype=np.int32)
    buf = await cuda.upload(array)
    np.testing.assert_array_equal(await cuda.read(buf), array)
    out = np.full(array.size - 3, -1, np.int32)
    assert await cuda.read(buf, 3, array.size - 3, out=out) is out
    np.testing.assert_array_equal(out, array[3:])
    await cuda.free(buf)


async def test_a_dropped_read_result_is_reused_page_locked_and_exact(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """16 MiB reads dropped one after another: from the second read on they land in
    the first read's block, page-locked, and each equals the buffer's current bytes."""
    device = cuda._cuda()  # type: ignore[attr-defined]
    array = rng.integers(-(2**31), 2**31 - 1, 4 << 20, dtype=np.int32)
    buf = await cuda.upload(array)
    first = await cuda.read(buf)
    np.testing.assert_array_equal(first, array)
    address = first.ctypes.data
    assert not device.is_page_locked(address, first.nbytes)
    del first
    for _ in range(3):
        array = rng.integers(-(2**31), 2**31 - 1, array.size, dtype=np.int32)
        await cuda.write(buf, array)
        got = await cuda.read(buf)
        np.testing.assert_array_equal(got, array)
        assert got.ctypes.data == address
        assert device.is_page_locked(address, got.nbytes)
        del got
    await cuda.free(buf)


async def test_read_results_kept_are_not_overwritten_by_later_reads(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """A kept result (or a view of one) keeps its values however many reads follow."""
    array = rng.integers(-(2**31), 2**31 - 1, 3 << 20, dtype=np.int32)
    buf = await cuda.upload(array)
    kept, views, wants = [], [], []
    for _ in range(4):
        got = await cuda.read(buf)
        np.testing.assert_array_equal(got, array)
        kept.append(got)
        views.append(got[1::7])
        wants.append(array[1::7].copy())
        array = rng.integers(-(2**31), 2**31 - 1, array.size, dtype=np.int32)
        await cuda.write(buf, array)
        del got
    kept.clear()  # the views alone keep their blocks lent
    for _ in range(3):
        np.testing.assert_array_equal(await cuda.read(buf), array)
    for view, want in zip(views, wants, strict=True):
        np.testing.assert_array_equal(view, want)
    await cuda.free(buf)


async def test_read_results_stay_valid_after_the_backend_closes(
    rng: np.random.Generator,
) -> None:
    """Arrays lent from page-locked blocks are ordinary memory once the backend is gone."""
    array = rng.integers(-(2**31), 2**31 - 1, 4 << 20, dtype=np.int32)
    async with va.open_backend("cuda") as backend:
        buf = await backend.upload(array)
        for _ in range(3):  # the third read lands in a page-locked block
            held = await backend.read(buf)
        assert backend._cuda().is_page_locked(held.ctypes.data, held.nbytes)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(held, array)
    held[:] = 0  # still writable host memory
    assert not held.any()


def _hub_graph(rng: np.random.Generator, *, symmetric: bool) -> CsrGraph:
    """Hubs 0-5 of very different degrees, all reached from vertex 6 at level 1."""
    n = 400_000
    degrees = [300_000, 1024, 1023, 5000, 64, 2048]
    src = [np.full(d, hub, np.int64) for hub, d in enumerate(degrees)]
    dst = [rng.integers(0, n, d) for d in degrees]
    src.append(np.full(len(degrees), 6, np.int64))
    dst.append(np.arange(len(degrees), dtype=np.int64))
    noise = rng.integers(0, n, (2, 200_000))
    return CsrGraph.from_edges(
        np.concatenate([*src, noise[0]]),
        np.concatenate([*dst, noise[1]]),
        n,
        symmetric=symmetric,
    )


@pytest.mark.parametrize("symmetric", [True, False])
async def test_bfs_through_hubs_equals_scipy(
    cuda: va.Backend, rng: np.random.Generator, symmetric: bool
) -> None:
    """BFS whose frontiers hold hubs of 10^3-10^5 out-edges in one block equals SciPy."""
    graph = _hub_graph(rng, symmetric=symmetric)
    async with va.resident_graph(cuda, graph) as session:
        for source in [6, 0, 2, *rng.integers(0, graph.num_vertices, 2).tolist()]:
            np.testing.assert_array_equal(
                await session.bfs(int(source)), scipy_levels(graph, int(source))
            )


async def test_a_write_from_page_locked_memory_skips_the_staging_copy(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """Writing from CuPy pinned memory takes no staging buffer and lands exactly."""
    if cupyx is None:
        pytest.skip("CuPy (which allocates the page-locked array) is not installed")
    count = 3 << 20  # 12 MiB of int32, over the inline-copy size
    # CuPy's first use loads libraries from disk: not on the event loop.
    pinned = await anyio.to_thread.run_sync(cupyx.empty_pinned, (count,), np.int32)
    pinned[:] = rng.integers(-(2**31), 2**31 - 1, count, dtype=np.int32)
    buffer = await cuda.alloc(pinned.nbytes, np.int32)
    staged_before = cuda.telemetry().pinned_bytes
    await cuda.write(buffer, pinned)
    assert cuda.telemetry().pinned_bytes == staged_before, "a staging buffer was taken"
    np.testing.assert_array_equal(await cuda.read(buffer), pinned)
    pageable = pinned[::-1].copy()  # the staged path, for the same bytes reversed
    await cuda.write(buffer, pageable)
    np.testing.assert_array_equal(await cuda.read(buffer), pageable)
    await cuda.free(buffer)


async def test_a_read_into_page_locked_memory_skips_the_staging_copy(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """read(out=pinned) takes no staging buffer, lands exactly, and a pageable out works."""
    if cupyx is None:
        pytest.skip("CuPy (which allocates the page-locked array) is not installed")
    count = 3 << 20  # 12 MiB of int32, over the inline-copy size
    data = rng.integers(-(2**31), 2**31 - 1, count + 5, dtype=np.int32)
    buffer = await cuda.upload(data)
    pinned = await anyio.to_thread.run_sync(cupyx.empty_pinned, (count,), np.int32)
    pinned[:] = 0x5EED  # poisoned
    staged_before = cuda.telemetry().pinned_bytes
    assert await cuda.read(buffer, offset=5, out=pinned) is pinned
    assert cuda.telemetry().pinned_bytes == staged_before, "a staging buffer was taken"
    np.testing.assert_array_equal(pinned, data[5:])
    pageable = np.full(count, 0x5EED, np.int32)
    assert await cuda.read(buffer, offset=0, count=count, out=pageable) is pageable
    np.testing.assert_array_equal(pageable, data[:count])
    await cuda.free(buffer)


async def test_a_cancelled_read_into_page_locked_memory_returns_after_the_copy(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """Cancelled at its wait, the read returns only once the copy has fully landed."""
    if cupyx is None:
        pytest.skip("CuPy (which allocates the page-locked array) is not installed")
    count = 8 << 20  # 32 MiB
    data = rng.integers(-(2**31), 2**31 - 1, count, dtype=np.int32)
    buffer = await cuda.upload(data)
    pinned = await anyio.to_thread.run_sync(cupyx.empty_pinned, (count,), np.int32)
    pinned[:] = 0x5EED
    with anyio.move_on_after(0) as scope:  # cancelled at the first wait: after the enqueue
        await cuda.read(buffer, out=pinned)
    assert scope.cancelled_caught
    np.testing.assert_array_equal(pinned, data)
    await cuda.free(buffer)


async def test_bfs_into_page_locked_levels_equals_scipy(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """bfs(out=pinned) equals SciPy and pagerank(out=pinned) the same run into a new array."""
    if cupyx is None:
        pytest.skip("CuPy (which allocates the page-locked array) is not installed")
    seed = int(rng.integers(2**31))
    graph = await anyio.to_thread.run_sync(lambda: rmat(19, 8, seed=seed))  # threads: off the loop
    n = graph.num_vertices
    pinned = await anyio.to_thread.run_sync(cupyx.empty_pinned, (n,), np.int32)
    ranks = await anyio.to_thread.run_sync(cupyx.empty_pinned, (n,), np.float32)
    ranks[:] = np.nan
    async with va.resident_graph(cuda, graph) as session:
        for source in rng.integers(0, n, 3).tolist():
            pinned[:] = 0x5EED
            assert await session.bfs(int(source), out=pinned) is pinned
            np.testing.assert_array_equal(pinned, scipy_levels(graph, int(source)))
        assert await session.pagerank(max_iter=30, out=ranks) is ranks
        again = await session.pagerank(max_iter=30)  # float atomics: last bits may differ
        np.testing.assert_allclose(ranks, again, rtol=1e-4, atol=1e-10)
