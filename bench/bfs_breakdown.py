"""Where the time of one resident BFS goes, on the graph of bench/resident.py (issue 4 (d)).

For several sources of an R-MAT graph (scale 22, edge factor 16, symmetric, seed 1 by
default; the sources bench/resident.py draws), this prints and records:

- per level: the device time of each BFS kernel launched alone (timing events around
  one launch), its direction, the frontier size and the vertices it discovered;
- ``session.bfs`` and ``session.reach_count`` wall times and their device time (the
  difference of the two walls is what returning the levels costs);
- ``backend.read(levels)`` wall time (the levels readback as a session does it);
- with CuPy, after the backend has closed: the raw device-to-host copy of the levels
  array into pinned memory (one copy, and in 2 MiB pieces), and the host copy out of
  pinned memory into a fresh array (1 and 4 threads) or into an already touched one.

Every number is a median over repeats (and over sources where it says so). Raw lines
go to stdout; ``--json`` gets the summary.

Usage: ``python bench/bfs_breakdown.py --scale 22 --json bench/results/bfs-breakdown.json``
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import numpy as np

import vyre_async as va
from vyre_async.algorithms import bfs as _bfs
from vyre_async.backends import DispatchConfig, ReadRange, ResidentBuffer, SequenceStep
from vyre_async.graphs import CsrGraph, rmat

TIMED = DispatchConfig(timing=True)
PIECE = 2 << 20


def sources_with_reach(graph: CsrGraph, count: int, seed: int) -> list[int]:
    """The sources bench/resident.py uses: random vertices with at least one edge."""
    rng = np.random.default_rng(seed)
    candidates = np.flatnonzero(np.diff(graph.offsets) > 0)
    return [int(s) for s in rng.choice(candidates, count, replace=False)]


def median_ms(samples: list[float]) -> float:
    """Median of seconds, in milliseconds."""
    return statistics.median(samples) * 1e3


async def timed_step(
    backend: va.Backend, step: SequenceStep, state: ResidentBuffer
) -> tuple[float, np.ndarray]:
    """One kernel launched alone: its device milliseconds and the state words after it."""
    result = await backend.submit_sequence([step], reads=[ReadRange(state)], config=TIMED).timed()
    (words,) = result.outputs
    return (result.timing.device_ns or 0) / 1e6, words


async def levels_of_one_bfs(
    backend: va.Backend, buffers: dict[str, ResidentBuffer], source: int
) -> list[dict[str, Any]]:
    """Run one BFS kernel by kernel; one record per expanded level."""
    levels, state = buffers["levels"], buffers["state"]
    init = SequenceStep(
        _bfs.bfs_init,
        {"levels": levels, "state": state},
        {"source": source, "max_level": _bfs.BFS_UNLIMITED},
    )
    expand = {
        0: SequenceStep(
            _bfs.bfs_top_down,
            {
                "offsets": buffers["offsets"],
                "indices": buffers["indices"],
                "levels": levels,
                "state": state,
            },
        ),
        1: SequenceStep(
            _bfs.bfs_bottom_up,
            {
                "in_offsets": buffers["offsets"],
                "in_indices": buffers["indices"],
                "levels": levels,
                "state": state,
            },
        ),
    }
    advance = SequenceStep(_bfs.bfs_advance, {"levels": levels, "state": state}, {"bottom_up": 1})
    init_ms, words = await timed_step(backend, init, state)
    records: list[dict[str, Any]] = [{"kernel": "bfs_init", "device_ms": init_ms}]
    while not words[_bfs.STATE_DONE]:
        direction = int(words[_bfs.STATE_DIRECTION])
        level = int(words[_bfs.STATE_LEVEL])
        frontier = int(words[_bfs.STATE_FRONTIER])
        step_ms, after = await timed_step(backend, expand[direction], state)
        advance_ms, words = await timed_step(backend, advance, state)
        records.append(
            {
                "kernel": expand[direction].kernel.name,
                "level": level,
                "frontier": frontier,
                "discovered": int(after[_bfs.STATE_DISCOVERED]),
                "device_ms": step_ms,
                "advance_ms": advance_ms,
            }
        )
    return records


async def gpu_part(
    graph: CsrGraph, sources: list[int], repeats: int, kind: str = "cuda"
) -> dict[str, Any]:
    """Everything measured through vyre_async's backend (CUDA; ``cpu`` only checks the script)."""
    if not graph.symmetric:
        raise ValueError(
            "the breakdown binds the CSR arrays to both directions: pass a symmetric graph"
        )
    out: dict[str, Any] = {"per_source": []}
    n = graph.num_vertices
    async with va.open_backend(kind) as backend:
        info = getattr(backend, "device_info", None)
        out["device"] = (
            {"name": info.name, "compute_capability": list(info.compute_capability)}
            if info is not None
            else {"name": backend.device_name}
        )
        offsets, indices = await backend.upload_group(
            [graph.offsets.astype(np.int64), graph.indices]
        )
        buffers = {
            "offsets": offsets,
            "indices": indices,
            "levels": await backend.alloc(4 * n, np.int32),
            "state": await backend.alloc(4 * _bfs.BFS_STATE_WORDS, np.int32),
        }
        await levels_of_one_bfs(backend, buffers, sources[0])  # warm: kernels loaded
        for source in sources:
            runs = [await levels_of_one_bfs(backend, buffers, source) for _ in range(repeats)]
            merged = []
            for parts in zip(*runs, strict=True):
                record = dict(parts[0])
                record["device_ms"] = statistics.median(p["device_ms"] for p in parts)
                merged.append(record)
            for record in merged:
                print(f"source={source} {json.dumps(record)}", flush=True)
            out["per_source"].append({"source": source, "levels": merged})
        read_s = []
        for _ in range(4 * repeats):
            t0 = time.perf_counter()
            await backend.read(buffers["levels"])
            read_s.append(time.perf_counter() - t0)
        out["backend_read_levels_ms"] = median_ms(read_s)
        print(f"backend.read(levels) {n * 4} bytes: {out['backend_read_levels_ms']:.3f} ms")
        for buffer in buffers.values():
            await backend.free(buffer)

        async with va.resident_graph(backend, graph) as session:
            await session.bfs(sources[0])
            await session.reach_count(sources[0])
            walls: dict[str, list[float]] = {"bfs": [], "reach_count": []}
            device: dict[str, list[float]] = {"bfs": [], "reach_count": []}
            for source in sources:
                for name in walls:
                    call: Callable[[int], Any] = getattr(session, name)
                    for _ in range(repeats):
                        before = session.stats().device_ns
                        t0 = time.perf_counter()
                        await call(source)
                        walls[name].append(time.perf_counter() - t0)
                        device[name].append((session.stats().device_ns - before) / 1e9)
            for name in walls:
                out[f"session_{name}_wall_ms"] = median_ms(walls[name])
                out[f"session_{name}_device_ms"] = median_ms(device[name])
                print(
                    f"session.{name}: wall {out[f'session_{name}_wall_ms']:.3f} ms, "
                    f"device {out[f'session_{name}_device_ms']:.3f} ms (median over sources)"
                )
    return out


