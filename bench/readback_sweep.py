"""Reading a resident buffer into a fresh host array: our path against the driver's.

``backend.read`` of a large buffer copies 2 MiB pieces into page-locked staging and
out in worker threads; the driver's own pageable copy (``cuMemcpyDtoHAsync`` into
``np.empty`` then a stream synchronize, in a worker thread) stages internally. Run
27 timed both at 16 and 64 MiB (driver faster, then slower); this sweeps sizes,
medians of 12 after 2. Also the driver's copy into an array allocated on the loop
thread (``driver_copy_loop_alloc_ms``) and CuPy's ``get()`` where CuPy is installed.

Usage: ``python bench/readback_sweep.py --out out.json``
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time
from typing import Any

import anyio
import numpy as np

try:
    import cupy as cp
except ImportError:  # the CuPy column is left out
    cp = None

import vyre_async as va

SIZES_MIB = (1, 2, 4, 8, 16, 32, 64)
ROUNDS = 14


async def sweep() -> dict[str, Any]:
    """Median milliseconds per size for both paths."""
    out: dict[str, Any] = {}
    async with va.open_backend("cuda") as backend:
        info = backend.device_info
        out["device"] = {"name": info.name, "driver_version": info.driver_version}
        out["date"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        device = backend._cuda()
        driver = device.driver
        stream = backend._streams[0]
        for mib in SIZES_MIB:
            n = mib << 18  # int32 elements
            data = np.arange(n, dtype=np.int32)
            buffer = await backend.upload(data)
            pointer = backend._registry.storage(buffer).ptr

            def driver_copy(
                target: np.ndarray | None = None, n: int = n, pointer: int = pointer
            ) -> np.ndarray:
                device.make_current()
                if target is None:
                    target = np.empty(n, np.int32)
                device.call(driver.cuMemcpyDtoHAsync, target.ctypes.data, pointer, n * 4, stream)
                device.call(driver.cuStreamSynchronize, stream)
                return target

            async def loop_alloc_copy(n: int = n) -> np.ndarray:
                target = np.empty(n, np.int32)
                return await anyio.to_thread.run_sync(driver_copy, target)

            async def backend_read(buffer: va.ResidentBuffer = buffer) -> np.ndarray:
                return await backend.read(buffer)

            async def worker_alloc_copy() -> np.ndarray:
                return await anyio.to_thread.run_sync(driver_copy)

            mirror = cp.asarray(data) if cp is not None else None
            times: dict[str, list[float]] = {
                "backend_read_ms": [],
                "driver_pageable_copy_ms": [],
                "driver_copy_loop_alloc_ms": [],
                "cupy_get_ms": [],
            }
            for _ in range(ROUNDS):
                # Each result is checked and dropped before the next, as a caller's
                # loop would: the allocator may then hand the same pages back.
                for name, read in (
                    ("backend_read_ms", backend_read),
                    ("driver_pageable_copy_ms", worker_alloc_copy),
                    ("driver_copy_loop_alloc_ms", loop_alloc_copy),
                ):
                    t0 = time.perf_counter()
                    got = await read()
                    times[name].append(time.perf_counter() - t0)
                    assert np.array_equal(got, data)
                    del got
                if mirror is not None:
                    t0 = time.perf_counter()
                    got = mirror.get()
                    times["cupy_get_ms"].append(time.perf_counter() - t0)
                    assert np.array_equal(got, data)
                    del got
            out[f"{mib}_mib"] = {
                name: statistics.median(t[2:]) * 1e3 for name, t in times.items() if t
            }
            await backend.free(buffer)
            print(mib, out[f"{mib}_mib"], flush=True)
    return out


def main() -> None:
    """Run and print."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = anyio.run(sweep)
    print(json.dumps(out, indent=2))
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
