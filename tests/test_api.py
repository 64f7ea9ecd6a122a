"""The public surface: exports, the error tree, telemetry, backend selection."""

from __future__ import annotations

import importlib
import pkgutil
import types

import msgspec
import numpy as np
import pytest

import vyre_async as va
from vyre_async import errors
from vyre_async.telemetry import TelemetrySnapshot, to_prometheus_text
from vyre_async.testing import capture_logs, gpu_unavailable_reason

#: Public modules that are not packages; every package is found by walking the tree.
PUBLIC_PLAIN_MODULES = ["vyre_async.errors", "vyre_async.logging", "vyre_async.testing"]


def _public_packages() -> list[str]:
    """Every package of vyre_async whose dotted name has no private part."""
    found = ["vyre_async"]
    for info in pkgutil.walk_packages(va.__path__, "vyre_async."):
        if info.ispkg and not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    return sorted(found)


PUBLIC_MODULES = _public_packages() + PUBLIC_PLAIN_MODULES


def test_the_package_walk_finds_every_layer() -> None:
    """The __all__ check below covers each package of the layout, sub-packages included."""
    for name in (
        "vyre_async.algorithms.bfs",
        "vyre_async.algorithms.egraph",
        "vyre_async.backends.cuda",
        "vyre_async.batching",
        "vyre_async.cuda",
        "vyre_async.jobs.graph",
        "vyre_async.jobs.output",
        "vyre_async.jobs.runner",
        "vyre_async.jobs.spec",
        "vyre_async.sessions",
        "vyre_async.streams",
        "vyre_async.telemetry",
    ):
        assert name in PUBLIC_MODULES


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_and_complete(name: str) -> None:
    """Each public module's __all__ is sorted and lists every public name it defines."""
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported), f"{name}.__all__ is not sorted"
    # A package re-exports from its private modules; a plain module exports what it defines.
    owner_prefix = "vyre_async" if hasattr(module, "__path__") else name
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and not isinstance(value, types.ModuleType)
        and str(getattr(value, "__module__", "")).startswith(owner_prefix)
    }
    missing = public - set(exported)
    assert not missing, f"{name} defines public names missing from __all__: {sorted(missing)}"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names {attr!r}, which does not exist"


def test_error_classes_have_distinct_stable_codes() -> None:
    """Every VyreError subclass has its own integer code."""
    classes = [getattr(errors, n) for n in errors.__all__]
    codes = {cls.code for cls in classes}
    assert len(codes) == len(classes)
    assert all(issubclass(cls, errors.VyreError) for cls in classes)


def test_error_message_is_what_then_fix() -> None:
    """A VyreError renders 'what. Fix: fix' and refuses an empty fix."""
    err = errors.OutOfMemoryError("needed 10 bytes, 4 free", fix="free something")
    assert str(err) == "needed 10 bytes, 4 free. Fix: free something"
    with pytest.raises(ValueError, match="fix"):
        errors.VyreError("x", fix=" ")


def test_prometheus_text_has_every_counter_with_labels() -> None:
    """to_prometheus_text renders each field once, labelled with backend and device."""
    snap = TelemetrySnapshot(backend="cpu", device='cpu "x"', dispatches=3, bytes_uploaded=12)
    text = to_prometheus_text(snap)
    assert 'vyre_async_dispatches_total{backend="cpu",device="cpu \\"x\\""} 3' in text
    assert 'vyre_async_bytes_uploaded_total{backend="cpu",device="cpu \\"x\\""} 12' in text
    fields = [f for f in snap.__struct_fields__ if f not in ("backend", "device")]
    assert sum(line.startswith("# TYPE") for line in text.splitlines()) == len(fields)


def test_telemetry_snapshot_round_trips_through_json() -> None:
    """Snapshots are frozen msgspec structs that decode back to an equal value."""
    snap = TelemetrySnapshot(backend="cpu", device="d", kernel_launches=5)
    assert msgspec.json.decode(msgspec.json.encode(snap), type=TelemetrySnapshot) == snap
    with pytest.raises(AttributeError):
        snap.dispatches = 1  # type: ignore[misc]