def cupy_part(n: int, repeats: int) -> dict[str, Any]:
    """Raw copy costs of an ``n``-element int32 array, with CuPy (after the backend closed)."""
    import cupy as cp
    import cupyx

    nbytes = 4 * n
    device = cp.arange(n, dtype=cp.int32)
    pinned = cupyx.empty_pinned((n,), np.int32)
    stream = cp.cuda.Stream(non_blocking=True)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    runtime = cp.cuda.runtime

    def d2h(piece: int) -> tuple[float, float]:
        t0 = time.perf_counter()
        start.record(stream)
        for at in range(0, nbytes, piece):
            size = min(piece, nbytes - at)
            runtime.memcpyAsync(
                pinned.ctypes.data + at,
                device.data.ptr + at,
                size,
                runtime.memcpyDeviceToHost,
                stream.ptr,
            )
        end.record(stream)
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / 1e3, time.perf_counter() - t0

    out: dict[str, Any] = {"bytes": nbytes}
    for label, piece in (("whole", nbytes), ("pieces_2mib", PIECE)):
        d2h(piece)
        samples = [d2h(piece) for _ in range(4 * repeats)]
        out[f"d2h_{label}_device_ms"] = median_ms([s[0] for s in samples])
        out[f"d2h_{label}_wall_ms"] = median_ms([s[1] for s in samples])
        out[f"d2h_{label}_gbs"] = nbytes / statistics.median(s[0] for s in samples) / 1e9
    if not np.array_equal(pinned[:1000], np.arange(1000, dtype=np.int32)):
        raise RuntimeError("the device-to-host copy returned wrong data")

    def copy_fresh(threads: int) -> float:
        t0 = time.perf_counter()
        target = np.empty(n, np.int32)
        src, dst = pinned.view(np.uint8), target.view(np.uint8)
        if threads == 1:
            np.copyto(dst, src)
        else:
            with ThreadPoolExecutor(threads) as pool:
                spans = [(a, min(a + PIECE, nbytes)) for a in range(0, nbytes, PIECE)]
                list(pool.map(lambda s: np.copyto(dst[s[0] : s[1]], src[s[0] : s[1]]), spans))
        return time.perf_counter() - t0

    touched = np.ones(n, np.int32)

    def copy_touched() -> float:
        t0 = time.perf_counter()
        np.copyto(touched, pinned)
        return time.perf_counter() - t0

    for label, fn in (
        ("host_copy_fresh_1_thread", lambda: copy_fresh(1)),
        ("host_copy_fresh_4_threads", lambda: copy_fresh(4)),
        ("host_copy_touched_1_thread", copy_touched),
    ):
        fn()
        out[f"{label}_ms"] = median_ms([fn() for _ in range(4 * repeats)])
    for key, value in out.items():
        print(f"cupy {key}: {value:.3f}" if isinstance(value, float) else f"cupy {key}: {value}")
    return out


