"""The host cost of one resident traversal with the driver stubbed out, on any machine.

Usage: ``PYTHONPATH=<tree> python bench/stamps/host_path.py [--reps 40] [--runs 200]``

Runs ``session.reach_count`` on a scale-10 R-MAT graph through the CUDA backend with
stub_driver.py in place of the driver: no device, no driver time, only vyre_async's
own Python per traversal (plus the stub's few microseconds). Prints the minimum and
median over ``reps`` timings of ``runs`` traversals each, in process CPU time. For
A/B comparisons of two trees without a GPU, run them alternately: on a shared
machine the minimum is the steadier figure. It measures nothing about the device.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
import structlog
import stub_driver

import vyre_async as va
from vyre_async.graphs import rmat

structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


async def main(reps: int, runs: int, lag: int) -> None:
    """Warm up, then time ``reps`` blocks of ``runs`` traversals."""
    stub_driver.install(lag)
    graph = rmat(10, 8, seed=1)
    async with va.open_backend("cuda") as backend, va.resident_graph(backend, graph) as session:
        for s in range(300):
            await session.reach_count(s % 100)
        per_run = []
        for _ in range(reps):
            t0 = time.process_time()
            for s in range(runs):
                await session.reach_count(s % 100)
            per_run.append((time.process_time() - t0) / runs * 1e6)
    print(
        f"host path: min {min(per_run):.1f} us, median {statistics.median(per_run):.1f} us "
        f"per traversal ({reps} x {runs}, events done after {lag} queries)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--lag", type=int, default=2, help="queries before an event is done")
    args = parser.parse_args()
    anyio.run(main, args.reps, args.runs, args.lag)
