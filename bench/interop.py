"""What borrowing device arrays saves, on one GPU, in one process.

(i)  ``await backend.dispatch(axpy, ...)`` over 64 MiB float32 inputs given as CuPy
     arrays (used in place) against the same data as NumPy arrays (staged through
     page-locked memory and copied both ways): the host copies borrowing saves.
(ii) BFS levels of an R-MAT scale-22 graph returned into a CuPy array on the device
     (``session.bfs(s, out=cupy_array)``: device to device) against into a host array
     (``session.bfs(s)``).

Both pairs alternate for ``ROUNDS`` rounds after a warm-up; medians are reported.
Results are checked against each other (and axpy against float64) before timing.

Usage: ``python bench/interop.py --out bench/results/interop-<gpu>.json [--scale 22]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from typing import Any

import anyio
import numpy as np

import vyre_async as va
from vyre_async.graphs import rmat
from vyre_async.kernels import axpy

ROUNDS = 7
N = (64 << 20) // 4  # 64 MiB of float32 per buffer


async def run(scale: int) -> dict[str, Any]:
    """Time both pairs on one backend."""
    import cupy as cp

    rng = np.random.default_rng(7)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    out: dict[str, Any] = {}
    async with va.open_backend("cuda") as backend:
        info = backend.device_info  # type: ignore[attr-defined]
        out["device"] = {"name": info.name, "driver_version": info.driver_version}
        dx, dy = cp.asarray(x), cp.asarray(y)
        cp.cuda.get_current_stream().synchronize()
        host = await backend.dispatch(axpy, {"x": x, "y": y}, a=2.0)
        await backend.dispatch(axpy, {"x": dx, "y": dy}, a=2.0)
        want = 2.0 * x.astype(np.float64) + y
        err = np.linalg.norm(cp.asnumpy(dy) - want) / np.linalg.norm(want)
        if not err < 1e-6 or not np.array_equal(cp.asnumpy(dy), host["y"]):
            raise SystemExit(f"(i) results differ (relative error {err:.3g})")
        numpy_s, cupy_s = [], []
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            await backend.dispatch(axpy, {"x": x, "y": y}, a=2.0)
            numpy_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await backend.dispatch(axpy, {"x": dx, "y": dy}, a=2.0)
            cupy_s.append(time.perf_counter() - t0)
        out["dispatch_64MiB"] = {
            "numpy_inputs_ms": 1e3 * statistics.median(numpy_s),
            "cupy_inputs_ms": 1e3 * statistics.median(cupy_s),
            "numpy_rounds_ms": [round(1e3 * t, 3) for t in numpy_s],
            "cupy_rounds_ms": [round(1e3 * t, 3) for t in cupy_s],
        }
        del dx, dy

        graph = rmat(scale, 16, seed=1)
        hubs = np.argsort(graph.out_degree())[::-1][: ROUNDS + 1].tolist()
        async with va.resident_graph(backend, graph) as session:
            levels = cp.empty(graph.num_vertices, cp.int32)
            first = await session.bfs(hubs[0])
            await session.bfs(hubs[0], out=levels)
            if not np.array_equal(cp.asnumpy(levels), first):
                raise SystemExit("(ii) device levels differ from host levels")
            host_s, device_s = [], []
            for source in hubs[1:]:
                t0 = time.perf_counter()
                await session.bfs(source)
                host_s.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                await session.bfs(source, out=levels)
                device_s.append(time.perf_counter() - t0)
        out["bfs_levels"] = {
            "scale": scale,
            "vertices": graph.num_vertices,
            "edges": graph.num_edges,
            "to_host_ms": 1e3 * statistics.median(host_s),
            "to_cupy_ms": 1e3 * statistics.median(device_s),
            "to_host_rounds_ms": [round(1e3 * t, 3) for t in host_s],
            "to_cupy_rounds_ms": [round(1e3 * t, 3) for t in device_s],
        }
    return out


def main() -> None:
    """Run both pairs and write the JSON summary."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--scale", type=int, default=22)
    args = parser.parse_args()
    got = anyio.run(run, args.scale)
    d, b = got["dispatch_64MiB"], got["bfs_levels"]
    summary = {
        "benchmark": "interop",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "rounds": ROUNDS,
        **got,
        "ratios": {
            "numpy_over_cupy_dispatch": d["numpy_inputs_ms"] / d["cupy_inputs_ms"],
            "host_over_device_bfs": b["to_host_ms"] / b["to_cupy_ms"],
        },
    }
    with open(args.out, "w") as fh:
        json.dump(summary, fh, indent=2)
    print(
        f"(i)  dispatch, 64 MiB inputs: NumPy {d['numpy_inputs_ms']:.2f} ms, "
        f"CuPy {d['cupy_inputs_ms']:.2f} ms ({summary['ratios']['numpy_over_cupy_dispatch']:.1f}x)"
    )
    print(
        f"(ii) BFS levels, scale {b['scale']}: to host {b['to_host_ms']:.2f} ms, "
        f"to CuPy {b['to_cupy_ms']:.2f} ms ({summary['ratios']['host_over_device_bfs']:.2f}x)"
    )


if __name__ == "__main__":
    main()
