"""Immutable sequence steps; bindings, launch plans and prepared sequences reused."""

from __future__ import annotations

import numpy as np
import numpy.testing  # imported here: a lazy import inside a test reads files
import pytest

import vyre_async as va
from vyre_async.backends.cuda._graphs import StepPlans
from vyre_async.kernels import axpy, sum_reduce


async def test_a_step_keeps_the_mappings_it_was_made_with(rng: np.random.Generator) -> None:
    """Changing the caller's dicts after making a step changes neither it nor its runs."""
    x = rng.standard_normal(64).astype(np.float32)
    y = rng.standard_normal(64).astype(np.float32)
    async with va.open_backend("cpu") as backend:
        xb, yb, other = [await backend.upload(a) for a in (x, y, np.zeros(64, np.float32))]
        buffers = {"x": xb, "y": yb}
        scalars = {"a": 2.0}
        step = va.SequenceStep(axpy, buffers, scalars)
        await backend.submit_sequence([step])
        buffers["y"], scalars["a"] = other, -7.0
        with pytest.raises(TypeError):
            step.buffers["y"] = other  # type: ignore[index]
        await backend.submit_sequence([step])  # the same object again: bound once
        got = await backend.read(yb)
        untouched = await backend.read(other)
    np.testing.assert_allclose(got, y.astype(np.float64) + 4.0 * x, rtol=1e-5, atol=1e-5)
    assert not untouched.any()


async def test_steps_of_equal_content_share_one_binding() -> None:
    """The same step, or another of equal content, gets the binding made first."""
    async with va.open_backend("cpu") as backend:
        xb = await backend.upload(np.ones(8, np.float32))
        out = await backend.alloc(4, np.float32)
        step = va.SequenceStep(sum_reduce, {"x": xb, "out": out})
        first = backend._bind_step(0, step)
        assert backend._bind_step(0, step) is first
        twin = va.SequenceStep(sum_reduce, {"x": xb, "out": out})
        assert backend._bind_step(0, twin) is first, "equal content shares one binding"
        (total,) = await backend.submit_sequence([step], reads=[va.ReadRange(out)])
    assert total[0] == 8.0


def _bound(backend: va.Backend, step: va.SequenceStep) -> object:
    return backend._bind_step(0, step)  # type: ignore[attr-defined]


async def test_step_plans_give_equal_bodies_one_graph_key_and_different_ones_another() -> None:
    """Graph keys follow content: same kernels, pointers and scalars -> same key."""
    async with va.open_backend("cpu") as backend:
        x, y, z = [await backend.upload(np.ones(16, np.float32)) for _ in range(3)]
        w = await backend.alloc(4, np.float32)
        pointers = {x.id: 0x1000, y.id: 0x2000, z.id: 0x3000, w.id: 0x4000}
        plans = StepPlans(capacity=4)
        calls = [
            _bound(backend, va.SequenceStep(axpy, {"x": x, "y": y}, {"a": a}))
            for a in (1.0, 1.0, 2.0)
        ]
        other_pointer = _bound(backend, va.SequenceStep(axpy, {"x": x, "y": z}, {"a": 1.0}))
        steps = [plans.plan(c, lambda b: pointers[b.id]) for c in calls]  # type: ignore[arg-type]
        assert plans.plan(calls[0], lambda b: 0) is steps[0], "found by identity"  # type: ignore[arg-type]
        assert steps[0][1] == {"x": 0x1000, "y": 0x2000}
        assert steps[0][2] == [], "an in-out buffer keeps its contents"
        total = _bound(backend, va.SequenceStep(sum_reduce, {"x": x, "out": w}))
        summed = plans.plan(total, lambda b: pointers[b.id])  # type: ignore[arg-type]
        assert summed[2] == [(0x4000, 4)], "an output is cleared before its launch"
        key = plans.body_key(steps[:1], 16)
        assert plans.body_key(steps[1:2], 16) == key
        assert plans.body_key(steps[2:3], 16) != key, "another scalar"
        assert plans.body_key(steps[:1], 32) != key, "another repeat count"
        moved = plans.plan(other_pointer, lambda b: pointers[b.id])  # type: ignore[arg-type]
        assert plans.body_key([moved], 16) != key, "another pointer"
        # A fifth plan finds the capacity reached: all are dropped, keys still follow content.
        fresh = _bound(backend, va.SequenceStep(axpy, {"x": x, "y": y}, {"a": 3.0}))
        plans.plan(fresh, lambda b: pointers[b.id])  # type: ignore[arg-type]
        again = plans.plan(calls[0], lambda b: pointers[b.id])  # type: ignore[arg-type]
        assert again is not steps[0], "planned anew after the drop"
        assert plans.body_key([again], 16) != key, "dropped numbers are never reused"
        assert plans.body_key([again], 16) == plans.body_key([again], 16)


