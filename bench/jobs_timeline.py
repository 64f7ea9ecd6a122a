"""Where a job's wall time goes: one run of ``bench/jobs.py``'s job, as a timeline.

Runs the 200,000 reach-count job of ``bench/jobs.py`` (after a warm-up run) through
``JobRunner`` and prints, in milliseconds from before ``load_job``:

- every call the runner and the backend make in a worker thread (``anyio.to_thread``),
  with its duration: job checks, device open, kernel loads, commits, close;
- every stretch of more than 2 ms the event loop spent waiting in ``select`` (idle);
- when the first ``bfs_many`` call started and the last one ended (the run phase).

A diagnostic, not a benchmark: it patches anyio, the selector and the session class
for the one run it traces.

``--job FILE`` instead runs a job file as users run it (``python -m vyre_async.cli run``
in a child process) and prints its start-up timeline from the job's log: each
``startup`` stage (process start and imports, job checks, each device's context and
kernel modules, graph ready, each device's graph upload, first block launched and
done, first chunk committed) at its offset in seconds from the process's start, with
how long it took. ``bench/scale.py`` records the same timeline for each of its runs.

Usage: ``python bench/jobs_timeline.py [--backend cuda] [--items 200000]``, or
``python bench/jobs_timeline.py --job job.toml [--out DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
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


def startup_events(folder: Path) -> list[dict[str, Any]]:
    """The ``startup`` events of a job folder's ``log.jsonl``, in the order logged
    (none where the log is missing)."""
    try:
        lines = (folder / "log.jsonl").read_text().splitlines()
    except OSError:
        return []
    events = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "startup":
            events.append(event)
    return events


def startup_summary(events: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """``{"stage" or "stage@device": {"at_s": ..., "took_s": ...}}``, by time."""
    summary: dict[str, dict[str, float | None]] = {}
    for event in sorted(events, key=lambda e: e["at_s"]):
        key = event["stage"] + (f"@{event['device']}" if "device" in event else "")
        summary[key] = {"at_s": event["at_s"], "took_s": event.get("took_s")}
    return summary


def format_startup(events: list[dict[str, Any]]) -> str:
    """The timeline as lines: offset from the process's start, duration, stage, device."""
    lines = [f"{'at_s':>8} {'took_s':>8}  stage"]
    for event in sorted(events, key=lambda e: e["at_s"]):
        took = event.get("took_s")
        where = f" (device {event['device']})" if "device" in event else ""
        skip = {"event", "stage", "at_s", "took_s", "device", "level", "timestamp", "logger"}
        extra = {k: v for k, v in event.items() if k not in skip}
        lines.append(
            f"{event['at_s']:8.3f} {'' if took is None else f'{took:8.3f}':>8}  "
            f"{event['stage']}{where}{' ' + json.dumps(extra) if extra else ''}"
        )
    return "\n".join(lines)


def run_job_file(job: Path, out: Path) -> list[dict[str, Any]]:
    """Run ``job`` with the command line in a child process; its start-up events."""
    command = [sys.executable, "-m", "vyre_async.cli", "run", str(job), "--out", str(out)]
    subprocess.run(command, check=True, env=dict(os.environ))
    return startup_events(out)


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
    parser.add_argument("--job", type=Path, help="print this job file's start-up timeline")
    parser.add_argument("--out", type=Path, help="with --job: the output folder")
    args = parser.parse_args()
    if args.job is not None:
        with tempfile.TemporaryDirectory() as tmp:
            events = run_job_file(args.job, args.out or Path(tmp) / "out")
        print(format_startup(events))
        return
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
