"""Diagnose where a resident PageRank iteration's time goes: kernels or host enqueue.

Runs pr_gather through CuPy (pure device time) and through vyre_async sequences
(device time from timing events, host enqueue time around submit) on one R-MAT graph.
"""

from __future__ import annotations

import statistics
import sys
import time

import anyio
import numpy as np

import vyre_async as va
from vyre_async.algorithms.pagerank import pr_check, pr_dangling, pr_gather, pr_init, pr_update
from vyre_async.graphs import rmat

SCALE = int(sys.argv[1]) if len(sys.argv) > 1 else 22


def cupy_pull(graph: va.graphs.CsrGraph) -> float:
    """Median device seconds of one pr_gather launched by CuPy on the same inputs."""
    import cupy as cp

    n = graph.num_vertices
    t = graph.transpose()
    module = cp.RawModule(code=pr_gather.source, backend="nvrtc", options=("--std=c++17",))
    kernel = module.get_function("pr_gather")
    offs = cp.asarray(t.offsets.astype(np.int64))
    idx = cp.asarray(t.indices)
    deg = cp.asarray(graph.out_degree())
    rank = cp.full(n, 1.0 / n, cp.float32)
    out = cp.empty_like(rank)
    state = cp.zeros(8, cp.float32)
    shape = pr_gather.launch({"v": n, "v1": n + 1, "e": graph.num_edges})
    times = []
    for i in range(12):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        shares = rank / cp.maximum(deg, 1).astype(cp.float32)
        kernel(shape.grid, shape.block, (offs, idx, shares, out, state, np.int32(n)))
        end.record()
        end.synchronize()
        if i >= 2:
            times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    return statistics.median(times)


async def ours(graph: va.graphs.CsrGraph) -> None:
    """Device and enqueue time of single steps and of a 16-repeat body."""
    async with va.open_backend("cuda") as backend, va.resident_graph(backend, graph) as session:
        b = session._replicas[0].buffers  # a diagnostic reaches inside the session
        n = graph.num_vertices
        ra = await backend.alloc(4 * n, np.float32)
        rb = await backend.alloc(4 * n, np.float32)
        st = await backend.alloc(32, np.float32)
        timed = va.DispatchConfig(timing=True)
        shares = await backend.alloc(4 * n, np.float32)
        deg = b["out_degree"]
        init = va.SequenceStep(
            pr_init,
            {"rank": ra, "other": rb, "contrib": shares, "out_degree": deg, "pr_state": st},
            {"tol": 1e-30, "max_iter": 10_000},
        )
        graph_in = {"in_offsets": b["in_offsets"], "in_indices": b["in_indices"]}
        steps = {
            "pr_dangling": va.SequenceStep(
                pr_dangling, {"rank": ra, "out_degree": b["out_degree"], "pr_state": st}
            ),
            "pr_gather": va.SequenceStep(
                pr_gather, {**graph_in, "contrib": shares, "sums": rb, "pr_state": st}
            ),
            "pr_update": va.SequenceStep(
                pr_update,
                {
                    "rank_in": ra,
                    "rank_out": rb,
                    "out_degree": deg,
                    "contrib": shares,
                    "pr_state": st,
                },
                {"damping": 0.85},
            ),
            "pr_check": va.SequenceStep(pr_check, {"pr_state": st}),
        }
        await backend.submit_sequence([init])
        for name, step in steps.items():
            device = []
            for _ in range(8):
                result = await backend.submit_sequence([step], config=timed).timed()
                device.append(result.timing.device_ns / 1e9)
            print(f"{name:12s} device {statistics.median(device) * 1e3:8.3f} ms (one launch)")
        body = list(steps.values())
        for repeats in (1, 16):
            t0 = time.perf_counter()
            pending = backend.submit_repeated([], body, repeat_count=repeats, config=timed)
            enqueue = time.perf_counter() - t0
            result = await pending.timed()
            t = result.timing
            print(
                f"body x{repeats:<3d} enqueue {enqueue * 1e3:8.3f} ms  "
                f"device {(t.device_ns or 0) / 1e6:8.3f} ms  wall {t.wall_ns / 1e6:8.3f} ms"
            )
        for buf in (ra, rb, st, shares):
            await backend.free(buf)


graph = rmat(SCALE, 16, seed=1)
print(graph)
print(f"cupy-launched pr_gather: {cupy_pull(graph) * 1e3:.3f} ms")
anyio.run(ours, graph)
