"""The awaited dispatch against the raw launch and CuPy, every variant in one process.

Each variant runs the same ``axpy`` kernel over 1024 float32 (4 KiB a buffer),
inputs drawn from a seeded generator (never zeros):

(a)  raw cuda-python: pre-packed ``cuLaunchKernel`` + ``cuEventRecord`` + spin on
     ``cuEventQuery`` (no event loop: the floor)
(b)  CuPy with host copies: ``cp.asarray`` of both inputs, launch, ``.get()``, sync
(b2) CuPy on resident arrays: launch + ``stream.record()`` + ``while not ev.done:
     await anyio.sleep(0)`` (the five lines a user writes)
(b3) CuPy on resident arrays: launch + ``await anyio.to_thread.run_sync(ev.synchronize)``
(c)  ``await backend.dispatch`` with 4 KiB host inputs (same transfers as b)
(d)  ``await backend.dispatch`` with resident inputs
(d2) ``await prepared(...)`` (``backend.prepare`` on resident inputs)
(e)  64 tasks, each awaiting 300 resident dispatches on its own buffers: dispatches/s
(e2) the same 64-task structure with the CuPy poll loop of (b2), each task its stream
(f)  process CPU time while awaiting one ~200 ms kernel, ours and (f2) the poll loop's

Latencies are per-iteration wall times (``perf_counter_ns``) after warm-up, whose
end is the host seeing the work finished; medians are reported. Every result is
checked against the float64 model before timing. Targets (ratios within this run):
(d) <= 1.0x (b2) and <= 2.0x (a); (d2) <= 1.5x (a); (c) <= 1.0x (b); (e) >= 1.5x (e2)
and >= 60,000/s; (f) < 10% of a core.

Usage: ``python bench/dispatch.py --out bench/results/dispatch-<gpu>.json
[--profile]`` (``--profile`` prints a cProfile of (d) and of one round of (e)).
"""

from __future__ import annotations

import argparse
import cProfile
import ctypes
import datetime
import io
import json
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec
import numpy as np

import vyre_async as va
from vyre_async.kernels import axpy, compile_kernel
from vyre_async.testing import spin_kernel

N = 1024
WARMUP = 300
ITERS = 2000
TASKS = 64
PER_TASK = 300
RATE_ROUNDS = 3


def median_us(samples: list[int]) -> float:
    """Median of nanosecond samples, in microseconds."""
    return statistics.median(samples) / 1e3


def model(a: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """float64 ``a * x + y``."""
    return a * x.astype(np.float64) + y.astype(np.float64)


def check(name: str, got: np.ndarray, want: np.ndarray) -> None:
    """Refuse to time a variant whose result is wrong."""
    err = float(np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want))
    if not err < 1e-6:
        raise SystemExit(f"{name}: wrong result (relative error {err:.3g})")


def time_sync(body: Callable[[], None]) -> list[int]:
    """Per-iteration wall times of a synchronous body, after warm-up."""
    for _ in range(WARMUP):
        body()
    samples = []
    for _ in range(ITERS):
        start = time.perf_counter_ns()
        body()
        samples.append(time.perf_counter_ns() - start)
    return samples


async def time_async(body: Callable[[], Awaitable[Any]]) -> list[int]:
    """Per-iteration wall times of an async body, after warm-up."""
    for _ in range(WARMUP):
        await body()
    samples = []
    for _ in range(ITERS):
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
    module = ok(cu.cuModuleLoadData(compile_kernel(axpy, arch).image))
    function = ok(cu.cuModuleGetFunction(module, b"axpy"))
    stream = ok(cu.cuStreamCreate(int(cu.CUstream_flags.CU_STREAM_NON_BLOCKING)))
    event = ok(cu.cuEventCreate(int(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING)))
    dx, dy = int(ok(cu.cuMemAlloc(x.nbytes))), int(ok(cu.cuMemAlloc(y.nbytes)))
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

    body()
    ok(cu.cuStreamSynchronize(stream))
    got = np.empty_like(y)
    ok(cu.cuMemcpyDtoH(got.ctypes.data, dy, y.nbytes))
    check("(a)", got, model(1.0, x, y))
    samples = time_sync(body)
    ok(cu.cuStreamSynchronize(stream))
    for ptr in (dx, dy):
        ok(cu.cuMemFree(ptr))
    ok(cu.cuEventDestroy(event))
    ok(cu.cuStreamDestroy(stream))
    ok(cu.cuModuleUnload(module))
    ok(cu.cuDevicePrimaryCtxRelease(device))
    return samples


