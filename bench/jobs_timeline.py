"""Where a job's wall time goes: one run of ``bench/jobs.py``'s job, as a timeline.

Runs the 200,000 reach-count job of ``bench/jobs.py`` (after a warm-up run) through
``JobRunner`` and prints, in milliseconds from before ``load_job``:

- every call the runner and the backend make in a worker thread (``anyio.to_thread``),
  with its duration: job checks, device open, kernel loads, commits, close;
- every stretch of more than 2 ms the event loop spent waiting in ``select`` (idle);
- when the first ``bfs_many`` call started and the last one ended (the run phase).

A diagnostic, not a benchmark: it patches anyio, the selector and the session class
for the one run it traces.

Usage: ``python bench/jobs_timeline.py [--backend cuda] [--items 200000]``
"""

from __future__ import annotations

import argparse
import selectors
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).parent))

import jobs as bench_jobs

import vyre_async as va
from vyre_async.graphs import rmat
from vyre_async.sessions import ResidentGraphSession

_start = [0.0]
_threads: list[tuple[float, float, str]] = []
_idle: list[tuple[float, float]] = []
_calls: list[tuple[float, float]] = []


def _trace() -> None:
    """Patch the three places the timeline is read from."""
    run_sync = anyio.to_thread.run_sync
    select = selectors.EpollSelector.select
    bfs_many = ResidentGraphSession.bfs_many

    async def traced_run_sync(func: Any, *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return await run_sync(func, *args, **kwargs)
        finally:
            name = getattr(func, "__qualname__", repr(func))
            _threads.append((began - _start[0], time.perf_counter() - began, name))

    def traced_select(self: Any, timeout: float | None = None) -> Any:
        began = time.perf_counter()
        ready = select(self, timeout)
        if time.perf_counter() - began > 0.002:
            _idle.append((began - _start[0], time.perf_counter() - began))
        return ready

    async def traced_bfs_many(self: Any, *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return await bfs_many(self, *args, **kwargs)
        finally:
            _calls.append((began - _start[0], time.perf_counter() - _start[0]))

    anyio.to_thread.run_sync = traced_run_sync  # type: ignore[assignment]
    selectors.EpollSelector.select = traced_select  # type: ignore[method-assign]
    ResidentGraphSession.bfs_many = traced_bfs_many  # type: ignore[method-assign]


def main() -> None:
    """Run the job twice, print the second run's timeline."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="cuda", choices=["cpu", "cuda"])
    parser.add_argument("--items", type=int, default=200_000)
    args = parser.parse_args()
    va.configure_logging(level="warning")
    _trace()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _, _, job = bench_jobs.reach_job(
            folder, rmat(10, 8, seed=1), args.items, args.backend, "timeline"
        )
        anyio.run(bench_jobs.through_runner, job, folder / "warm-up")
        _threads.clear()
        _idle.clear()
        _calls.clear()
        _start[0] = time.perf_counter()
        seconds = anyio.run(bench_jobs.through_runner, job, folder / "traced")
    print(f"runner (after load_job): {seconds * 1000:.1f} ms")
    for began, lasted, name in sorted(_threads):
        print(f"thread {began * 1000:8.1f} +{lasted * 1000:6.1f}  {name}")
    for began, lasted in _idle:
        print(f"idle   {began * 1000:8.1f} +{lasted * 1000:6.1f}")
    first = min(b for b, _ in _calls)
    last = max(e for _, e in _calls)
    print(
        f"bfs_many: {len(_calls)} calls, first started {first * 1000:.1f} ms, "
        f"last ended {last * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