@pytest.mark.parametrize("way", ["submit", "run"])
async def test_a_prepared_sequence_runs_like_submit_repeated_with_each_prefix_value(
    rng: np.random.Generator, way: str
) -> None:
    """Submitting (or running) a prepared sequence with new prefix scalars equals the
    float64 model."""
    n = 200
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    async with va.open_backend("cpu") as backend:
        xb, yb = await backend.upload(x), await backend.upload(y)
        prepared = backend.prepare_repeated(
            [va.SequenceStep(axpy, {"x": xb, "y": yb}, {"a": 0.0})],
            [va.SequenceStep(axpy, {"x": xb, "y": yb}, {"a": 0.5})],
            reads=[va.ReadRange(yb)],
        )
        backend.reset_telemetry()
        runs = []
        for a, repeats in ((3.0, 2), (-1.25, 0), (3.0, 4)):
            if way == "submit":
                (after,) = await prepared.submit(repeats, scalars={"a": a})
            else:
                (after,), device_ns = await prepared.run(repeats, scalars={"a": a})
                assert device_ns > 0, "the reference's run time"
            runs.append(after)
        launches = backend.activity().kernel_launches
        assert backend.activity().sync_points == 3
        assert prepared._prefix_with({"a": 3.0}) is prepared._prefix_with({"a": 3.0})
    expected = y.astype(np.float64)
    for got, (a, repeats) in zip(runs, ((3.0, 2), (-1.25, 0), (3.0, 4)), strict=True):
        expected = expected + (a + 0.5 * repeats) * x.astype(np.float64)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert launches == (1 + 2) + (1 + 0) + (1 + 4)


async def test_a_prepared_sequence_refuses_bad_scalars_freed_buffers_and_bad_counts() -> None:
    """Unknown or wrong scalars, a buffer freed since, a bad count: clear errors, no run."""
    async with va.open_backend("cpu") as backend:
        xb = await backend.upload(np.ones(8, np.float32))
        yb = await backend.upload(np.zeros(8, np.float32))
        prepared = backend.prepare_repeated(
            [va.SequenceStep(axpy, {"x": xb, "y": yb}, {"a": 1.0})], [], reads=[va.ReadRange(yb)]
        )
        before = backend.activity()
        with pytest.raises(va.ValidationError, match=r"no scalar 'b'.*Fix:"):
            prepared.submit(0, scalars={"b": 1.0})
        with pytest.raises(va.ValidationError, match="Fix:"):
            prepared.submit(0, scalars={"a": "three"})
        with pytest.raises(ValueError, match="repeat_count"):
            prepared.submit(-1)
        with pytest.raises(va.ValidationError, match=r"no scalar 'b'.*Fix:"):
            await prepared.run(0, scalars={"b": 1.0})
        with pytest.raises(ValueError, match="repeat_count"):
            await prepared.run(-1)
        assert backend.activity() == before, "nothing ran"
        await backend.free(xb)
        with pytest.raises(va.LifecycleError, match=r"already freed.*Fix:"):
            prepared.submit(0)
        with pytest.raises(va.LifecycleError, match=r"already freed.*Fix:"):
            await prepared.run(0)
        assert not backend._in_flight, "the refused run left nothing for close to wait on"  # type: ignore[attr-defined]
        (still,) = await backend.read_many([va.ReadRange(yb)])
    assert not still.any()
