"""Resident buffers and sequences on the CPU backend, and backend lifecycle."""

from __future__ import annotations

import anyio
import numpy as np
import numpy.testing  # imported here: a lazy import inside a test reads files
import pytest

import vyre_async as va
from vyre_async.kernels import axpy, histogram256, sum_reduce
from vyre_async.testing import Gate, assert_no_resident_leaks, gated_kernel


async def test_upload_read_round_trip_keeps_dtype_and_shape(rng: np.random.Generator) -> None:
    """A whole-buffer read returns the uploaded array with its dtype and shape."""
    array = rng.integers(-1000, 1000, size=(7, 13), dtype=np.int64)
    async with va.open_backend("cpu") as backend:
        buf = await backend.upload(array)
        assert (buf.dtype, buf.shape, buf.nbytes) == (array.dtype, array.shape, array.nbytes)
        back = await backend.read(buf)
        await backend.free(buf)
    np.testing.assert_array_equal(back, array)


async def test_ranged_and_batched_reads_return_exact_slices(rng: np.random.Generator) -> None:
    """read(offset, count) and read_many return exactly the asked ranges."""
    array = rng.standard_normal(1000).astype(np.float32)
    async with va.open_backend("cpu") as backend:
        buf = await backend.upload(array)
        part = await backend.read(buf, offset=10, count=25)
        many = await backend.read_many(
            [va.ReadRange(buf, 0, 3), va.ReadRange(buf, 990), va.ReadRange(buf, 500, 0)]
        )
        syncs = backend.telemetry().sync_points
        await backend.free(buf)
    np.testing.assert_array_equal(part, array[10:35])
    np.testing.assert_array_equal(many[0], array[:3])
    np.testing.assert_array_equal(many[1], array[990:])
    assert many[2].size == 0
    assert syncs == 2, "one fence per read call, however many ranges"


async def test_write_at_offset_changes_only_that_span(rng: np.random.Generator) -> None:
    """write(data, offset) overwrites exactly [offset, offset + len(data))."""
    array = rng.standard_normal(100).astype(np.float32)
    patch = rng.standard_normal(10).astype(np.float32)
    async with va.open_backend("cpu") as backend:
        buf = await backend.upload(array)
        await backend.write(buf, patch, offset=40)
        back = await backend.read(buf)
        await backend.free(buf)
    expected = array.copy()
    expected[40:50] = patch
    np.testing.assert_array_equal(back, expected)


async def test_bad_ranges_and_dtypes_are_refused_with_a_fix() -> None:
    """Out-of-range reads/writes and dtype mismatches raise ValidationError with Fix."""
    async with va.open_backend("cpu") as backend:
        buf = await backend.alloc(64, np.float32)
        assert buf.size == 16
        with pytest.raises(va.ValidationError, match=r"outside resident buffer.*Fix:"):
            await backend.read(buf, offset=10, count=7)
        with pytest.raises(va.ValidationError, match=r"outside resident buffer.*Fix:"):
            await backend.write(buf, np.zeros(4, np.float32), offset=14)
        with pytest.raises(va.ValidationError, match=r"float64.*Fix:"):
            await backend.write(buf, np.zeros(4, np.float64))
        with pytest.raises(va.ValidationError, match=r"whole number.*Fix:"):
            await backend.alloc(10, np.float32)
        await backend.free(buf)


async def test_freed_buffer_cannot_be_used() -> None:
    """Reading, writing, dispatching or freeing a freed buffer raises LifecycleError."""
    async with va.open_backend("cpu") as backend:
        buf = await backend.upload(np.ones(4, np.float32))
        await backend.free(buf)
        with pytest.raises(va.LifecycleError, match=r"already freed.*Fix:"):
            await backend.read(buf)
        with pytest.raises(va.LifecycleError, match="already freed"):
            await backend.write(buf, np.ones(4, np.float32))
        with pytest.raises(va.LifecycleError, match="already freed"):
            backend.submit(axpy, {"x": buf, "y": np.ones(4, np.float32)}, a=1.0)
        with pytest.raises(va.LifecycleError, match="already freed"):
            await backend.free(buf)


async def test_buffer_from_another_backend_is_refused() -> None:
    """A handle made by one backend is refused by another with ValidationError."""
    async with va.open_backend("cpu") as first, va.open_backend("cpu") as second:
        buf = await first.upload(np.ones(4, np.float32))
        with pytest.raises(va.ValidationError, match=r"another cpu backend.*Fix:"):
            await second.read(buf)
        with pytest.raises(va.ValidationError, match="another cpu backend"):
            second.submit(axpy, {"x": buf, "y": np.ones(4, np.float32)}, a=1.0)
        await first.free(buf)


