"""``histogram256``: counts of each byte value, privatized per block in shared memory."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._kernel import Kernel
from ._launch import grid_stride
from ._signature import BufferParam, ScalarParam

BINS = 256

SOURCE = r"""
extern "C" __global__ void histogram256(const unsigned char* __restrict__ data,
                                        unsigned int* __restrict__ counts,
                                        int n)
{
    // Shared-memory atomics are cheap; one global atomic per bin per block keeps
    // contention on counts[] independent of n.
    __shared__ unsigned int local[256];
    for (unsigned b = threadIdx.x; b < 256u; b += blockDim.x) {
        local[b] = 0u;
    }
    __syncthreads();
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += stride) {
        atomicAdd(&local[data[i]], 1u);
    }
    __syncthreads();
    for (unsigned b = threadIdx.x; b < 256u; b += blockDim.x) {
        const unsigned c = local[b];
        if (c != 0u) {
            atomicAdd(&counts[b], c);  // counts was zeroed by the backend before launch
        }
    }
}
"""


def histogram_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``histogram256``: ``counts[v]`` = how many bytes of ``data`` equal ``v``.

    Args:
        arrays: ``data`` (uint8, read) and ``counts`` (256 uint32, written).
        scalars: The derived ``n``.
    """
    np.copyto(arrays["counts"], np.bincount(arrays["data"], minlength=BINS), casting="unsafe")


histogram256 = Kernel(
    name="histogram256",
    source=SOURCE,
    entry="histogram256",
    params=(
        BufferParam("data", np.uint8, "in", "n"),
        BufferParam("counts", np.uint32, "out", BINS),
        ScalarParam("n", np.int32, default="n"),
    ),
    launch=grid_stride("n", block=256, items_per_thread=16, max_blocks=1024),
    reference=histogram_reference,
)
