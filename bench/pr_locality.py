"""PageRank's gather on the device: kernel versions and vertex orders (CuPy, events).

R-MAT labels are scrambled (``rmat(permute=True)``, as Graph500 does), so the shares
``pr_gather`` reads at random are spread over the whole vector and most reads miss
L1. Each kernel version runs on the same in-CSR in three vertex orders:

- ``base``: the graph as generated.
- ``sources``: sources renumbered by out-degree (hubs first), rows as they are; the
  shares vector is stored in the new order (what the sessions do).
- ``sources_sorted``: the same, each in-list sorted by new source number.

Kernel versions: ``merge64``, the gather before this change (64-bit merge helpers,
one group of 32 edges at a time), and the library's ``pr_gather`` with 1, 2 and 4
groups in flight (``STEPS``). Also ``pr_update`` writing the shares at ``rank_of[v]``
(the library's, what ``sources`` needs) against writing them in place. Each gather's sums are
checked against float64 NumPy.

Usage: ``python bench/pr_locality.py [scale] [--out summary.json]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess

import cupy as cp
import numpy as np

from vyre_async.algorithms.pagerank import pr_gather, pr_update
from vyre_async.graphs import rmat
from vyre_async.kernels import load_cuda_source

REPEATS = 15
WARMUP = 3

#: pr_gather before the 32-bit rewrite, for comparison in the same run.
MERGE64_GATHER = (
    load_cuda_source("vyre_async.algorithms.pagerank", "pagerank_prelude.cuh")
    + load_cuda_source("vyre_async.algorithms", "warp_merge.cuh")
    + r"""
// Edges per warp task. A hub's in-list is cut into many tasks spread over the grid,
// so no warp holds the launch open for a hub (one did: 6.4 ms per iteration at R-MAT
// scale 22, SMs active 43% of the time).
#define CHUNK 1024