async def test_overwriting_an_in_flight_buffer_is_refused() -> None:
    """write() on a buffer an unfinished dispatch uses raises LifecycleError."""
    gate = Gate()
    async with va.open_backend("cpu") as backend:
        x = await backend.upload(np.ones(4, np.float32))
        pending = backend.submit(gated_kernel(gate), {"x": x})
        with pytest.raises(va.LifecycleError, match=r"1 unfinished dispatch.*Fix:"):
            await backend.write(x, np.zeros(4, np.float32))
        gate.open()
        await pending
        await backend.write(x, np.zeros(4, np.float32))
        await backend.free(x)


async def test_a_read_holds_its_buffer_until_it_has_copied() -> None:
    """A read waiting for a writer counts as a user: free() and write() are refused
    until it has its copy, and it returns what the writer left."""
    gate = Gate()
    source = np.arange(4, dtype=np.float32)
    async with va.open_backend("cpu") as backend:
        y = await backend.alloc(source.nbytes, np.float32)
        pending = backend.submit(gated_kernel(gate), {"x": source, "y": y})
        got: list[np.ndarray] = []

        async def read() -> None:
            got.append(await backend.read(y))

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                await anyio.wait_all_tasks_blocked()
                with pytest.raises(va.LifecycleError, match=r"2 unfinished dispatches, reads or"):
                    await backend.free(y)
                with pytest.raises(va.LifecycleError, match=r"cannot be overwritten.*Fix:"):
                    await backend.write(y, np.zeros(4, np.float32))
                gate.open()
                await pending
        finally:
            gate.open()
        await backend.free(y)
    np.testing.assert_array_equal(got[0], source)


async def test_a_write_holds_its_buffer_and_later_work_sees_what_it_wrote(
    rng: np.random.Generator,
) -> None:
    """While a write copies, free() is refused and a dispatch that reads the buffer
    waits for it: the sum is of the written data, not of the old."""
    n = (2 << 20) // 4  # over the inline-copy size: the copy runs in a worker thread
    new = rng.standard_normal(n).astype(np.float32)
    async with va.open_backend("cpu") as backend:
        x = await backend.upload(np.zeros(n, np.float32))
        limiter = backend._limiter  # type: ignore[attr-defined]
        holders = [object() for _ in range(int(limiter.total_tokens))]
        for holder in holders:  # the write's copy cannot start yet
            await limiter.acquire_on_behalf_of(holder)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(backend.write, x, new)
                await anyio.wait_all_tasks_blocked()
                with pytest.raises(va.LifecycleError, match=r"1 unfinished dispatch, read or"):
                    await backend.free(x)
                pending = backend.submit(sum_reduce, {"x": x})
                while holders:
                    limiter.release_on_behalf_of(holders.pop())
            total = (await pending)["out"][0]
        finally:
            for holder in holders:
                limiter.release_on_behalf_of(holder)
        await backend.free(x)
    assert abs(float(total) - new.astype(np.float64).sum()) <= 1e-3 * np.abs(new).sum()


async def test_writes_into_one_buffer_may_copy_side_by_side(rng: np.random.Generator) -> None:
    """Two host writes into halves of one buffer overlap in time; both land."""
    half = (2 << 20) // 4  # over the inline-copy size: each copy runs in a worker thread
    first, second = (rng.standard_normal(half).astype(np.float32) for _ in range(2))
    async with va.open_backend("cpu") as backend:
        x = await backend.alloc(8 * half, np.float32)
        limiter = backend._limiter  # type: ignore[attr-defined]
        holders = [object() for _ in range(int(limiter.total_tokens))]
        for holder in holders:  # neither copy can start until both writes are in flight
            await limiter.acquire_on_behalf_of(holder)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(backend.write, x, first, 0)
                tg.start_soon(backend.write, x, second, half)
                await anyio.wait_all_tasks_blocked()
                with pytest.raises(va.LifecycleError, match=r"2 unfinished dispatches, reads or"):
                    await backend.free(x)
                while holders:
                    limiter.release_on_behalf_of(holders.pop())
        finally:
            for holder in holders:
                limiter.release_on_behalf_of(holder)
        got = await backend.read(x)
        await backend.free(x)
    np.testing.assert_array_equal(got, np.concatenate([first, second]))


async def test_resident_output_stays_resident(rng: np.random.Generator) -> None:
    """An output bound to a resident buffer is written there, cleared first, not returned."""
    data = rng.integers(0, 256, 4096, dtype=np.uint8)
    async with va.open_backend("cpu") as backend:
        counts = await backend.upload(np.full(256, 99, dtype=np.uint32))
        out = await backend.dispatch(histogram256, {"data": data, "counts": counts})
        assert out == {}
        got = await backend.read(counts)
        await backend.free(counts)
    np.testing.assert_array_equal(got, np.bincount(data, minlength=256))


