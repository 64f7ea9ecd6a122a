"""``axpy``: ``y = a * x + y`` over float32 vectors, in place."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._kernel import Kernel
from ._launch import grid_stride
from ._signature import BufferParam, ScalarParam

SOURCE = r"""
extern "C" __global__ void axpy(const float* __restrict__ x,
                                float* __restrict__ y,
                                float a,
                                int n)
{
    // 64-bit indices: i + stride must not wrap when n is near INT_MAX.
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += stride) {
        y[i] = fmaf(a, x[i], y[i]);
    }
}
"""


def axpy_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """CPU ``axpy``: overwrites ``arrays["y"]`` with ``a * x + y`` in float32.

    Args:
        arrays: ``x`` (read) and ``y`` (read, then written in place).
        scalars: ``a`` (float32) and the derived ``n``.
    """
    x, y = arrays["x"], arrays["y"]
    a = np.float64(scalars["a"].item())
    # Near the device's fmaf (one rounding): a * x is exact in float64, and the sum is
    # rounded to float32 once more, so the two agree to within one float32 ulp.
    np.copyto(y, a * x + y, casting="same_kind")


axpy = Kernel(
    name="axpy",
    source=SOURCE,
    entry="axpy",
    params=(
        BufferParam("x", np.float32, "in", "n"),
        BufferParam("y", np.float32, "inout", "n"),
        ScalarParam("a", np.float32),
        ScalarParam("n", np.int32, default="n"),
    ),
    launch=grid_stride("n"),
    reference=axpy_reference,
)
