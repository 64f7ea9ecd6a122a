"""Which binding launches kernels, and how a launch failure it raises is reported."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vyre_async as va
from vyre_async.cuda import failed_launch, kernel_launcher
from vyre_async.errors import DeviceLostError, DispatchError, ValidationError
from vyre_async.kernels import axpy

sys.path.insert(0, str(Path(__file__).parent))
import cuda_sim

SIGNATURE = (
    "launchKernel(intptr_t f, unsigned int grid_dim_x, unsigned int grid_dim_y, "
    "unsigned int grid_dim_z, unsigned int block_dim_x, unsigned int block_dim_y, "
    "unsigned int block_dim_z, unsigned int shared_mem_bytes, intptr_t stream, "
    "intptr_t kernel_params, intptr_t extra)"
)


class FakeDriverError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"status {status}")
        self.status = status


def _bindings() -> types.ModuleType:
    """A stand-in named as the real driver bindings, with their launch call."""
    module = types.ModuleType("cuda.bindings.driver")
    module.cuLaunchKernel = lambda *args: (0,)  # type: ignore[attr-defined]
    return module


def _cupy(monkeypatch: pytest.MonkeyPatch, doc: str = SIGNATURE) -> Any:
    """Make ``cupy_backends.cuda.api.driver`` import as a module with a launcher."""

    def launchKernel(*args: Any) -> None:  # noqa: N802 - CuPy's name
        return None

    launchKernel.__doc__ = doc
    module = types.ModuleType("cupy_backends.cuda.api.driver")
    module.launchKernel = launchKernel  # type: ignore[attr-defined]
    module.CUDADriverError = FakeDriverError  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.api.driver", module)
    return launchKernel


def test_cupys_launcher_is_used_with_the_real_bindings_when_it_declares_its_parameters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VYRE_ASYNC_LAUNCHER", raising=False)
    launch = _cupy(monkeypatch)
    launcher = kernel_launcher(_bindings())
    assert (launcher.name, launcher.call, launcher.error) == ("cupy", launch, FakeDriverError)


def test_cupys_driver_binds_libcuda_when_its_launcher_is_chosen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CuPy's driver module loads libcuda at its first call: the choice makes that call
    (off the loop, in the backend's open), and a failing one keeps cuda-bindings."""
    monkeypatch.delenv("VYRE_ASYNC_LAUNCHER", raising=False)
    _cupy(monkeypatch)
    module = sys.modules["cupy_backends.cuda.api.driver"]
    calls: list[str] = []
    module.ctxGetCurrent = lambda: calls.append("ctxGetCurrent") or 0  # type: ignore[attr-defined]
    assert kernel_launcher(_bindings()).name == "cupy"
    assert calls == ["ctxGetCurrent"]

    def fails() -> int:
        raise RuntimeError("CuPy failed to load libcuda.so.1")

    module.ctxGetCurrent = fails  # type: ignore[attr-defined]
    assert kernel_launcher(_bindings()).name == "cuda-bindings"


def test_cuda_bindings_launch_without_cupy_with_a_stand_in_driver_or_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VYRE_ASYNC_LAUNCHER", raising=False)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.api.driver", None)  # not installed
    bindings = _bindings()
    assert kernel_launcher(bindings).name == "cuda-bindings"
    _cupy(monkeypatch)
    stand_in = types.SimpleNamespace(cuLaunchKernel=lambda *args: (0,))
    assert kernel_launcher(stand_in).call is stand_in.cuLaunchKernel
    monkeypatch.setenv("VYRE_ASYNC_LAUNCHER", "cuda-bindings")
    launcher = kernel_launcher(bindings)
    assert (launcher.name, launcher.call) == ("cuda-bindings", bindings.cuLaunchKernel)


def test_a_cupy_launcher_with_other_parameters_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VYRE_ASYNC_LAUNCHER", raising=False)
    _cupy(monkeypatch, doc="launchKernel(intptr_t f, tuple grid, tuple block)")
    assert kernel_launcher(_bindings()).name == "cuda-bindings"


def test_an_unknown_launcher_choice_is_refused_with_a_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VYRE_ASYNC_LAUNCHER", "ctypes")
    with pytest.raises(ValidationError, match=r"VYRE_ASYNC_LAUNCHER is 'ctypes'.*Fix:"):
        kernel_launcher(_bindings())


def test_failed_launch_gives_the_driver_code() -> None:
    assert failed_launch(FakeDriverError(701)) == (701,)


@pytest.mark.parametrize(
    ("status", "error", "lost"),
    [(701, DispatchError, False), (700, DeviceLostError, True)],
)
async def test_a_launcher_that_raises_is_reported_like_a_returned_failure(
    monkeypatch: pytest.MonkeyPatch, status: int, error: type[Exception], lost: bool
) -> None:
    """A launcher in CuPy's manner (``None`` on success, its driver error raised on
    failure) computes as cuda-bindings' does, and its failure is the same mapped
    error: a dispatch error, or a lost device for a sticky code."""
    sim = cuda_sim.install(monkeypatch, lag=1)
    x = np.arange(64, dtype=np.float32)
    async with va.open_backend("cuda") as cuda:
        fail = False

        def launch(*args: Any) -> None:
            if fail:
                raise FakeDriverError(status)
            sim.cuLaunchKernel(*args)

        monkeypatch.setattr(cuda, "_launch_kernel", launch)
        monkeypatch.setattr(cuda, "_launch_error", FakeDriverError)
        xb, yb = await cuda.upload(x), await cuda.upload(np.ones(64, np.float32))
        await cuda.dispatch(axpy, {"x": xb, "y": yb}, a=2.0)
        out = await cuda.dispatch(axpy, {"x": x, "y": x}, a=1.0)
        np.testing.assert_array_equal(out["y"], 2 * x)
        np.testing.assert_array_equal(await cuda.read(yb), 1 + 2 * x)
        fail = True
        with pytest.raises(error, match=r"cuLaunchKernel failed.*Fix:"):
            await cuda.dispatch(axpy, {"x": xb, "y": yb}, a=2.0)
        assert cuda._device.lost is lost  # type: ignore[attr-defined]
        if not lost:
            fail = False
            await cuda.dispatch(axpy, {"x": xb, "y": yb}, a=2.0)
            np.testing.assert_array_equal(await cuda.read(yb), 1 + 4 * x)
            await cuda.free(xb)
            await cuda.free(yb)
