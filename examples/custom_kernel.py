"""Writing your own kernel: CUDA C, a typed signature, a launch rule, a NumPy reference.

``clamp`` has a reference, so it runs on either backend and the CUDA result can be
checked against it. ``scale_rows`` is CUDA-only (no reference): the CPU backend
refuses it with an UnsupportedFeatureError, which this example shows and catches.
The guide is docs/guide/kernels.md. Where the backend cannot open (``--backend cuda``
without a GPU) it prints the reason and its fix on one line and exits 1.

Usage: ``python examples/custom_kernel.py [--backend auto|cuda|cpu]``
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

import anyio
import numpy as np

import vyre_async as va
from vyre_async.kernels import BufferParam, Kernel, LaunchShape, ScalarParam, grid_stride

CLAMP_SOURCE = r"""
extern "C" __global__ void clamp(const float* __restrict__ x,
                                 float* __restrict__ y,
                                 float lo, float hi, int n)
{
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += stride) {
        y[i] = fminf(fmaxf(x[i], lo), hi);
    }
}
"""


def clamp_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """NumPy ``clamp``: writes ``y`` (it arrives zeroed) from ``x``, in float32."""
    np.clip(arrays["x"], scalars["lo"], scalars["hi"], out=arrays["y"])


clamp = Kernel(
    name="clamp",
    source=CLAMP_SOURCE,
    entry="clamp",
    params=(
        BufferParam("x", np.float32, "in", "n"),
        BufferParam("y", np.float32, "out", "n"),  # returned by dispatch
        ScalarParam("lo", np.float32),
        ScalarParam("hi", np.float32, default=1.0),
        ScalarParam("n", np.int32, default="n"),  # derived: the length of x
    ),
    launch=grid_stride("n"),
    reference=clamp_reference,
)

SCALE_ROWS_SOURCE = r"""
extern "C" __global__ void scale_rows(float* __restrict__ m, const float* __restrict__ s,
                                      int cells, int rows, int cols)
{
    // One block per row; the row's threads stride over its columns. cells (derived from
    // m's length) bounds every index, so a wrong cols cannot write past the buffer.
    const int row = blockIdx.x;
    if (row >= rows) return;
    const float factor = s[row];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const size_t i = (size_t)row * cols + c;
        if (i < (size_t)cells) m[i] *= factor;
    }
}
"""


def one_block_per_row(sizes: Mapping[str, int]) -> LaunchShape:
    """A launch rule of its own: ``rows`` blocks of 128 threads."""
    return LaunchShape(grid=(sizes["rows"], 1, 1), block=(128, 1, 1))


#: CUDA-only: no reference. ``cols`` is a plain scalar the caller passes; ``cells`` and
#: ``rows`` are derived from the buffers' lengths.
scale_rows = Kernel(
    name="scale_rows",
    source=SCALE_ROWS_SOURCE,
    entry="scale_rows",
    params=(
        BufferParam("m", np.float32, "inout", "cells"),
        BufferParam("s", np.float32, "in", "rows"),
        ScalarParam("cells", np.int32, default="cells"),
        ScalarParam("rows", np.int32, default="rows"),
        ScalarParam("cols", np.int32),
    ),
    launch=one_block_per_row,
)


async def main(kind: va.backends.BackendKind) -> None:
    """Run ``clamp`` and check it against NumPy; try ``scale_rows``."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(100_000) * 3).astype(np.float32)
    async with va.open_backend(kind) as backend:
        print(f"backend: {backend.kind}")
        out = await backend.dispatch(clamp, {"x": x}, lo=-1.0)
        assert np.array_equal(out["y"], np.clip(x, -1.0, 1.0))
        print(f"clamp: {x.size} values equal np.clip")

        m = rng.standard_normal((300, 50)).astype(np.float32)
        s = rng.standard_normal(300).astype(np.float32)
        try:
            scaled = await backend.dispatch(scale_rows, {"m": m, "s": s}, cols=50)
        except va.UnsupportedFeatureError as exc:
            print(f"scale_rows refused: {exc}")
        else:
            assert np.allclose(scaled["m"].reshape(300, 50), m * s[:, None])
            print("scale_rows: equal to m * s[:, None]")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["auto", "cuda", "cpu"], default="auto")
    backend = parser.parse_args().backend
    try:
        anyio.run(main, backend)
    except va.VyreError as exc:  # no GPU for --backend cuda, most often
        here = " Here: --backend cpu." if backend == "cuda" else ""
        sys.exit(f"custom_kernel: {exc}{here}")
    except KeyboardInterrupt:
        sys.exit(130)
