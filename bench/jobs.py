"""The batch runner's overhead and memory (issue: batch jobs).

(a) Items/s of a job of trivial queries (reach counts on a small R-MAT graph) run
by ``JobRunner`` against calling ``session.bfs_many`` directly on the same sources,
each end to end from the same ``.npz`` graph file (load, open the backend, upload,
run; the runner also writes and commits its records), alternating, medians of
``--repeats``; the runner's counts are checked against the direct call's.
(b) Peak RSS of a 1,000,000-query job on the CPU backend, run by ``vyre-async run`` in
a child process (``ru_maxrss`` of the child).

Usage: ``python bench/jobs.py --backend cpu --out results.json``
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

import vyre_async as va
from vyre_async.graphs import rmat, save_npz
from vyre_async.jobs import JobRunner, load_job, read_records


def write_job(folder: Path, graph_file: Path, sources: Any, backend: str, name: str) -> Path:
    """A JSON job of reach counts over ``graph_file``."""
    job = {
        "job": {"name": name, "backend": backend},
        "graph": {"kind": "npz", "path": str(graph_file)},
        "workload": [{"kind": "reach", "sources": sources}],
        "batching": {"max_batch": 1024},
        "output": {"dir": "out"},
    }
    path = folder / f"{name}.json"
    path.write_text(json.dumps(job))
    return path


def reach_job(
    folder: Path, graph: Any, items: int, backend: str, name: str
) -> tuple[Path, list[int], Path]:
    """``graph`` saved in ``folder``, ``items`` random sources and a job of their reach
    counts: (graph file, sources, job file)."""
    graph_file = save_npz(graph, folder / "graph.npz")
    sources = np.random.default_rng(5).integers(0, graph.num_vertices, items).tolist()
    return graph_file, sources, write_job(folder, graph_file, sources, backend, name)


async def direct(graph_file: Path, sources: list[int], backend: str) -> tuple[float, float, Any]:
    """``bfs_many`` end to end: (total seconds, bfs_many seconds, counts)."""
    t0 = time.perf_counter()
    graph = await anyio.to_thread.run_sync(va.graphs.load_npz, graph_file)
    async with va.open_backend(backend) as b, va.resident_graph(b, graph) as session:  # type: ignore[arg-type]
        t1 = time.perf_counter()
        counts = await session.bfs_many(sources, readback="counts")
        t2 = time.perf_counter()
    return time.perf_counter() - t0, t2 - t1, counts


async def through_runner(job: Path, out: Path) -> float:
    """The job end to end through JobRunner; returns seconds."""
    spec = await anyio.to_thread.run_sync(load_job, job)
    t0 = time.perf_counter()
    summary = await JobRunner(spec, job_file=job, out=out).run()
    seconds = time.perf_counter() - t0
    if summary.status != "complete":
        raise SystemExit(f"runner did not complete: {summary.message}")
    return seconds


def overhead(folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """(a): runner vs direct bfs_many on the same items."""
    graph = rmat(args.scale, 8, seed=1)
    graph_file, sources, job = reach_job(folder, graph, args.items, args.backend, "overhead")
    anyio.run(direct, graph_file, sources[:2048], args.backend)  # warm: kernels, caches
    runner_s, direct_s, bare_s = [], [], []
    for i in range(args.repeats):
        out = folder / f"out-{i}"
        runner_s.append(anyio.run(through_runner, job, out))
        total, bare, counts = anyio.run(direct, graph_file, sources, args.backend)
        direct_s.append(total)
        bare_s.append(bare)
        got = {r.id: r.reached for r in read_records(out)}
        if [got[i] for i in range(len(sources))] != counts.tolist():
            raise SystemExit("the runner's counts differ from bfs_many's")
        print(f"repeat {i}: runner {runner_s[-1]:.3f} s, direct {total:.3f} s", flush=True)
    runner_rate = args.items / statistics.median(runner_s)
    direct_rate = args.items / statistics.median(direct_s)
    return {
        "graph": {"scale": args.scale, "vertices": graph.num_vertices, "edges": graph.num_edges},
        "items": args.items,
        "runner_s": runner_s,
        "direct_s": direct_s,
        "direct_bfs_many_only_s": bare_s,
        "runner_items_per_s_median": runner_rate,
        "direct_items_per_s_median": direct_rate,
        "direct_bfs_many_only_items_per_s_median": args.items / statistics.median(bare_s),
        "runner_over_direct": runner_rate / direct_rate,
    }


def peak_rss(folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """(b): a job of ``--rss-items`` random queries in a child process."""
    graph_file = save_npz(rmat(args.scale, 8, seed=2), folder / "rss-graph.npz")
    sources = {"random": args.rss_items, "seed": 1}
    job = write_job(folder, graph_file, sources, "cpu", "rss")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-m", "vyre_async.cli", "run", str(job), "--out", str(folder / "rss")],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - t0
    print(child.stdout, child.stderr[-2000:], flush=True)
    if child.returncode != 0:
        raise SystemExit(f"the 1M-query job exited {child.returncode}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    committed = sum(1 for _ in read_records(folder / "rss"))
    return {
        "items": args.rss_items,
        "committed": committed,
        "seconds": seconds,
        "items_per_s": args.rss_items / seconds,
        "peak_rss_bytes": peak_kib * 1024,
        "peak_rss_of_an_earlier_child_bytes": before * 1024,
    }


def main() -> None:
    """Run (a) and (b); write the JSON summary."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rss-items", type=int, default=1_000_000)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    va.configure_logging(level="warning")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        a = overhead(folder, args)
        print("overhead:", json.dumps(a), flush=True)
        b = peak_rss(folder, args) if args.rss_items else None
        print("peak rss:", json.dumps(b), flush=True)

    async def device() -> dict[str, Any]:
        async with va.open_backend(args.backend) as backend:  # type: ignore[arg-type]
            info = getattr(backend, "device_info", None)
            return {
                "backend": backend.kind,
                "name": backend.device_name,
                "driver_version": getattr(info, "driver_version", None),
            }

    summary = {
        "benchmark": "jobs",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": anyio.run(device),
        "host": {"machine": platform.machine(), "python": platform.python_version()},
        "overhead": a,
        "peak_rss": b,
        "targets_met": {
            "runner >= 0.8x bfs_many items/s": a["runner_over_direct"] >= 0.8,
        }
        | ({"1M-query job peak RSS < 1 GiB": b["peak_rss_bytes"] < 1 << 30} if b else {}),
    }
    Path(args.out).write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary["targets_met"]))


if __name__ == "__main__":
    main()
