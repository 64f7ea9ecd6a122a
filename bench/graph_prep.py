"""Graph-ready time of an R-MAT graph: host, device, cache, and inside a job (issue: scale-out).

Every measurement runs in a child process of its own (``--only KIND``), so its peak RSS
is its own and no in-process cache helps it:

- ``host``: ``rmat(scale, edge_factor, seed)``: seconds, peak RSS.
- ``device``: ``open_backend("cuda")`` (seconds), then ``rmat_on_device`` once (``first``:
  it compiles the builder's kernels when the kernel cache is cold) and ``--repeats`` more
  times (``warm``); the first result is compared with the host generator's arrays.
- ``cache``: the graph written to an empty graph cache by one child, then loaded by a
  fresh child (``load_cached_rmat``: read, checksum, CSR checks).
- ``job-first``, ``job-cached``: ``prepare_job_graph`` as a job runs it (``--backend``,
  default ``cuda`` where a GPU answers), on an empty graph cache (a device or host build;
  the cache write runs in the background and is timed separately), then again (a cache
  hit). Their ``graph_ready_s`` is the graph-ready time of a job's wall time.

The kernel cache stays where it is (``$VYRE_ASYNC_CACHE_DIR`` or the XDG cache); only
the graph cache moves to a temporary folder. Writes ``graph_prep-<UTC date>.log`` (all
the children's output) and ``.json`` (device, date, medians, targets) to ``--out``, else
``$OUT``, else the current folder. On a CPU-only machine the device kinds are recorded as
skipped with the reason.

Usage: ``python bench/graph_prep.py [--scale 22] [--repeats 3] [--quick] [--out DIR]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
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
from vyre_async.algorithms.rmat import rmat_on_device
from vyre_async.graphs import RmatParams, rmat, rmat_params
from vyre_async.jobs import load_job
from vyre_async.jobs.graph import _graph_cache, prepare_job_graph
from vyre_async.testing import capture_logs, gpu_unavailable_reason

KINDS = ("host", "device", "cache", "job-first", "job-cached")
TARGET_S = 2.0


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure_host(args: argparse.Namespace) -> dict[str, Any]:
    """``rmat()`` on the host."""
    t0 = time.perf_counter()
    graph = rmat(args.scale, args.edge_factor, args.seed)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "edges": graph.num_edges, "peak_rss_bytes": _peak_rss_bytes()}


async def measure_device(args: argparse.Namespace) -> dict[str, Any]:
    """``rmat_on_device`` on GPU 0: open, first build, warm builds, equality with the host."""
    params = rmat_params(args.scale, args.edge_factor, args.seed)
    t0 = time.perf_counter()
    async with va.open_backend("cuda") as backend:
        opened = time.perf_counter() - t0
        t1 = time.perf_counter()
        graph = await rmat_on_device(backend, params)
        first = time.perf_counter() - t1
        warm = []
        for _ in range(args.repeats):
            t2 = time.perf_counter()
            await rmat_on_device(backend, params)
            warm.append(time.perf_counter() - t2)
        name = backend.device_name
    want = await anyio.to_thread.run_sync(lambda: rmat(args.scale, args.edge_factor, args.seed))
    equal = bool(
        np.array_equal(graph.offsets, want.offsets) and np.array_equal(graph.indices, want.indices)
    )
    return {
        "device": name,
        "open_s": opened,
        "first_build_s": first,
        "warm_build_s": warm,
        "warm_build_median_s": statistics.median(warm) if warm else None,
        "equals_host": equal,
        "edges": graph.num_edges,
        "peak_rss_bytes": _peak_rss_bytes(),
    }


def measure_cache(args: argparse.Namespace) -> dict[str, Any]:
    """Write (``--write``) or load the cache entry of the graph."""
    params = rmat_params(args.scale, args.edge_factor, args.seed)
    if args.write:
        graph = rmat(args.scale, args.edge_factor, args.seed)
        t0 = time.perf_counter()
        path = _graph_cache.save_cached_rmat(params, graph)
        seconds = time.perf_counter() - t0
        size = path.stat().st_size if path else None
        return {"write_s": seconds, "bytes": size, "peak_rss_bytes": _peak_rss_bytes()}
    t0 = time.perf_counter()
    loaded = _graph_cache.load_cached_rmat(params)
    seconds = time.perf_counter() - t0
    if loaded is None:
        raise SystemExit("the cache entry did not load")
    return {"load_s": seconds, "edges": loaded.num_edges, "peak_rss_bytes": _peak_rss_bytes()}


async def measure_job(args: argparse.Namespace) -> dict[str, Any]:
    """``prepare_job_graph`` as the runner calls it, plus the background cache write."""
    job = Path(args.graph_cache).parent / "job.json"
    spec = await anyio.to_thread.run_sync(load_job, job)
    t0 = time.perf_counter()
    ready = 0.0
    with capture_logs() as logs:
        async with anyio.create_task_group() as background:
            await prepare_job_graph(spec, job, args.backend, 0, background)
            ready = time.perf_counter() - t0
    settled = time.perf_counter() - t0
    [event] = [e for e in logs if e["event"] == "graph_ready"]
    return {
        "graph_ready_s": ready,
        "with_cache_write_s": settled,
        "origin": event["origin"],
        "edges": event["edges"],
        "peak_rss_bytes": _peak_rss_bytes(),
    }


def child(args: argparse.Namespace) -> None:
    """Run one measurement and print it as a ``RESULT`` line."""
    if args.graph_cache:
        folder = Path(args.graph_cache)
        _graph_cache.graph_cache_dir = lambda: folder  # type: ignore[assignment]
    if args.only == "host":
        result = measure_host(args)
    elif args.only == "device":
        result = anyio.run(measure_device, args)
    elif args.only == "cache":
        result = measure_cache(args)
    else:
        result = anyio.run(measure_job, args)
    print("RESULT " + json.dumps(result), flush=True)


def run_child(args: argparse.Namespace, kind: str, extra: list[str], log: Any) -> dict[str, Any]:
    """One measurement in a fresh interpreter; its output goes to the log."""
    command = [
        sys.executable,
        __file__,
        "--only",
        kind,
        "--scale",
        str(args.scale),
        "--edge-factor",
        str(args.edge_factor),
        "--seed",
        str(args.seed),
        "--repeats",
        str(args.repeats),
        "--backend",
        args.backend,
        *extra,
    ]
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    log.write(f"$ {' '.join(command)}\n{done.stdout}{done.stderr}\n")
    log.flush()
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-600:]}"}
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    result["child_wall_s"] = wall
    print(f"{kind} {' '.join(extra)}: {json.dumps(result)}", flush=True)
    return result


def main() -> None:
    """Run every kind in its own child; write the log and the JSON summary."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=int, default=22)
    parser.add_argument("--edge-factor", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backend", choices=["cuda", "cpu", "auto"], default=None)
    parser.add_argument("--quick", action="store_true", help="scale 16, one repeat")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--out", default=None, help="folder for the log and JSON (else $OUT)")
    parser.add_argument("--only", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--graph-cache", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--write", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    gpu_reason = gpu_unavailable_reason()
    if args.backend is None:
        args.backend = "cuda" if gpu_reason is None else "cpu"
    if args.only:
        child(args)
        return
    if args.quick:
        args.scale, args.repeats = min(args.scale, 16), 1
    out = Path(args.out or os.environ.get("OUT") or ".")
    out.mkdir(parents=True, exist_ok=True)
    date = datetime.datetime.now(datetime.UTC)
    stem = out / f"graph_prep-{date:%Y%m%dT%H%M%SZ}"
    kinds = [k for k in args.kinds.split(",") if k]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, open(f"{stem}.log", "w") as log:
        folder = Path(tmp)
        cache = folder / "graphs"
        job = {
            "job": {"name": "graph-prep", "backend": args.backend},
            "graph": {
                "kind": "rmat",
                "scale": args.scale,
                "edge_factor": args.edge_factor,
                "seed": args.seed,
            },
            "workload": [{"kind": "reach", "sources": [0]}],
            "output": {"dir": "out"},
        }
        (folder / "job.json").write_text(json.dumps(job))
        for kind in kinds:
            if kind == "device" and gpu_reason is not None:
                results[kind] = {"skipped": f"no usable CUDA GPU: {gpu_reason}"}
            elif kind == "host":
                results[kind] = [run_child(args, kind, [], log) for _ in range(args.repeats)]
            elif kind == "cache":
                where = ["--graph-cache", str(folder / "cache-kind")]
                write = run_child(args, kind, [*where, "--write"], log)
                loads = [run_child(args, kind, where, log) for _ in range(args.repeats)]
                results[kind] = {"write": write, "load": loads}
            elif kind == "job-first":
                first = []
                for _ in range(args.repeats):
                    for entry in cache.glob("*"):
                        entry.unlink()
                    first.append(run_child(args, kind, ["--graph-cache", str(cache)], log))
                results[kind] = first
            elif kind == "job-cached":
                # job-first leaves its entry behind; make one if it did not run.
                if not any(cache.glob("*.npz")):
                    run_child(args, "job-first", ["--graph-cache", str(cache)], log)
                where = ["--graph-cache", str(cache)]
                results[kind] = [run_child(args, kind, where, log) for _ in range(args.repeats)]
            else:
                results[kind] = run_child(args, kind, [], log)
    summary = _summary(args, date, results, gpu_reason)
    Path(f"{stem}.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({"medians_s": summary["medians_s"], "targets": summary["targets"]}))
    print(f"wrote {stem}.json and {stem}.log")


def _median(runs: Any, key: str) -> float | None:
    values = [r[key] for r in runs if isinstance(r, dict) and key in r]
    return statistics.median(values) if values else None


def _summary(
    args: argparse.Namespace,
    date: datetime.datetime,
    results: dict[str, Any],
    gpu_reason: str | None,
) -> dict[str, Any]:
    smi = (
        subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if gpu_reason is None
        else ""
    )
    medians = {
        "host": _median(results.get("host", []), "seconds"),
        "device_first_build": _median([results.get("device", {})], "first_build_s"),
        "device_warm_build": _median([results.get("device", {})], "warm_build_median_s"),
        "device_open": _median([results.get("device", {})], "open_s"),
        "cache_load": _median(results.get("cache", {}).get("load", []), "load_s"),
        "job_first_graph_ready": _median(results.get("job-first", []), "graph_ready_s"),
        "job_cached_graph_ready": _median(results.get("job-cached", []), "graph_ready_s"),
    }
    first, cached = medians["job_first_graph_ready"], medians["job_cached_graph_ready"]
    return {
        "benchmark": "graph_prep",
        "date": date.isoformat(timespec="seconds"),
        "device": smi or f"none ({gpu_reason})",
        "host": {
            "machine": platform.machine(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
        },
        "driver": {"backend": args.backend, "generator_version": RmatParams.generator_version},
        "graph": {"scale": args.scale, "edge_factor": args.edge_factor, "seed": args.seed},
        "repeats": args.repeats,
        "results": results,
        "medians_s": medians,
        "targets": {
            f"job graph ready < {TARGET_S:g} s, first run (empty graph cache)": (
                None if first is None else first < TARGET_S
            ),
            f"job graph ready < {TARGET_S:g} s, later runs (cache hit)": (
                None if cached is None else cached < TARGET_S
            ),
        },
    }


if __name__ == "__main__":
    main()