// The vertex whose in-list holds edge j: the largest v with offsets[v] <= j.
__device__ __forceinline__ long long owning_vertex(const long long* offsets, int n, long long j)
{
    long long lo = 0;
    long long hi = n;  // offsets[hi] = E > j for any valid edge
    while (hi - lo > 1) {
        const long long mid = (lo + hi) >> 1;
        if (__ldg(&offsets[mid]) <= j) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

extern "C" __global__ void pr_gather(const long long* __restrict__ in_offsets,
                                     const int* __restrict__ in_indices,
                                     const float* __restrict__ contrib,
                                     float* __restrict__ sums,
                                     const float* __restrict__ state,
                                     int n)
{
    if (state[2] != 0.0f || n <= 0) {
        return;
    }
    const long long edges = __ldg(&in_offsets[n]);
    const unsigned lane = threadIdx.x & 31u;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long cs = warp * CHUNK; cs < edges; cs += warps * CHUNK) {
        const long long ce = min(cs + (long long)CHUNK, edges);
        const long long v0 = owning_vertex(in_offsets, n, cs);
        const long long v1 = owning_vertex(in_offsets, n, ce - 1);
        // The chunk's vertices, 32 at a time: their lists (clipped to the chunk) merged,
        // lane i taking the i-th edge of each 32, then a segmented sum over lanes with
        // the same owner; each segment's first lane adds it to the owner's sum.
        for (long long vw = v0; vw <= v1; vw += 32) {
            const long long v = vw + lane;
            long long begin = ce;
            long long end = ce;
            if (v <= v1) {
                begin = max(__ldg(&in_offsets[v]), cs);
                end = min(__ldg(&in_offsets[v + 1]), ce);
            }
            long long total = 0;
            const long long start = warp_exclusive_scan(end - begin, lane, &total);
            for (long long k0 = 0; k0 < total; k0 += 32) {
                const long long k = k0 + lane;
                const int owner = warp_owner(start, k);
                const long long owner_begin = __shfl_sync(FULL_MASK, begin, owner);
                const long long owner_start = __shfl_sync(FULL_MASK, start, owner);
                const long long edge = owner_begin + (k - owner_start);
                // One gather per edge: rank[u] / out_degree[u] was stored by the last
                // pr_update (or pr_init), not recomputed from two gathers here.
                float x = k < total ? __ldg(&contrib[__ldg(&in_indices[edge])]) : 0.0f;
                for (int d = 1; d < 32; d <<= 1) {
                    const float y = __shfl_down_sync(FULL_MASK, x, d);
                    const int y_owner = __shfl_down_sync(FULL_MASK, owner, d);
                    if (lane + d < 32u && y_owner == owner) {
                        x += y;
                    }
                }
                const int left_owner = __shfl_up_sync(FULL_MASK, owner, 1);
                if (k < total && (lane == 0u || left_owner != owner)) {
                    atomicAdd(&sums[vw + owner], x);
                }
            }
        }
    }
}
"""
)

parser = argparse.ArgumentParser()
parser.add_argument("scale", type=int, nargs="?", default=22)
parser.add_argument("--out", help="write a JSON summary here")
cli = parser.parse_args()
scale, out_path = cli.scale, cli.out
graph = rmat(scale, 16, seed=1)
n, e = graph.num_vertices, graph.num_edges
print(f"R-MAT scale {scale}: {n} vertices, {e} edges, symmetric={graph.symmetric}", flush=True)

offs = cp.asarray(graph.offsets.astype(np.int64))
idx = cp.asarray(graph.indices)
deg = cp.diff(offs)
# Hubs first; ties by vertex number (unique keys, so the order is deterministic).
order = cp.argsort(-deg * n + cp.arange(n, dtype=cp.int64))
rank_of = cp.empty(n, cp.int64)
rank_of[order] = cp.arange(n, dtype=cp.int64)
row = cp.searchsorted(offs, cp.arange(e, dtype=cp.int64), side="right") - 1
new_src = rank_of[idx]
orders = {
    "base": idx,
    "sources": new_src.astype(cp.int32),
    "sources_sorted": (cp.sort((row << 32) | new_src) & 0xFFFFFFFF).astype(cp.int32),
}
del row, new_src

rng = np.random.default_rng(7)
shares_host = rng.random(n, dtype=np.float32)
expect = np.bincount(
    np.repeat(np.arange(n), np.diff(graph.offsets)),
    weights=shares_host[graph.indices].astype(np.float64),
    minlength=n,
)
shares = cp.asarray(shares_host)
shares_new = shares[order]  # shares_new[rank_of[u]] == shares[u]
state = cp.zeros(8, cp.float32)


def time_launch(kernel: cp.RawKernel, grid: int, args: tuple) -> float:
    """Median ms of one launch, after warm-up, by CUDA events."""
    times = []
    for i in range(REPEATS + WARMUP):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        kernel((grid,), (256,), args)
        end.record()
        end.synchronize()
        if i >= WARMUP:
            times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


sources = {"merge64": MERGE64_GATHER}
for steps in (1, 2, 4):
    sources[f"steps{steps}"] = pr_gather.source.replace("#define STEPS 2", f"#define STEPS {steps}")
blocks = min(65535, -(-e // (256 * 32)))  # pr_gather's launch rule: a warp per 1024 edges
results: dict[str, float] = {}
for version, source in sources.items():
    kernel = cp.RawKernel(source, "pr_gather", options=("--std=c++17",))
    for name, indices in orders.items():
        x = shares if name == "base" else shares_new
        sums = cp.full(n, cp.nan, cp.float32)
        sums.fill(0)  # the gather adds into zeroed sums
        args = (offs, indices, x, sums, state, np.int32(n))
        kernel((blocks,), (256,), args)
        got = cp.asnumpy(sums).astype(np.float64)
        err = np.linalg.norm(got - expect) / np.linalg.norm(expect)
        worst = np.max(np.abs(got - expect) / np.maximum(np.abs(expect), 1e-30))
        ms = time_launch(kernel, blocks, args)
        results[f"{version}/{name}"] = ms
        print(
            f"gather {version:8s} {name:15s}: {ms:.3f} ms  rel err {err:.1e} worst {worst:.1e}",
            flush=True,
        )

# The library's pr_update stores shares at rank_of[v]; in place is the version before.
in_place_source = pr_update.source.replace("contrib[__ldg(&rank_of[v])]", "contrib[v]")
assert in_place_source != pr_update.source
plain = cp.RawKernel(in_place_source, "pr_update", options=("--std=c++17",))
scatter = cp.RawKernel(pr_update.source, "pr_update", options=("--std=c++17",))
rank_in = cp.random.random(n, dtype=cp.float32)
rank_out = cp.random.random(n, dtype=cp.float32)
contrib = cp.empty(n, cp.float32)
degree = deg.astype(cp.int32)
rank_of32 = rank_of.astype(cp.int32)
ublocks = min(1024, -(-n // (256 * 8)))
damp = np.float32(0.85)
args = (rank_in, rank_out, degree, rank_of32, contrib, state, damp, np.int32(n))
update_plain = time_launch(plain, ublocks, args)
update_scatter = time_launch(scatter, ublocks, args)
print(f"update in place: {update_plain:.3f} ms, at rank_of[v]: {update_scatter:.3f} ms")
base = results["merge64/base"]
print("gather speed-up over merge64/base:")
for key, ms in results.items():
    print(f"  {key:24s} {base / ms:.2f}x")
if out_path is not None:
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=False,
    )
    summary = {
        "benchmark": "pr_locality",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "driver_version": cp.cuda.runtime.driverGetVersion(),
        "nvidia_smi": smi.stdout.strip(),
        "graph": {"kind": "rmat", "scale": scale, "vertices": n, "edges": e},
        "median_ms": {
            **results,
            "update_in_place": update_plain,
            "update_at_rank_of": update_scatter,
        },
        "gather_speedup_over_merge64_base": {k: base / ms for k, ms in results.items()},
    }
    with open(out_path, "w") as fh:
        json.dump(summary, fh, indent=2)
