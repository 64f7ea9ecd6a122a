"""Median time between consecutive stamps of resident traversals, on the GPU.

Usage: ``PYTHONPATH=<stamped tree> python bench/stamps/gpu_stamps.py SCALE TAG``

Runs ``session.reach_count`` on an R-MAT graph of ``SCALE`` (edge factor 16, seed 1)
from 24 sources with outgoing edges: 192 warm traversals, then 480 stamped ones. Prints
the median host overhead per traversal (wall minus device time), the device time and
levels, then the median microseconds between each pair of consecutive stamps.
"""

from __future__ import annotations

import itertools
import logging
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
import numpy as np
import stamps
import structlog

import vyre_async as va
from vyre_async.graphs import rmat

structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


async def main(scale: int, tag: str) -> None:
    """Warm up, stamp, print."""
    graph = rmat(scale, 16, seed=1)
    rng = np.random.default_rng(2)
    candidates = np.flatnonzero(np.diff(graph.offsets) > 0)
    sources = [int(s) for s in rng.choice(candidates, 24, replace=False)]
    async with va.open_backend("cuda") as backend, va.resident_graph(backend, graph) as session:
        for s in sources * 8:
            await session.reach_count(s)
        deltas: dict[str, list[float]] = {}
        runs = []
        for s in sources * 20:
            stamps.L.clear()
            before = session.stats()
            stamps.S("T0 call")
            await session.reach_count(s)
            stamps.S("Z return")
            after = session.stats()
            device_us = (after.device_ns - before.device_ns) / 1e3
            marks = stamps.L
            wall_us = (marks[-1][1] - marks[0][1]) * 1e6
            runs.append((wall_us - device_us, device_us, after.levels - before.levels))
            for (a, ta), (b, tb) in itertools.pairwise(marks):
                deltas.setdefault(f"{a} -> {b}", []).append((tb - ta) * 1e6)
    overhead = statistics.median(r[0] for r in runs)
    device = statistics.median(r[1] for r in runs)
    levels = statistics.median(r[2] for r in runs)
    print(
        f"== {tag} scale {scale}: overhead/traversal {overhead:.1f} us, "
        f"device {device:.1f} us, levels {levels}"
    )
    for key, values in deltas.items():
        print(f"   {key:42s} {statistics.median(values):8.2f}  n={len(values)}")


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]), sys.argv[2])
