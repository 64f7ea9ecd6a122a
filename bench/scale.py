"""Scale-out: multi-query throughput on every GPU of a host against one (issue: scale out).

R-MAT scale 22 (edge factor 16, symmetric), BFS queries with counts readback sent as
one batched ``bfs_many`` call of ``--queries`` sources (blocks of 1024 through the
session's batcher): queries/s on ``open_backend("cuda", device=0)`` against
``device="all"``, alternating, medians of ``--repeats`` after a warm-up; the counts
of the two are compared.

With ``--ray``, also a job of ``--ray-items`` such queries (graph from an ``.npz``
file) run by the job runner on one local GPU against ``executor = "ray"`` (one actor
per GPU of a local Ray instance): items/s of each run, end to end (graph load,
actors started, every record committed), and the two result sets compared.

Usage: ``python bench/scale.py --out results.json [--ray]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import numpy as np

import vyre_async as va
from vyre_async.graphs import CsrGraph, rmat, save_npz
from vyre_async.jobs import JobRunner, load_job, read_records


async def throughput(
    graph: CsrGraph, sources: list[int], device: Any, repeats: int
) -> tuple[list[float], np.ndarray, str]:
    """Queries/s of each repeat on ``device``, the counts, and the device name."""
    rates = []
    config = va.BatchingConfig(max_batch=1024)
    async with (
        va.open_backend("cuda", device=device) as backend,
        backend.resident_graph(graph, batching=config) as session,
    ):
        await session.bfs_many(sources[:4096], readback="counts")  # warm: kernels, scratch
        for _ in range(repeats):
            t0 = time.perf_counter()
            counts = await session.bfs_many(sources, readback="counts")
            rates.append(len(sources) / (time.perf_counter() - t0))
        return rates, counts, backend.device_name


def job_rate(
    folder: Path, graph_file: Path, items: int, executor: str, backend: str = "cuda"
) -> dict[str, Any]:
    """A job of ``items`` BFS counts through the runner: its summary and its records."""
    job = {
        "job": {"name": f"scale-{executor}", "backend": backend, "executor": executor},
        "graph": {"kind": "npz", "path": str(graph_file)},
        "workload": [{"kind": "bfs", "sources": {"random": items, "seed": 3}}],
        "batching": {"max_batch": 1024},
        "output": {"dir": f"out-{executor}"},
    }
    path = folder / f"scale-{executor}.json"
    path.write_text(json.dumps(job))

    async def run() -> va.jobs.JobSummary:
        return await JobRunner(load_job(path), job_file=path).run()

    summary = anyio.run(run)
    if summary.status != "complete":
        raise SystemExit(f"{executor} job did not complete: {summary.message}")
    records = sorted((r.id, r.reached) for r in read_records(folder / f"out-{executor}"))
    print(f"{executor} job: {summary.items_per_s:,.0f} items/s on {summary.device}", flush=True)
    return {"summary": msgspec.to_builtins(summary), "records": records}


def main() -> None:
    """Measure one GPU and all GPUs; write the JSON summary."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=int, default=22)
    parser.add_argument("--queries", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ray", action="store_true", help="also a job through Ray actors")
    parser.add_argument("--ray-items", type=int, default=1_000_000)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    t0 = time.perf_counter()
    graph = rmat(args.scale, 16, seed=1)
    print(f"R-MAT scale {args.scale}: {graph}, generated in {time.perf_counter() - t0:.1f} s")
    sources = np.random.default_rng(7).integers(0, graph.num_vertices, args.queries).tolist()
    one_rates, all_rates = [], []
    one_counts = all_counts = None
    names = {}
    for _ in range(2):  # alternate, so drift hits both
        rates, one_counts, names["one"] = anyio.run(throughput, graph, sources, 0, args.repeats)
        one_rates += rates
        rates, all_counts, names["all"] = anyio.run(throughput, graph, sources, "all", args.repeats)
        all_rates += rates
        print(
            f"one GPU {one_rates[-args.repeats :]} q/s, all GPUs {all_rates[-args.repeats :]} q/s"
        )
    if not np.array_equal(one_counts, all_counts):
        raise SystemExit("counts on all GPUs differ from one GPU")
    one, every = statistics.median(one_rates), statistics.median(all_rates)
    ray_part: dict[str, Any] | str = "not measured: run with --ray where Ray is installed"
    if args.ray:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            graph_file = save_npz(graph, folder / "graph.npz")
            local = job_rate(folder, graph_file, args.ray_items, "local")
            remote = job_rate(folder, graph_file, args.ray_items, "ray")
        if local["records"] != remote["records"]:
            raise SystemExit("the Ray job's records differ from the local job's")
        local_rate = local["summary"]["items_per_s"]
        ray_rate = remote["summary"]["items_per_s"]
        ray_part = {
            "items": args.ray_items,
            "local_one_gpu_items_per_s": local_rate,
            "ray_items_per_s": ray_rate,
            "ray_over_local_one_gpu": ray_rate / local_rate,
            "ray_device": remote["summary"]["device"],
            "ray_batches": remote["summary"]["batches"],
            "local_seconds": local["summary"]["seconds"],
            "ray_seconds": remote["summary"]["seconds"],
        }
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    summary = {
        "benchmark": "scale",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "nvidia_smi": smi,
        "devices": names,
        "graph": {"scale": args.scale, "vertices": graph.num_vertices, "edges": graph.num_edges},
        "queries": args.queries,
        "one_gpu_qps": one_rates,
        "all_gpus_qps": all_rates,
        "one_gpu_qps_median": one,
        "all_gpus_qps_median": every,
        "all_over_one": every / one,
        "ray": ray_part,
        "targets_met": {"all GPUs >= 1.8x one GPU": every / one >= 1.8}
        | (
            {"Ray >= 1.6x one local GPU": ray_part["ray_over_local_one_gpu"] >= 1.6}
            if isinstance(ray_part, dict)
            else {}
        ),
    }
    Path(args.out).write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: summary[k] for k in ("all_over_one", "targets_met")}))


if __name__ == "__main__":
    main()