async def test_telemetry_counts_and_resets(rng: np.random.Generator) -> None:
    """Counters follow dispatches and transfers; reset zeroes activity, not live memory."""
    x = rng.standard_normal(50).astype(np.float32)
    async with va.open_backend("cpu") as backend:
        buf = await backend.upload(x)
        await backend.dispatch(va.kernels.axpy, {"x": buf, "y": x}, a=1.0)
        t = backend.telemetry()
        assert (t.dispatches, t.kernel_launches, t.sync_points) == (1, 1, 1)
        assert t.bytes_uploaded == x.nbytes
        assert t.bytes_downloaded == x.nbytes
        assert (t.resident_buffers_live, t.resident_bytes_live) == (1, x.nbytes)
        assert backend.activity() == va.Activity(t.sync_points, 1, x.nbytes)
        backend.reset_telemetry()
        t = backend.telemetry()
        assert (t.dispatches, t.bytes_uploaded, t.resident_buffers_live) == (0, 0, 1)
        assert backend.activity() == (0, 0, 0)
        await backend.free(buf)


async def test_auto_falls_back_to_cpu_and_logs_why() -> None:
    """open_backend('auto') without a GPU gives the CPU backend and logs the reason."""
    with capture_logs() as logs:
        async with va.open_backend("auto") as backend:
            kind = backend.kind
    if kind == "cuda":
        pytest.skip("a GPU answered; the fallback path is not reachable here")
    fallback = [e for e in logs if e["event"] == "falling back to the cpu backend"]
    assert kind == "cpu"
    assert fallback, logs
    assert fallback[0]["reason"]


async def test_cuda_without_gpu_raises_unsupported_feature() -> None:
    """open_backend('cuda') with no usable GPU raises UnsupportedFeatureError with a fix."""
    if gpu_unavailable_reason() is None:
        pytest.skip("a GPU answered, so 'cuda' opens")
    with pytest.raises(va.UnsupportedFeatureError, match="Fix:"):
        async with va.open_backend("cuda"):
            pass


async def test_unknown_backend_kind_is_a_configuration_error() -> None:
    """An unknown kind raises ConfigurationError before anything opens."""
    with pytest.raises(va.ConfigurationError, match="Fix:"):
        async with va.open_backend("tpu"):  # type: ignore[arg-type]
            pass


def test_dispatch_config_refuses_impossible_values() -> None:
    """DispatchConfig rejects zero iterations and non-positive timeouts."""
    with pytest.raises(va.ConfigurationError, match="Fix:"):
        va.DispatchConfig(fixpoint_iterations=0)
    with pytest.raises(va.ConfigurationError, match="Fix:"):
        va.DispatchConfig(timeout=0)


async def test_dispatch_logs_carry_backend_device_and_kernel() -> None:
    """With debug logging on, each dispatch logs its kernel under the backend's context."""
    va.configure_logging("json", level="debug")
    with capture_logs() as logs:
        async with va.open_backend("cpu") as backend:
            ones = np.ones(4, np.float32)
            await backend.dispatch(va.kernels.axpy, {"x": ones, "y": ones}, a=1.0)
    submitted = [e for e in logs if e["event"] == "dispatch submitted"]
    assert len(submitted) == 1
    assert submitted[0]["kernel"] == "axpy"
    assert submitted[0]["backend"] == "cpu"
    assert submitted[0]["device"] == backend.device_name


async def test_dispatches_log_nothing_unless_debug_was_asked_for() -> None:
    """Without configure_logging(level='debug') no per-dispatch event is emitted."""
    with capture_logs() as logs:
        async with va.open_backend("cpu") as backend:
            ones = np.ones(4, np.float32)
            await backend.dispatch(va.kernels.axpy, {"x": ones, "y": ones}, a=1.0)
    assert not [e for e in logs if e["event"] == "dispatch submitted"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_blocking_calls_on_the_loop_fail_the_test() -> None:
    """The blockbuster guard is active: a blocking sleep inside an async test raises.

    blockbuster watches asyncio loops only; trio runs of the suite are not guarded.
    """
    import time

    from blockbuster import BlockingError

    with pytest.raises(BlockingError):
        time.sleep(0.001)  # noqa: ASYNC251 - the point is that the guard catches it