async def test_repeated_sequence_runs_prefix_once_and_steps_n_times(
    rng: np.random.Generator,
) -> None:
    """prefix once + repeated x N equals the float64 model, with one sync point."""
    n, repeats = 300, 5
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    async with va.open_backend("cpu") as backend:
        xb, yb = await backend.upload(x), await backend.upload(y)
        total = await backend.alloc(4, np.float32)
        backend.reset_telemetry()
        pending = backend.submit_repeated(
            [va.SequenceStep(axpy, {"x": xb, "y": yb}, {"a": 3.0})],
            [va.SequenceStep(axpy, {"x": xb, "y": yb}, {"a": 0.5})],
            repeat_count=repeats,
            reads=[va.ReadRange(yb, 0, 10)],
        )
        (head,) = await pending
        summed = await backend.submit_sequence(
            [va.SequenceStep(sum_reduce, {"x": yb, "out": total})],
            reads=[va.ReadRange(total)],
        )
        t = backend.telemetry()
        for buf in (xb, yb, total):
            await backend.free(buf)
        assert_no_resident_leaks(backend.telemetry())
    expected = y.astype(np.float64) + (3.0 + 0.5 * repeats) * x.astype(np.float64)
    np.testing.assert_allclose(head, expected[:10], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(summed[0][0], expected.sum(), rtol=1e-4, atol=1e-3)
    assert t.kernel_launches == 1 + repeats + 1
    assert t.sync_points == 2


async def test_sequence_with_host_array_or_unbound_output_is_refused() -> None:
    """Sequence steps must bind every parameter, and only to resident buffers."""
    async with va.open_backend("cpu") as backend:
        xb = await backend.upload(np.ones(4, np.float32))
        with pytest.raises(va.ValidationError, match=r"resident buffers only.*Fix:"):
            backend.submit_sequence(
                [va.SequenceStep(axpy, {"x": xb, "y": np.ones(4, np.float32)}, {"a": 1.0})]  # type: ignore[dict-item]
            )
        with pytest.raises(va.ValidationError, match=r"leaves output 'out' unbound.*Fix:"):
            backend.submit_sequence([va.SequenceStep(sum_reduce, {"x": xb})])
        await backend.free(xb)


async def test_closed_backend_refuses_work_and_closing_twice_is_a_noop() -> None:
    """After close every call raises LifecycleError; aclose() again does nothing."""
    async with va.open_backend("cpu") as backend:
        pass
    assert backend.state is va.LifecycleState.CLOSED
    await backend.aclose()
    with pytest.raises(va.LifecycleError, match=r"closed.*Fix:"):
        backend.submit(axpy, {"x": np.ones(1, np.float32), "y": np.ones(1, np.float32)}, a=1.0)
    with pytest.raises(va.LifecycleError, match="closed"):
        await backend.upload(np.ones(1))


async def test_reopening_a_closed_backend_is_refused() -> None:
    """A backend object cannot be entered a second time."""
    backend = va.CpuBackend()
    async with backend:
        pass
    with pytest.raises(va.LifecycleError, match=r"cannot be opened again.*Fix:"):
        async with backend:
            pass


async def test_close_waits_for_in_flight_work_and_frees_buffers() -> None:
    """Closing with work in flight waits for it, then frees every resident buffer."""
    gate = Gate()
    async with va.open_backend("cpu") as backend:
        x = await backend.upload(np.arange(4, dtype=np.float32))
        pending = backend.submit(gated_kernel(gate), {"x": x})
        assert backend.telemetry().resident_buffers_live == 1
        gate.open()
    assert pending.is_ready()
    assert_no_resident_leaks(backend.telemetry())
    np.testing.assert_array_equal((await pending)["y"], np.arange(4, dtype=np.float32))


async def test_upload_group_keeps_each_array_and_counts_one_upload(
    rng: np.random.Generator,
) -> None:
    """upload_group returns one handle per array with its data, dtype and shape."""
    arrays = [
        rng.integers(0, 100, 1001).astype(np.int64),
        rng.standard_normal((3, 5)).astype(np.float32),
        np.zeros(0, np.int32),
    ]
    async with va.open_backend("cpu") as backend:
        buffers = await backend.upload_group(arrays)
        assert [b.shape for b in buffers] == [a.shape for a in arrays]
        for buffer, array in zip(buffers, arrays, strict=True):
            np.testing.assert_array_equal(await backend.read(buffer), array)
        assert backend.telemetry().bytes_uploaded == sum(a.nbytes for a in arrays)
        for buffer in buffers:
            await backend.free(buffer)
        assert_no_resident_leaks(backend.telemetry())


@pytest.mark.parametrize("count", [37, 300_000], ids=["small", "over-1MiB"])
async def test_read_into_out_fills_and_returns_that_array(
    rng: np.random.Generator, count: int
) -> None:
    """read(out=...) writes the range into the caller's array and returns it."""
    array = rng.standard_normal(count + 11).astype(np.float32)
    async with va.open_backend("cpu") as backend:
        buf = await backend.upload(array)
        out = np.full((count,), np.nan, np.float32)  # poisoned: every element must land
        got = await backend.read(buf, offset=11, out=out)
        syncs = backend.telemetry().sync_points
        await backend.free(buf)
    assert got is out
    np.testing.assert_array_equal(out, array[11:])
    assert syncs == 1


async def test_read_into_a_misfit_out_is_refused_and_leaves_it_untouched() -> None:
    """Wrong dtype, size, layout, a read-only array or a list: ValidationError with a fix."""
    array = np.arange(64, dtype=np.int32)
    frozen = np.zeros(64, np.int32)
    frozen.flags.writeable = False
    misfits: list[object] = [
        np.zeros(64, np.int64),
        np.zeros(63, np.int32),
        np.zeros((64, 2), np.int32)[:, 0],
        frozen,
        [0] * 64,
    ]
    async with va.open_backend("cpu") as backend:
        buf = await backend.upload(array)
        for out in misfits:
            with pytest.raises(va.ValidationError, match="Fix: "):
                await backend.read(buf, out=out)  # type: ignore[arg-type]
        await backend.free(buf)
    assert not frozen.any()


@pytest.mark.parametrize("in_order", [True, False], ids=["stream-order", "any-order"])
def test_finished_work_stops_using_its_buffers_without_being_undone(
    rng: np.random.Generator, in_order: bool
) -> None:
    """Claims against a plain model: a buffer is busy exactly while some claim on it is
    unfinished, whatever order work finishes in (work that fails early can finish
    before what it waited for), and finished users do not pile up in the record.
    When work finishes in stream order (after everything it waited for), each claim
    waits, directly or through what it waits for, for every unfinished claim it
    conflicts with."""
    from vyre_async.backends._resident import ResidentRegistry
    from vyre_async.errors import LifecycleError
    from vyre_async.streams import Completion

    registry: ResidentRegistry[None] = ResidentRegistry("cpu", lambda *_: None)
    buffers = [registry.add(None, np.dtype(np.float32), (4,)) for _ in range(3)]
    records = {b: registry.resolve({b: False})[0][0] for b in buffers}
    live: list[tuple[Completion, dict[object, bool]]] = []
    waited_on: dict[Completion, list[Completion]] = {}
    for _ in range(2000):
        ready = [i for i, (c, _) in enumerate(live) if all(w.done for w in waited_on[c])]
        if live and rng.random() < 0.6:
            choices = ready if in_order else range(len(live))
            done, _ = live.pop(int(rng.choice(choices)))
            done.complete()
        else:
            # The first buffer is only ever read: nothing resets its readers.
            uses = {
                b: b is not buffers[0] and bool(rng.random() < 0.4)
                for b in buffers
                if rng.random() < 0.6
            }
            work = Completion()
            sharing = {c for c, their in live if their.keys() & uses.keys()}
            conflicting = {
                c
                for c, their in live
                for b, writes in uses.items()
                if b in their and (writes or their[b])
            }
            waits = registry.reserve(uses, work)
            assert set(waits) <= sharing, "waits for work on other buffers"
            assert not any(w.done for w in waits), "waits for finished work"
            if in_order:
                reached, frontier = set(waits), list(waits)
                while frontier:  # what the waits wait for, transitively, while unfinished
                    for earlier in waited_on[frontier.pop()]:
                        if not earlier.done and earlier not in reached:
                            reached.add(earlier)
                            frontier.append(earlier)
                assert conflicting <= reached, "a conflicting unfinished claim is not waited for"
            waited_on[work] = waits
            live.append((work, uses))
        for b in buffers:
            users = sum(1 for _, their in live if b in their)
            if users:
                with pytest.raises(LifecycleError, match="Fix: await the pending work"):
                    registry.check_idle(b, "freed")
            else:
                registry.check_idle(b, "freed")
            record = records[b]
            kept = len(record.reads) + len(record.displaced)
            assert kept <= users + 16, "finished users piled up"
