"""backend.load_kernels on the CPU backend: code written for CUDA runs unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import vyre_async as va


async def test_load_kernels_on_the_cpu_backend_accepts_kernels_with_a_reference() -> None:
    """load_kernels(axpy, sum_reduce) on the CPU backend returns; dispatch still computes."""
    async with va.open_backend("cpu") as backend:
        await backend.load_kernels(va.kernels.axpy, va.kernels.sum_reduce)
        x = np.arange(4, dtype=np.float32)
        out = await backend.dispatch(va.kernels.sum_reduce, {"x": x})
        assert out["out"].tolist() == [6.0]


async def test_load_kernels_on_the_cpu_backend_refuses_a_cuda_only_kernel_with_a_fix() -> None:
    """A kernel without a reference: UnsupportedFeatureError naming it, before any dispatch."""
    cuda_only = dataclasses.replace(va.kernels.axpy, name="axpy_cuda_only", reference=None)
    async with va.open_backend("cpu") as backend:
        with pytest.raises(va.UnsupportedFeatureError, match=r"'axpy_cuda_only'.*Fix:"):
            await backend.load_kernels(va.kernels.axpy, cuda_only)


async def test_load_kernels_refuses_what_is_not_a_kernel_and_a_closed_backend() -> None:
    """A string is a TypeError; after the block closes, a LifecycleError."""
    async with va.open_backend("cpu") as backend:
        with pytest.raises(TypeError, match="expected a vyre_async Kernel, got str"):
            await backend.load_kernels("axpy")  # type: ignore[arg-type]
    with pytest.raises(va.LifecycleError):
        await backend.load_kernels(va.kernels.axpy)
