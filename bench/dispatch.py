"""Dispatch overhead on one GPU, every variant in one run (issue: CUDA backend).

(a) raw cuda-python: cuLaunchKernel + cuEventRecord + spin on cuEventQuery
(b) CuPy RawKernel: H2D of the 4 KiB inputs, launch, D2H, stream synchronize
(c) ``await backend.dispatch`` with 4 KiB host inputs (same transfers as b)
(d) ``await backend.dispatch`` with resident inputs (no transfers, as a)
(e) throughput of many concurrent ``submit``/``await`` from one event loop
(f) process CPU use while awaiting one ~200 ms kernel

Every variant launches the same axpy kernel over 1024 float32 (4 KiB per buffer).
Latencies are per-iteration host wall times after a synchronize-equivalent wait,
after warm-up; medians are reported. Usage:
``python bench/dispatch.py --out bench/results/dispatch-<date>.json``
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio
import msgspec
import numpy as np

import vyre_async as va
from vyre_async.kernels import axpy, compile_kernel
from vyre_async.testing import spin_kernel

N = 1024
WARMUP = 300
ITERS = 3000


def median_us(samples: list[int]) -> float:
    """Median of nanosecond samples, in microseconds."""
    return statistics.median(samples) / 1e3


def time_loop(body: Callable[[], None], iters: int = ITERS) -> list[int]:
    """Per-iteration wall times of a synchronous body, after warm-up."""
    for _ in range(WARMUP):
        body()
    samples = []
    for _ in range(iters):
        start = time.perf_counter_ns()
        body()
        samples.append(time.perf_counter_ns() - start)
    return samples


async def atime_loop(body: Callable[[], Any], iters: int = ITERS) -> list[int]:
    """Per-iteration wall times of an async body, after warm-up."""
    for _ in range(WARMUP):
        await body()
    samples = []
    for _ in range(iters):
        start = time.perf_counter_ns()
        await body()
        samples.append(time.perf_counter_ns() - start)
    return samples


def raw_cuda_python(x: np.ndarray, y: np.ndarray, arch: str) -> list[int]:
    """(a) The floor: a pre-packed launch, an event record and a spin on the event."""
    from cuda.bindings import driver as cu

    def ok(result: tuple[Any, ...]) -> Any:
        if int(result[0]) != 0:
            raise RuntimeError(f"driver call failed: {result[0]}")
        return result[1] if len(result) == 2 else result[1:]

    ok(cu.cuInit(0))
    device = ok(cu.cuDeviceGet(0))
    context = ok(cu.cuDevicePrimaryCtxRetain(device))
    ok(cu.cuCtxSetCurrent(context))
    image = compile_kernel(axpy, arch).image
    module = ok(cu.cuModuleLoadData(image))
    function = ok(cu.cuModuleGetFunction(module, b"axpy"))
    stream = ok(cu.cuStreamCreate(int(cu.CUstream_flags.CU_STREAM_NON_BLOCKING)))
    event = ok(cu.cuEventCreate(int(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING)))
    dx = int(ok(cu.cuMemAlloc(x.nbytes)))
    dy = int(ok(cu.cuMemAlloc(y.nbytes)))
    ok(cu.cuMemcpyHtoD(dx, x.ctypes.data, x.nbytes))
    ok(cu.cuMemcpyHtoD(dy, y.ctypes.data, y.nbytes))
    slots = [ctypes.c_uint64(dx), ctypes.c_uint64(dy), ctypes.c_float(1.0), ctypes.c_int32(N)]
    params = (ctypes.c_void_p * 4)(*[ctypes.addressof(s) for s in slots])
    address = ctypes.addressof(params)
    shape = axpy.launch({"n": N})
    not_ready = int(cu.CUresult.CUDA_ERROR_NOT_READY)

    def body() -> None:
        ok(cu.cuLaunchKernel(function, *shape.grid, *shape.block, 0, stream, address, 0))
        ok(cu.cuEventRecord(event, stream))
        while int(cu.cuEventQuery(event)[0]) == not_ready:
            pass

    samples = time_loop(body)
    ok(cu.cuStreamSynchronize(stream))
    for ptr in (dx, dy):
        ok(cu.cuMemFree(ptr))
    ok(cu.cuEventDestroy(event))
    ok(cu.cuStreamDestroy(stream))
    ok(cu.cuModuleUnload(module))
    ok(cu.cuDevicePrimaryCtxRelease(device))
    return samples


def cupy_rawkernel(x: np.ndarray, y: np.ndarray) -> list[int] | None:
    """(b) CuPy: upload both inputs, launch, download y, synchronize."""
    try:
        import cupy as cp
    except ImportError:
        return None
    kernel = cp.RawKernel(axpy.source, "axpy", backend="nvrtc")
    stream = cp.cuda.Stream(non_blocking=True)
    shape = axpy.launch({"n": N})

    def body() -> None:
        with stream:
            dx = cp.asarray(x)
            dy = cp.asarray(y)
            kernel(shape.grid, shape.block, (dx, dy, np.float32(1.0), np.int32(N)))
            dy.get(stream=stream)
        stream.synchronize()

    return time_loop(body)


async def backend_variants(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """(c), (d), (e), (f) through vyre_async's CUDA backend."""
    results: dict[str, Any] = {}
    async with va.open_backend("cuda") as backend:
        info = backend.device_info  # type: ignore[attr-defined]
        results["device_info"] = {
            "name": info.name,
            "compute_capability": list(info.compute_capability),
            "total_memory": info.total_memory,
            "driver_version": info.driver_version,
        }
        results["c"] = await atime_loop(lambda: backend.dispatch(axpy, {"x": x, "y": y}, a=1.0))
        xb, yb = await backend.upload(x), await backend.upload(y)
        results["d"] = await atime_loop(lambda: backend.dispatch(axpy, {"x": xb, "y": yb}, a=1.0))
        await backend.free(xb)
        await backend.free(yb)

        # (e) many submits in flight, awaited in windows so pinned staging stays bounded.
        total, window = 40_000, 1024
        for _ in range(2):  # warm the pools
            await asyncio_window(backend, x, y, window)
        start = time.perf_counter_ns()
        for _ in range(total // window):
            await asyncio_window(backend, x, y, window)
        elapsed = time.perf_counter_ns() - start
        results["e_dispatches_per_s"] = (total // window) * window / (elapsed / 1e9)

        # (f) calibrate the spin kernel to ~200 ms with timing events, then measure CPU.
        probe = va.DispatchConfig(timing=True)
        small = np.ones(32, np.float32)
        cycles = 20_000_000
        timed = await backend.submit(spin_kernel, {"x": small}, cycles=cycles, config=probe).timed()
        assert timed.timing.device_ns
        cycles = int(cycles * 0.2e9 / timed.timing.device_ns)
        cpu_shares = []
        for _ in range(5):
            wall0, cpu0 = time.perf_counter(), time.process_time()
            await backend.dispatch(spin_kernel, {"x": small}, cycles=cycles)
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            cpu_shares.append(cpu / wall)
        results["f_cpu_share"] = statistics.median(cpu_shares)
        results["f_kernel_s"] = wall
        results["telemetry"] = msgspec.to_builtins(backend.telemetry())
    return results


async def asyncio_window(backend: va.Backend, x: np.ndarray, y: np.ndarray, window: int) -> None:
    """Submit ``window`` dispatches back to back, then await them all."""
    pendings = [backend.submit(axpy, {"x": x, "y": y}, a=1.0) for _ in range(window)]
    for pending in pendings:
        await pending


def nvidia_smi() -> str:
    """The driver's own description of the GPU, for the record."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError as exc:
        return f"nvidia-smi unavailable: {exc}"
    return done.stdout.strip()


def main() -> None:
    """Run every variant and write the JSON summary."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, help="path of the JSON summary")
    args = parser.parse_args()
    rng = np.random.default_rng(12345)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)

    got = anyio.run(backend_variants, x, y)
    arch = "sm_{}{}".format(*got["device_info"]["compute_capability"])
    a = raw_cuda_python(x, y, arch)
    b = cupy_rawkernel(x, y)
    medians = {
        "a_raw_cuda_python_us": median_us(a),
        "b_cupy_rawkernel_us": median_us(b) if b else None,
        "c_dispatch_host_4k_us": median_us(got["c"]),
        "d_dispatch_resident_us": median_us(got["d"]),
    }
    ratios = {
        "d_over_a": medians["d_dispatch_resident_us"] / medians["a_raw_cuda_python_us"],
        "c_over_b": (medians["c_dispatch_host_4k_us"] / medians["b_cupy_rawkernel_us"])
        if b
        else None,
    }
    targets = {
        "d_over_a <= 1.3": ratios["d_over_a"] <= 1.3,
        "c_over_b <= 1.0": ratios["c_over_b"] is not None and ratios["c_over_b"] <= 1.0,
        "e >= 100000/s": got["e_dispatches_per_s"] >= 100_000,
        "f < 10% of a core": got["f_cpu_share"] < 0.10,
    }
    summary = {
        "benchmark": "dispatch",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": got["device_info"],
        "nvidia_smi": nvidia_smi(),
        "python": sys.version.split()[0],
        "n_elements": N,
        "warmup": WARMUP,
        "iterations": ITERS,
        "medians": medians,
        "e_dispatches_per_s": got["e_dispatches_per_s"],
        "f_cpu_share_of_one_core": got["f_cpu_share"],
        "f_kernel_wall_s": got["f_kernel_s"],
        "ratios": ratios,
        "telemetry": got["telemetry"],
        "targets_met": targets,
    }
    with open(args.out, "w") as fh:
        json.dump(summary, fh, indent=2)
    rows = [
        ("(a) raw cuda-python launch+record+spin", f"{medians['a_raw_cuda_python_us']:.1f} us"),
        (
            "(b) CuPy RawKernel + H2D/D2H + sync",
            f"{medians['b_cupy_rawkernel_us']:.1f} us" if b else "n/a",
        ),
        ("(c) await dispatch, 4 KiB host inputs", f"{medians['c_dispatch_host_4k_us']:.1f} us"),
        ("(d) await dispatch, resident inputs", f"{medians['d_dispatch_resident_us']:.1f} us"),
        ("(e) concurrent submit/await", f"{got['e_dispatches_per_s']:,.0f} dispatches/s"),
        ("(f) CPU while awaiting a 200 ms kernel", f"{100 * got['f_cpu_share']:.1f}% of one core"),
        ("(d)/(a)", f"{ratios['d_over_a']:.2f}x"),
        ("(c)/(b)", f"{ratios['c_over_b']:.2f}x" if b else "n/a"),
    ]
    print(json.dumps(targets, indent=2))
    for name, value in rows:
        print(f"{name:<44} {value}")


if __name__ == "__main__":
    main()
