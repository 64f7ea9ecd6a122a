"""Reading a resident buffer into a fresh host array: our path against the driver's.

``backend.read`` of a large buffer copies 2 MiB pieces into page-locked staging and
out in worker threads; the driver's own pageable copy (``cuMemcpyDtoHAsync`` into
``np.empty`` then a stream synchronize, in a worker thread) stages internally. Run
27 timed both at 16 and 64 MiB (driver faster, then slower); this sweeps sizes, each
side on the same fresh-array allocation, alternating, medians of 12 after 2.

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

            def driver_copy(n: int = n, pointer: int = pointer) -> np.ndarray:
                device.make_current()
                target = np.empty(n, np.int32)
                device.call(driver.cuMemcpyDtoHAsync, target.ctypes.data, pointer, n * 4, stream)
                device.call(driver.cuStreamSynchronize, stream)
                return target

            ours, theirs = [], []
            for _ in range(ROUNDS):
                t0 = time.perf_counter()
                a = await backend.read(buffer)
                ours.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                b = await anyio.to_thread.run_sync(driver_copy)
                theirs.append(time.perf_counter() - t0)
                assert np.array_equal(a, data)
                assert np.array_equal(b, data)
            await backend.free(buffer)
            out[f"{mib}_mib"] = {
                "backend_read_ms": statistics.median(ours[2:]) * 1e3,
                "driver_pageable_copy_ms": statistics.median(theirs[2:]) * 1e3,
            }
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
