"""Profile the dispatch hot path on a GPU: where do the microseconds of (d) and (e) go?

Usage: ``python bench/profile_dispatch.py`` (prints cProfile's top entries).
"""

from __future__ import annotations

import cProfile
import pstats
import time

import anyio
import numpy as np

import vyre_async as va
from vyre_async.kernels import axpy

N = 1024


async def main() -> None:
    """Run (d) and (e) loops under cProfile."""
    x = np.ones(N, np.float32)
    async with va.open_backend("cuda") as backend:
        xb, yb = await backend.upload(x), await backend.upload(x)
        for _ in range(500):
            await backend.dispatch(axpy, {"x": xb, "y": yb}, a=1.0)
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        for _ in range(3000):
            await backend.dispatch(axpy, {"x": xb, "y": yb}, a=1.0)
        profile.disable()
        per_dispatch_us = (time.perf_counter() - start) / 3000 * 1e6
        print(f"(d) resident: {per_dispatch_us:.1f} us/dispatch under cProfile")
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(10):
            pendings = [backend.submit(axpy, {"x": x, "y": x}, a=1.0) for _ in range(1024)]
            for pending in pendings:
                await pending
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
        await backend.free(xb)
        await backend.free(yb)


anyio.run(main)
