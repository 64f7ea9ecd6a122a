"""Where a job of trivial queries spends its time: the runner against bfs_many, profiled.

Runs the same 200,000 reach-count items as ``bench/jobs.py`` once through
``JobRunner`` and once through ``session.bfs_many`` under cProfile, and prints the
functions with the most own time for each.

Usage: ``python bench/profile_jobs.py [--backend cuda] [--items 200000]``
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))

import jobs as bench_jobs

import vyre_async as va
from vyre_async.graphs import rmat


def main() -> None:
    """Profile both ways of running the items."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    va.configure_logging(level="warning")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        graph_file, sources, job = bench_jobs.reach_job(
            folder, rmat(10, 8, seed=1), args.items, args.backend, "profile"
        )
        anyio.run(bench_jobs.direct, graph_file, sources[:2048], args.backend)  # warm
        for name, call in (
            ("runner", lambda: anyio.run(bench_jobs.through_runner, job, folder / "out")),
            ("bfs_many", lambda: anyio.run(bench_jobs.direct, graph_file, sources, args.backend)),
        ):
            profile = cProfile.Profile()
            profile.runcall(call)
            print(f"===== {name} =====")
            pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
