"""``sum_reduce``: the float32 sum of a vector, by block reduction and one atomic per block."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._kernel import Kernel
from ._launch import grid_stride
from ._signature import BufferParam, ScalarParam

#: Threads per block; a multiple of 32 because the shuffles use a full-warp mask.
BLOCK = 256

SOURCE = r"""
extern "C" __global__ void sum_reduce(const float* __restrict__ x,
                                      float* __restrict__ out,
                                      int n)
{
    __shared__ float warp_sums[32];
    float acc = 0.0f;
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += stride) {
        acc += x[i];
    }
    // No thread returns early: every one of them must reach the shuffles and the barrier.
    for (int offset = 16; offset > 0; offset >>= 1) {
        acc += __shfl_down_sync(0xffffffffu, acc, offset);
    }
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    if (lane == 0u) {
        warp_sums[warp] = acc;
    }
    __syncthreads();
    if (warp == 0u) {
        const unsigned warps = (blockDim.x + 31u) >> 5;
        acc = lane < warps ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) {
            acc += __shfl_down_sync(0xffffffffu, acc, offset);
        }
        if (lane == 0u) {
            atomicAdd(out, acc);  // out[0] was zeroed by the backend before launch
        }
    }
}
"""


def sum_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """CPU ``sum_reduce``: ``out[0]`` = the float64 sum of ``x``, stored as float32.

    The device adds in float32 in an unspecified order, so its result is compared to
    this one with a tolerance, never exactly.

    Args:
        arrays: ``x`` (read) and ``out`` (one element, written).
        scalars: The derived ``n``.
    """
    arrays["out"][0] = np.sum(arrays["x"], dtype=np.float64)


sum_reduce = Kernel(
    name="sum_reduce",  # as users call it (va.kernels.sum_reduce): errors name it so
    source=SOURCE,
    entry="sum_reduce",
    params=(
        BufferParam("x", np.float32, "in", "n"),
        BufferParam("out", np.float32, "out", 1),
        ScalarParam("n", np.int32, default="n"),
    ),
    # Several elements per thread and a capped grid keep the atomics per launch few.
    launch=grid_stride("n", block=BLOCK, items_per_thread=8, max_blocks=1024),
    reference=sum_reference,
)