class CupyPeer:
    """The CuPy variants (b), (b2), (b3), (e2), (f2)."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        import cupy as cp

        self.cp = cp
        self.kernel = cp.RawKernel(axpy.source, "axpy", backend="nvrtc")
        self.spin = cp.RawKernel(spin_kernel.source, spin_kernel.entry, backend="nvrtc")
        self.shape = axpy.launch({"n": N})
        self.x, self.y = x, y
        self.stream = cp.cuda.Stream(non_blocking=True)
        with self.stream:
            self.dx, self.dy = cp.asarray(x), cp.asarray(y)
        self.stream.synchronize()

    def launch(self, dx: Any, dy: Any) -> None:
        self.kernel(self.shape.grid, self.shape.block, (dx, dy, np.float32(1.0), np.int32(N)))

    def host_copies(self) -> list[int]:
        """(b) Upload both inputs, launch, download y, synchronize."""
        cp, stream = self.cp, self.stream

        def body() -> None:
            with stream:
                dx, dy = cp.asarray(self.x), cp.asarray(self.y)
                self.launch(dx, dy)
                self.out = dy.get(stream=stream)
            stream.synchronize()

        body()
        check("(b)", self.out, model(1.0, self.x, self.y))
        return time_sync(body)

    async def poll_loop(self) -> list[int]:
        """(b2) Launch on resident arrays, record, poll the event between checkpoints."""
        stream = self.stream

        async def body() -> None:
            with stream:
                self.launch(self.dx, self.dy)
                event = stream.record()
            while not event.done:  # noqa: ASYNC110 - the peer's loop, as a user writes it
                await anyio.sleep(0)  # noqa: ASYNC115 - as the user writes it

        with self.stream:
            self.dy[...] = self.cp.asarray(self.y)
        await body()
        check("(b2)", self.dy.get(), model(1.0, self.x, self.y))
        return await time_async(body)

    async def to_thread(self) -> list[int]:
        """(b3) Launch on resident arrays, then synchronize the event in a thread."""
        stream = self.stream

        async def body() -> None:
            with stream:
                self.launch(self.dx, self.dy)
                event = stream.record()
            await anyio.to_thread.run_sync(event.synchronize)

        return await time_async(body)

    async def rate(self) -> float:
        """(e2) 64 tasks, each its stream and buffers, each awaiting PER_TASK launches."""
        cp = self.cp
        lanes = []
        for _ in range(TASKS):
            stream = cp.cuda.Stream(non_blocking=True)
            with stream:
                lanes.append((stream, cp.asarray(self.x), cp.asarray(self.y)))
            stream.synchronize()

        async def task(stream: Any, dx: Any, dy: Any) -> None:
            for _ in range(PER_TASK):
                with stream:
                    self.launch(dx, dy)
                    event = stream.record()
                while not event.done:  # noqa: ASYNC110 - the peer's loop, as a user writes it
                    await anyio.sleep(0)  # noqa: ASYNC115 - as the user writes it

        return await many_tasks(lambda i: task(*lanes[i]))

    async def cpu_share(self, cycles: int) -> float:
        """(f2) CPU share of one core while the poll loop awaits a ~200 ms kernel."""
        small = self.cp.asarray(np.ones(32, np.float32))
        out = self.cp.empty_like(small)
        shape = spin_kernel.launch({"n": 32})

        async def once() -> float:
            wall0, cpu0 = time.perf_counter(), time.process_time()
            with self.stream:
                self.spin(shape.grid, shape.block, (small, out, np.int64(cycles), np.int32(32)))
                event = self.stream.record()
            while not event.done:  # noqa: ASYNC110 - the peer's loop, as a user writes it
                await anyio.sleep(0)  # noqa: ASYNC115 - as the user writes it
            return (time.process_time() - cpu0) / (time.perf_counter() - wall0)

        return statistics.median([await once() for _ in range(5)])


async def many_tasks(task: Callable[[int], Awaitable[None]]) -> float:
    """Dispatches per second of TASKS tasks of PER_TASK awaited dispatches (median of rounds)."""
    rates = []
    for _ in range(RATE_ROUNDS + 1):  # the first round warms up
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for index in range(TASKS):
                tg.start_soon(task, index)
        rates.append(TASKS * PER_TASK / (time.perf_counter() - start))
    return statistics.median(rates[1:])


async def ours(x: np.ndarray, y: np.ndarray, profile: bool) -> dict[str, Any]:
    """(c), (d), (d2), (e), (f) through vyre_async's CUDA backend."""
    got: dict[str, Any] = {}
    async with va.open_backend("cuda") as backend:
        info = backend.device_info  # type: ignore[attr-defined]
        got["device"] = {
            "name": info.name,
            "compute_capability": list(info.compute_capability),
            "total_memory": info.total_memory,
            "driver_version": info.driver_version,
        }
        out = await backend.dispatch(axpy, {"x": x, "y": y}, a=1.0)
        check("(c)", out["y"], model(1.0, x, y))
        got["c"] = await time_async(lambda: backend.dispatch(axpy, {"x": x, "y": y}, a=1.0))

        xb, yb = await backend.upload(x), await backend.upload(y)
        await backend.dispatch(axpy, {"x": xb, "y": yb}, a=1.0)
        check("(d)", await backend.read(yb), model(1.0, x, y))
        got["d"] = await time_async(lambda: backend.dispatch(axpy, {"x": xb, "y": yb}, a=1.0))
        prepared = await backend.prepare(axpy, {"x": xb, "y": yb}, a=1.0)
        await backend.write(yb, y)
        await prepared()
        check("(d2)", await backend.read(yb), model(1.0, x, y))
        got["d2"] = await time_async(prepared)
        if profile:
            got["profile"] = await profile_d(backend, xb, yb)
        await backend.free(xb)
        await backend.free(yb)

        buffers = [(await backend.upload(x), await backend.upload(y)) for _ in range(TASKS)]

        async def task(index: int) -> None:
            xi, yi = buffers[index]
            for _ in range(PER_TASK):
                await backend.dispatch(axpy, {"x": xi, "y": yi}, a=1.0)

        got["e"] = await many_tasks(task)
        if profile:
            profiler = cProfile.Profile()
            profiler.enable()
            async with anyio.create_task_group() as tg:
                for index in range(TASKS):
                    tg.start_soon(task, index)
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(40)
            got["profile_e"] = text.getvalue()
        for xi, yi in buffers:
            await backend.free(xi)
            await backend.free(yi)

        # (f): calibrate the spin kernel to ~200 ms with timing events, then measure.
        small = np.ones(32, np.float32)
        probe = va.DispatchConfig(timing=True)
        cycles = 20_000_000
        timed = await backend.submit(spin_kernel, {"x": small}, cycles=cycles, config=probe).timed()
        cycles = int(cycles * 0.2e9 / (timed.timing.device_ns or 1))
        got["cycles"] = cycles
        shares = []
        for _ in range(5):
            wall0, cpu0 = time.perf_counter(), time.process_time()
            await backend.dispatch(spin_kernel, {"x": small}, cycles=cycles)
            shares.append((time.process_time() - cpu0) / (time.perf_counter() - wall0))
        got["f"] = statistics.median(shares)
        got["f_kernel_s"] = time.perf_counter() - wall0
        got["telemetry"] = msgspec.to_builtins(backend.telemetry())
        got["watcher"] = {
            "fences": backend._watcher.fences,  # type: ignore[attr-defined]
            "queries": backend._watcher.queries,  # type: ignore[attr-defined]
        }
    return got


