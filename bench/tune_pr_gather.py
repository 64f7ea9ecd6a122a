"""Time pr_gather's edge-chunk size on the device (CuPy launches, events, medians).

Usage: ``python bench/tune_pr_gather.py [scale]``; prints ms per launch per chunk size.
"""

from __future__ import annotations

import statistics
import sys

import cupy as cp
import numpy as np

from vyre_async.algorithms.pagerank import pr_gather
from vyre_async.graphs import rmat

scale = int(sys.argv[1]) if len(sys.argv) > 1 else 22
graph = rmat(scale, 16, seed=1)
n = graph.num_vertices
offs = cp.asarray(graph.offsets.astype(np.int64))
idx = cp.asarray(graph.indices)
shares = cp.random.random(n, dtype=cp.float32)
sums = cp.zeros(n, cp.float32)
state = cp.zeros(8, cp.float32)
for chunk in (256, 512, 1024, 2048, 4096, 8192):
    source = pr_gather.source.replace("#define CHUNK 1024", f"#define CHUNK {chunk}")
    kernel = cp.RawModule(code=source, backend="nvrtc", options=("--std=c++17",)).get_function(
        "pr_gather"
    )
    warps = -(-graph.num_edges // chunk)
    blocks = min(65535, -(-warps // 8))
    times = []
    for i in range(15):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        kernel((blocks,), (256,), (offs, idx, shares, sums, state, np.int32(n)))
        end.record()
        end.synchronize()
        if i >= 3:
            times.append(cp.cuda.get_elapsed_time(start, end))
    print(f"CHUNK {chunk:5d}: {statistics.median(times):.3f} ms", flush=True)
