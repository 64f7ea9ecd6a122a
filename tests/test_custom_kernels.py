"""User kernels: the guide's example on the CPU backend, and CUDA-only kernels (no reference)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import numpy.testing  # imported here: its first import reads files, which async tests refuse
import pytest

import vyre_async as va
from vyre_async.kernels import compile_kernel
from vyre_async.testing import assert_no_resident_leaks

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_kernel.py"


def _load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("custom_kernel_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


example = _load_example()


async def test_guide_example_runs_on_the_cpu_backend(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/custom_kernel.py on the CPU backend: clamp matches, scale_rows is refused."""
    await example.main("cpu")
    out = capsys.readouterr().out
    assert "clamp: 100000 values equal np.clip" in out
    assert "scale_rows refused: kernel 'scale_rows' has no NumPy reference" in out


async def test_clamp_reference_equals_numpy_on_random_inputs(rng: np.random.Generator) -> None:
    """The example's clamp equals float64 NumPy clipping for random bounds and lengths."""
    n = int(rng.integers(0, 5000))
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    lo, hi = sorted(float(v) for v in rng.uniform(-3, 3, 2))
    async with va.open_backend("cpu") as backend:
        out = await backend.dispatch(example.clamp, {"x": x}, lo=lo, hi=hi)
    expected = np.clip(x.astype(np.float64), np.float32(lo), np.float32(hi))
    np.testing.assert_array_equal(out["y"], expected.astype(np.float32))


def test_a_kernel_needs_no_reference() -> None:
    """A Kernel made without reference= has reference None and still compiles with NVRTC."""
    assert example.scale_rows.reference is None
    compiled = compile_kernel(example.scale_rows, "sm_90")
    assert compiled.image[:4] == b"\x7fELF"  # a CUBIN
    assert compile_kernel(example.clamp, "sm_90").image[:4] == b"\x7fELF"


async def test_cpu_backend_refuses_a_cuda_only_dispatch_and_keeps_working() -> None:
    """Dispatching a kernel without reference on the CPU backend raises
    UnsupportedFeatureError with a fix; nothing is counted, its resident buffer is free to
    free, and the backend runs the next dispatch."""
    m = np.ones(6, np.float32)
    async with va.open_backend("cpu") as backend:
        s = await backend.upload(np.full(2, 3.0, np.float32))
        with pytest.raises(va.UnsupportedFeatureError) as info:
            backend.submit(example.scale_rows, {"m": m, "s": s}, cols=3)
        assert "no NumPy reference" in str(info.value)
        assert "Fix: run it on a GPU" in str(info.value)
        assert backend.telemetry().dispatches == 0
        await backend.free(s)  # no unfinished work holds it
        assert_no_resident_leaks(backend.telemetry())
        out = await backend.dispatch(example.clamp, {"x": m}, lo=0.0, hi=0.5)
    np.testing.assert_array_equal(out["y"], np.full(6, 0.5, np.float32))


async def test_cpu_backend_refuses_a_cuda_only_sequence_step() -> None:
    """A sequence with a kernel without reference is refused at submit, buffers released."""
    async with va.open_backend("cpu") as backend:
        m = await backend.upload(np.ones(4, np.float32))
        s = await backend.upload(np.ones(2, np.float32))
        step = va.SequenceStep(example.scale_rows, {"m": m, "s": s}, {"cols": 2})
        with pytest.raises(va.UnsupportedFeatureError, match="no NumPy reference"):
            backend.submit_sequence([step], reads=[va.ReadRange(m, 0, 4)])
        await backend.free(m)  # no unfinished work holds it
        await backend.free(s)
        assert_no_resident_leaks(backend.telemetry())