async def profile_d(backend: Any, xb: Any, yb: Any) -> str:
    """cProfile of 3000 resident dispatches: where (d)'s host time goes."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(3000):
        await backend.dispatch(axpy, {"x": xb, "y": yb}, a=1.0)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
    return text.getvalue()


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
    """Run every variant in one process and write the JSON summary."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, help="path of the JSON summary")
    parser.add_argument("--profile", action="store_true", help="add a cProfile of (d)")
    args = parser.parse_args()
    seed = 12345
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)

    got = anyio.run(ours, x, y, args.profile)
    arch = "sm_{}{}".format(*got["device"]["compute_capability"])
    a = raw_cuda_python(x, y, arch)
    peer = CupyPeer(x, y)
    b = peer.host_copies()
    b2 = anyio.run(peer.poll_loop)
    b3 = anyio.run(peer.to_thread)
    e2 = anyio.run(peer.rate)
    f2 = anyio.run(peer.cpu_share, got["cycles"])
    medians = {
        "a_raw_cuda_python_us": median_us(a),
        "b_cupy_host_copies_us": median_us(b),
        "b2_cupy_poll_loop_us": median_us(b2),
        "b3_cupy_to_thread_us": median_us(b3),
        "c_dispatch_host_4k_us": median_us(got["c"]),
        "d_dispatch_resident_us": median_us(got["d"]),
        "d2_prepared_us": median_us(got["d2"]),
    }
    rates = {"e_dispatches_per_s": got["e"], "e2_cupy_poll_loop_per_s": e2}
    cpu = {"f_cpu_share": got["f"], "f2_cupy_poll_loop_cpu_share": f2}
    ratios = {
        "d_over_b2": medians["d_dispatch_resident_us"] / medians["b2_cupy_poll_loop_us"],
        "d_over_a": medians["d_dispatch_resident_us"] / medians["a_raw_cuda_python_us"],
        "d2_over_a": medians["d2_prepared_us"] / medians["a_raw_cuda_python_us"],
        "c_over_b": medians["c_dispatch_host_4k_us"] / medians["b_cupy_host_copies_us"],
        "e_over_e2": got["e"] / e2,
    }
    targets = {
        "(d) <= 1.0x (b2)": ratios["d_over_b2"] <= 1.0,
        "(d) <= 2.0x (a)": ratios["d_over_a"] <= 2.0,
        "(d2) <= 1.5x (a)": ratios["d2_over_a"] <= 1.5,
        "(c) <= 1.0x (b)": ratios["c_over_b"] <= 1.0,
        "(e) >= 1.5x (e2)": ratios["e_over_e2"] >= 1.5,
        "(e) >= 60,000/s": got["e"] >= 60_000,
        "(f) < 10% of a core": got["f"] < 0.10,
    }
    summary = {
        "benchmark": "dispatch",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": got["device"],
        "nvidia_smi": nvidia_smi(),
        "python": sys.version.split()[0],
        "event_loop": "asyncio",
        "seed": seed,
        "n_elements": N,
        "warmup": WARMUP,
        "iterations": ITERS,
        "tasks": TASKS,
        "dispatches_per_task": PER_TASK,
        "medians": medians,
        "rates": rates,
        "cpu_share_of_one_core": cpu,
        "f_kernel_wall_s": got["f_kernel_s"],
        "ratios": ratios,
        "targets_met": targets,
        "watcher": got["watcher"],
        "telemetry": got["telemetry"],
    }
    with open(args.out, "w") as fh:
        json.dump(summary, fh, indent=2)
    for key in ("profile", "profile_e"):
        if key in got:
            print(f"cProfile of {'(d)' if key == 'profile' else '(e), one round'}:")
            print(got[key])
    rows = [
        ("(a) raw cuda-python launch+record+spin", f"{medians['a_raw_cuda_python_us']:.1f} us"),
        ("(b) CuPy + host copies + sync", f"{medians['b_cupy_host_copies_us']:.1f} us"),
        ("(b2) CuPy poll loop", f"{medians['b2_cupy_poll_loop_us']:.1f} us"),
        ("(b3) CuPy + to_thread synchronize", f"{medians['b3_cupy_to_thread_us']:.1f} us"),
        ("(c) await dispatch, 4 KiB host inputs", f"{medians['c_dispatch_host_4k_us']:.1f} us"),
        ("(d) await dispatch, resident", f"{medians['d_dispatch_resident_us']:.1f} us"),
        ("(d2) await prepared()", f"{medians['d2_prepared_us']:.1f} us"),
        ("(e) 64 tasks x 300 resident dispatches", f"{got['e']:,.0f} /s"),
        ("(e2) the same with the CuPy poll loop", f"{e2:,.0f} /s"),
        ("(f) CPU awaiting a 200 ms kernel", f"{100 * got['f']:.1f}% of a core"),
        ("(f2) the same, CuPy poll loop", f"{100 * f2:.1f}% of a core"),
    ]
    for name, value in rows:
        print(f"{name:<44} {value}")
    for name, value in ratios.items():
        print(f"{name:<44} {value:.2f}x")
    for name, met in targets.items():
        print(f"{name:<44} {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
