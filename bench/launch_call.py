"""The launch call alone: cuda-bindings' ``cuLaunchKernel`` against CuPy's ``launchKernel``.

Both call the driver's ``cuLaunchKernel`` with the same pre-packed arguments (the
``axpy`` kernel over 1024 float32 resident buffers, function and stream handles as
integers): what differs is the Python wrapper around the call. The CUDA backend
launches with CuPy's where CuPy is installed (``vyre_async.cuda.kernel_launcher``);
this measures why.

Each round launches ``PER_ROUND`` times round robin on 8 streams with each binding,
timing blocks of 256 launches (``perf_counter``) with a context synchronise between
blocks (not timed), so queues never fill. Rounds alternate which binding goes first;
medians are over rounds of the per-launch mean. A pure-Python function taking the
same arguments gives the cost of any Python call, for scale. Before timing, the
result of launches by each binding is checked against the float64 model.

Usage: ``python bench/launch_call.py --out bench/results/launch_call-<gpu>.json``
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from vyre_async.kernels import axpy, compile_kernel

N = 1024
STREAMS = 8
BLOCK = 256
PER_ROUND = 8192
ROUNDS = 9
SEED = 20261124


def main() -> None:
    """Time both bindings and write the JSON summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="path of the JSON summary")
    args = parser.parse_args()
    from cuda.bindings import driver as cu
    from cupy_backends.cuda.api import driver as cupy_driver

    def ok(result: tuple[Any, ...]) -> Any:
        if int(result[0]) != 0:
            raise RuntimeError(f"driver call failed: {result[0]}")
        return result[1] if len(result) == 2 else None

    ok(cu.cuInit(0))
    device = ok(cu.cuDeviceGet(0))
    ok(cu.cuCtxSetCurrent(ok(cu.cuDevicePrimaryCtxRetain(device))))
    major = ok(
        cu.cuDeviceGetAttribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device
        )
    )
    minor = ok(
        cu.cuDeviceGetAttribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device
        )
    )
    name = ok(cu.cuDeviceGetName(64, device)).split(b"\0")[0].decode()
    driver_version = ok(cu.cuDriverGetVersion())
    module = ok(cu.cuModuleLoadData(compile_kernel(axpy, f"sm_{major}{minor}").image))
    function = int(ok(cu.cuModuleGetFunction(module, b"axpy")))
    streams = [int(ok(cu.cuStreamCreate(1))) for _ in range(STREAMS)]
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    dx, dy = int(ok(cu.cuMemAlloc(x.nbytes))), int(ok(cu.cuMemAlloc(y.nbytes)))
    values = [ctypes.c_uint64(dx), ctypes.c_uint64(dy), ctypes.c_float(0.5), ctypes.c_int32(N)]
    params = (ctypes.c_void_p * 4)(*[ctypes.addressof(v) for v in values])
    address = ctypes.addressof(params)
    shape = axpy.launch({"n": N})
    head = (function, *shape.grid, *shape.block, shape.shared_bytes)
    bindings_launch, cupy_launch = cu.cuLaunchKernel, cupy_driver.launchKernel

    def python_stub(*_: Any) -> tuple[int]:
        return (0,)

    launchers: dict[str, Callable[..., Any]] = {
        "cuda-bindings": bindings_launch,
        "cupy": cupy_launch,
    }

    # Correctness: 3 launches by each binding, y += 0.5 x each time.
    for launch in launchers.values():
        ok(cu.cuMemcpyHtoD(dx, x.ctypes.data, x.nbytes))
        ok(cu.cuMemcpyHtoD(dy, y.ctypes.data, y.nbytes))
        for _ in range(3):
            returned = launch(*head, streams[0], address, 0)
            if returned is not None and returned[0]:
                raise RuntimeError(f"launch failed: {returned[0]}")
        ok(cu.cuCtxSynchronize())
        got = np.empty_like(y)
        ok(cu.cuMemcpyDtoH(got.ctypes.data, dy, y.nbytes))
        want = y.astype(np.float64) + 1.5 * x.astype(np.float64)
        if not np.allclose(got, want, rtol=1e-6, atol=1e-6):
            raise SystemExit("a launch computed the wrong result")

    def per_launch_us(launch: Callable[..., Any]) -> float:
        spent = 0.0
        for _ in range(PER_ROUND // BLOCK):
            start = time.perf_counter()
            for i in range(BLOCK):
                launch(*head, streams[i % STREAMS], address, 0)
            spent += time.perf_counter() - start
            ok(cu.cuCtxSynchronize())
        return spent / PER_ROUND * 1e6

    timed = {**launchers, "python call": python_stub}
    rounds: dict[str, list[float]] = {label: [] for label in timed}
    for launch in timed.values():
        per_launch_us(launch)  # warm-up
    order = list(timed)
    for index in range(ROUNDS):
        for label in order[index % len(order) :] + order[: index % len(order)]:
            rounds[label].append(per_launch_us(timed[label]))
    medians = {label: statistics.median(values) for label, values in rounds.items()}
    saved = medians["cuda-bindings"] - medians["cupy"]
    for label, values in rounds.items():
        line = " ".join(f"{v:.2f}" for v in values)
        print(f"{label:14s} {medians[label]:6.3f} us a launch   rounds {line}")
    print(f"cupy saves     {saved:6.3f} us a launch ({saved / medians['cuda-bindings']:.1%})")
    summary = {
        "benchmark": "launch_call",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": {"name": name, "compute_capability": [major, minor]},
        "driver_version": driver_version,
        "python": sys.version.split()[0],
        "seed": SEED,
        "launches_per_round": PER_ROUND,
        "rounds": ROUNDS,
        "medians_us": medians,
        "round_means_us": rounds,
        "cupy_saves_us": saved,
        "cupy_over_bindings": medians["cupy"] / medians["cuda-bindings"],
    }
    with open(args.out, "w") as out:
        json.dump(summary, out, indent=1)
    for pointer in (dx, dy):
        ok(cu.cuMemFree(pointer))
    for stream in streams:
        ok(cu.cuStreamDestroy(stream))
    ok(cu.cuModuleUnload(module))
    ok(cu.cuDevicePrimaryCtxRelease(device))


if __name__ == "__main__":
    main()
