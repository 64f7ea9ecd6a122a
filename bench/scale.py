"""Scale-out: multi-query throughput on every GPU of a host against one (issue: scale out).

R-MAT scale 22 (edge factor 16, symmetric), BFS queries with counts readback sent as
one batched ``bfs_many`` call of ``--queries`` sources (blocks of 1024 through the
session's batcher): queries/s on ``open_backend("cuda", device=0)`` against
``device="all"``, alternating, medians of ``--repeats`` after a warm-up; the counts
of the two are compared. The Ray part of the issue is not measured here (Ray is not
installed on the GPU machine); the JSON says so.

Usage: ``python bench/scale.py --out results.json``
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

import vyre_async as va
from vyre_async.graphs import CsrGraph, rmat


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


def main() -> None:
    """Measure one GPU and all GPUs; write the JSON summary."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=int, default=22)
    parser.add_argument("--queries", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=3)
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
        "ray": "not measured: Ray is not installed on the GPU machine",
        "targets_met": {"all GPUs >= 1.8x one GPU": every / one >= 1.8},
    }
    Path(args.out).write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: summary[k] for k in ("all_over_one", "targets_met")}))


if __name__ == "__main__":
    main()