def summarise(gpu: dict[str, Any]) -> dict[str, Any]:
    """Per kernel and direction: medians over sources of the total per BFS."""
    totals: dict[str, list[float]] = {
        "bfs_init": [],
        "bfs_top_down": [],
        "bfs_bottom_up": [],
        "bfs_advance": [],
    }
    max_top_down: list[float] = []
    for entry in gpu["per_source"]:
        per: dict[str, float] = dict.fromkeys(totals, 0.0)
        biggest = 0.0
        for record in entry["levels"]:
            per[record["kernel"]] += record["device_ms"]
            per["bfs_advance"] += record.get("advance_ms", 0.0)
            if record["kernel"] == "bfs_top_down":
                biggest = max(biggest, record["device_ms"])
        for name, value in per.items():
            totals[name].append(value)
        max_top_down.append(biggest)
    summary = {f"{name}_ms_per_bfs": statistics.median(v) for name, v in totals.items()}
    summary["largest_top_down_level_ms"] = statistics.median(max_top_down)
    summary["kernels_ms_per_bfs"] = sum(
        statistics.median(v) for name, v in totals.items() if name != "bfs_advance"
    )
    return summary


def main() -> None:
    """Parse arguments, measure, print, write the JSON summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--scale", type=int, default=22)
    parser.add_argument("--edge-factor", type=int, default=16)
    parser.add_argument("--sources", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", required=True, help="where the summary JSON goes")
    parser.add_argument("--no-cupy", action="store_true", help="skip the CuPy copy timings")
    parser.add_argument(
        "--backend",
        default="cuda",
        choices=["cuda", "cpu"],
        help="cpu: a dry run of the script on the CPU backend (device times read 0)",
    )
    args = parser.parse_args()
    t0 = time.perf_counter()
    graph = rmat(args.scale, args.edge_factor, seed=1)
    print(
        f"R-MAT scale {args.scale}: {graph.num_vertices} vertices, {graph.num_edges} edges, "
        f"generated in {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    sources = sources_with_reach(graph, args.sources, seed=2)
    gpu = anyio.run(gpu_part, graph, sources, args.repeats, args.backend)
    copies = None if args.no_cupy else cupy_part(graph.num_vertices, args.repeats)
    summary = summarise(gpu)
    for key, value in summary.items():
        print(f"summary {key}: {value:.3f}")
    report = {
        "benchmark": "bfs_breakdown",
        "graph": {
            "kind": "rmat",
            "scale": args.scale,
            "edge_factor": args.edge_factor,
            "vertices": graph.num_vertices,
            "edges": graph.num_edges,
        },
        "sources": sources,
        "repeats": args.repeats,
        "summary": summary,
        "gpu": gpu,
        "copies": copies,
    }
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
