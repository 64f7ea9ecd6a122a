"""Single-source shortest paths on one GPU against SciPy's Dijkstra and against BFS.

On R-MAT scale 20 and 22 (edge factor 16, symmetric, weights uniform in (0, 1]) and a
road-like 4-neighbour grid (side 2048, same weights), with the engine driven directly
(``vyre_async.algorithms.sssp`` over buffers uploaded here, as a session would):

- ``shortest_paths`` from one source against SciPy's ``dijkstra`` (CPU, float64) on
  the same graph and source, after checking the two agree (relative error <= 1e-5,
  +inf in the same places);
- against ``bfs.traverse`` from the same sources on the same graph (the unweighted
  lower bound), variants interleaved source by source, medians of device time (CUDA
  timing events) and wall time;
- host time per step: (wall - device) / steps, from the steps the state words count;
- ``shortest_paths_many`` (reach counts) for 32 sources as ``plan_many`` chooses and,
  where the planner picks one at a time, also as lanes, against 32 single runs.

GTEPS is edges / SSSP time (every edge of the graph counted once). Targets, as ratios
in one run: SSSP >= 50x SciPy at scale 20; SSSP <= 4x BFS (device time) on R-MAT 22;
host time per step <= 10 us on the grid.

Usage: ``python bench/sssp.py --out results.json [--rounds 5] [--quick]`` (``--quick``:
the CPU backend and tiny graphs, to try the script anywhere).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np
from device_record import environment, write_summary
from scipy.sparse import csgraph, csr_array

import vyre_async as va
from vyre_async.algorithms import bfs, sssp
from vyre_async.backends import ResidentBuffer
from vyre_async.graphs import rmat

SEED = 20261128
MANY_SOURCES = 32


@dataclass(frozen=True)
class Graph:
    """A symmetric CSR graph with float32 weights."""

    name: str
    offsets: np.ndarray
    indices: np.ndarray
    weights: np.ndarray

    @property
    def vertices(self) -> int:
        return self.offsets.size - 1

    @property
    def edges(self) -> int:
        return self.indices.size


def _weights(rng: np.random.Generator, count: int) -> np.ndarray:
    return (np.float32(1) - rng.random(count, dtype=np.float32)).astype(np.float32)


def rmat_graph(rng: np.random.Generator, scale: int) -> Graph:
    """R-MAT, edge factor 16, symmetric, deduplicated; a weight per stored edge (the two
    directions of an edge weigh alike only by chance, which Dijkstra does not need)."""
    graph = rmat(scale, 16, seed=scale)
    return Graph(
        f"rmat{scale}",
        graph.offsets.astype(np.int64),
        graph.indices,
        _weights(rng, graph.num_edges),
    )


def grid_graph(rng: np.random.Generator, side: int) -> Graph:
    """A side x side 4-neighbour lattice, both directions of an edge of equal weight."""
    ids = np.arange(side * side).reshape(side, side)
    right = np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()])
    down = np.stack([ids[:-1, :].ravel(), ids[1:, :].ravel()])
    edges = np.concatenate([right, down], axis=1)
    weights = _weights(rng, edges.shape[1])
    src = np.concatenate([edges[0], edges[1]])
    dst = np.concatenate([edges[1], edges[0]])
    both = np.concatenate([weights, weights])
    order = np.lexsort((dst, src))
    offsets = np.zeros(side * side + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=side * side), out=offsets[1:])
    return Graph(f"grid{side}", offsets, dst[order].astype(np.int32), both[order])


def _median(rows: list[dict[str, float]], key: str) -> float:
    return float(statistics.median(row[key] for row in rows))


def _scipy(graph: Graph, source: int) -> tuple[np.ndarray, float]:
    matrix = csr_array(
        (graph.weights.astype(np.float64), graph.indices, graph.offsets),
        shape=(graph.vertices, graph.vertices),
    )
    t0 = time.perf_counter()
    dist = csgraph.dijkstra(matrix, directed=True, indices=source)
    return dist, time.perf_counter() - t0


def _max_relative_error(found: np.ndarray, expected: np.ndarray) -> float:
    if not np.array_equal(np.isinf(found), np.isinf(expected)):
        raise SystemExit("GPU and SciPy disagree on which vertices are reachable")
    reached = np.isfinite(expected) & (expected > 0)
    if not reached.any():
        return 0.0
    error = np.abs(found[reached] - expected[reached]) / expected[reached]
    return float(error.max())


async def _upload(backend: va.Backend, graph: Graph) -> dict[str, ResidentBuffer]:
    buffers = {
        "offsets": await backend.upload(graph.offsets),
        "indices": await backend.upload(graph.indices),
        "weights": await backend.upload(graph.weights),
    }
    buffers["in_offsets"], buffers["in_indices"] = buffers["offsets"], buffers["indices"]
    return buffers


async def _sssp(
    backend: va.Backend, buffers: Mapping[str, ResidentBuffer], scratch: Any, source: int
) -> dict[str, float]:
    t0 = time.perf_counter()
    words, device_ns = await sssp.shortest_paths(backend, buffers, scratch, source)
    wall = time.perf_counter() - t0
    steps = int(words[sssp.STATE_LIGHT_ROUNDS] + words[sssp.STATE_HEAVY_ROUNDS])
    return {
        "wall_ms": wall * 1e3,
        "device_ms": device_ns / 1e6,
        "steps": steps,
        "host_us_per_step": (wall - device_ns / 1e9) / max(steps, 1) * 1e6,
        "relaxed": float(words[sssp.STATE_RELAXED : sssp.STATE_RELAXED + 2].view(np.uint64)[0]),
        "reached": int(words[sssp.STATE_REACHED]),
    }


async def _bfs(
    backend: va.Backend, buffers: Mapping[str, ResidentBuffer], scratch: Any, source: int
) -> dict[str, float]:
    t0 = time.perf_counter()
    words, device_ns = await bfs.traverse(
        backend, buffers, scratch, source, bfs.BFS_UNLIMITED, lambda: None
    )
    wall = time.perf_counter() - t0
    return {
        "wall_ms": wall * 1e3,
        "device_ms": device_ns / 1e6,
        "levels": int(words[bfs.STATE_LEVELS_RUN]),
    }


async def _many(
    backend: va.Backend,
    buffers: Mapping[str, ResidentBuffer],
    scratch: Any,
    sources: list[int],
) -> dict[str, float]:
    run = sssp.ManyRun()
    t0 = time.perf_counter()
    counts = await sssp.shortest_paths_many(
        backend, buffers, scratch, sources, readback="counts", run=run
    )
    wall = time.perf_counter() - t0
    return {
        "wall_ms": wall * 1e3,
        "device_ms": run.device_ns / 1e6,
        "steps": run.steps,
        "checksum": int(counts.astype(np.int64).sum()),
    }


async def bench_graph(
    backend: va.Backend, graph: Graph, rng: np.random.Generator, rounds: int, runs: int
) -> dict[str, Any]:
    """Everything measured on one graph."""
    print(f"{graph.name}: {graph.vertices} vertices, {graph.edges} edges", flush=True)
    buffers = await _upload(backend, graph)
    scratch = await sssp.allocate_scratch(backend, graph.vertices, graph.edges)
    levels = await backend.alloc(4 * max(graph.vertices, 1), np.int32)
    state = await backend.alloc(4 * bfs.BFS_STATE_WORDS, np.int32)
    bfs_scratch = bfs.BfsScratch(levels, state)
    owned: list[ResidentBuffer] = [levels, state, *{b.id: b for b in buffers.values()}.values()]
    try:
        stats = await sssp.measure_graph(backend, buffers)
        delta = sssp.choose_delta(*stats)
        candidates = np.flatnonzero(np.diff(graph.offsets) > 0)
        giant = int(np.argmax(np.diff(graph.offsets)))  # in the largest part
        sources = [giant, *(int(s) for s in rng.choice(candidates, runs - 1))]
        for source in sources[:2]:  # warm up: kernels, batches, light graph, CUDA graphs
            await _sssp(backend, buffers, scratch, source)
            await _bfs(backend, buffers, bfs_scratch, source)
        await backend.write(scratch.dist, np.full(graph.vertices, np.float32(-1)))
        words = await _sssp(backend, buffers, scratch, giant)
        found = await backend.read(scratch.dist)
        expected, scipy_s = _scipy(graph, giant)
        error = _max_relative_error(found, expected)
        print(
            f"  check: source {giant} reaches {words['reached']} vertices, max relative "
            f"error {error:.2e} against SciPy; SciPy dijkstra {scipy_s * 1e3:.1f} ms",
            flush=True,
        )
        sssp_rows: list[dict[str, float]] = []
        bfs_rows: list[dict[str, float]] = []
        for r in range(rounds):
            for source in sources:
                sssp_rows.append(await _sssp(backend, buffers, scratch, source))
                bfs_rows.append(await _bfs(backend, buffers, bfs_scratch, source))
            print(
                f"  round {r}: sssp device {_median(sssp_rows[-runs:], 'device_ms'):.3f} ms "
                f"wall {_median(sssp_rows[-runs:], 'wall_ms'):.3f} ms; bfs device "
                f"{_median(bfs_rows[-runs:], 'device_ms'):.3f} ms",
                flush=True,
            )
        sssp_ms = _median(sssp_rows, "device_ms")
        result: dict[str, Any] = {
            "vertices": graph.vertices,
            "edges": graph.edges,
            "delta": delta,
            "max_degree": stats.max_degree,
            "check_source": giant,
            "check_max_relative_error": error,
            "scipy_dijkstra_ms": scipy_s * 1e3,
            "sssp_device_ms": sssp_ms,
            "sssp_wall_ms": _median(sssp_rows, "wall_ms"),
            "sssp_steps": _median(sssp_rows, "steps"),
            "sssp_host_us_per_step": _median(sssp_rows, "host_us_per_step"),
            "sssp_relaxed_per_edge": _median(sssp_rows, "relaxed") / max(graph.edges, 1),
            "sssp_gteps": graph.edges / (sssp_ms * 1e6),
            "bfs_device_ms": _median(bfs_rows, "device_ms"),
            "bfs_wall_ms": _median(bfs_rows, "wall_ms"),
            "bfs_levels": _median(bfs_rows, "levels"),
            "bfs_gteps": graph.edges / (_median(bfs_rows, "device_ms") * 1e6),
            "sssp_over_bfs_device": sssp_ms / _median(bfs_rows, "device_ms"),
            "sssp_over_bfs_wall": _median(sssp_rows, "wall_ms") / _median(bfs_rows, "wall_ms"),
            "scipy_over_sssp_wall": scipy_s * 1e3 / _median(sssp_rows, "wall_ms"),
        }
        result["many"] = await bench_many(backend, buffers, graph, stats, rng, rounds)
        return result
    finally:
        await sssp.free_scratch_buffers(backend, scratch.buffers)
        await sssp.free_scratch_buffers(backend, owned)


async def bench_many(
    backend: va.Backend,
    buffers: Mapping[str, ResidentBuffer],
    graph: Graph,
    stats: sssp.GraphStats,
    rng: np.random.Generator,
    rounds: int,
) -> dict[str, Any]:
    """32 sources' reach counts: as planned (and as lanes) against 32 single runs."""
    count = min(MANY_SOURCES, graph.vertices)
    sources = [int(s) for s in rng.integers(0, graph.vertices, count)]
    budget = 16 << 30
    planned = sssp.plan_many(stats, count, "counts", budget)
    shapes = {"planned": planned, "single": ("sssp", graph.vertices, graph.edges)}
    if planned[0] != "sssp_many":
        lanes = sssp.lanes_for_budget(graph.vertices, graph.edges, count, budget, "counts")
        shapes["lanes"] = ("sssp_many", graph.vertices, graph.edges, lanes, "counts")
    scratches = {name: await sssp.allocate_shape(backend, shape) for name, shape in shapes.items()}
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in shapes}
    try:
        for scratch in scratches.values():
            await _many(backend, buffers, scratch, sources[:2])  # warm up
        for _ in range(rounds):
            for name, scratch in scratches.items():
                rows[name].append(await _many(backend, buffers, scratch, sources))
        sums = {rows[name][0]["checksum"] for name in shapes}
        if len(sums) != 1:
            raise SystemExit(f"many-source reach counts disagree between variants: {sums}")
        out: dict[str, Any] = {"sources": count, "planned_shape": list(planned)}
        for name in shapes:
            out[f"{name}_wall_ms"] = _median(rows[name], "wall_ms")
            out[f"{name}_device_ms"] = _median(rows[name], "device_ms")
            out[f"{name}_steps"] = _median(rows[name], "steps")
        out["single_over_planned_wall"] = out["single_wall_ms"] / out["planned_wall_ms"]
        if "lanes" in shapes:
            out["single_over_lanes_wall"] = out["single_wall_ms"] / out["lanes_wall_ms"]
        print(
            "  many: "
            + ", ".join(f"{name} {out[f'{name}_wall_ms']:.1f} ms" for name in shapes)
            + f" for {count} sources (planned {planned[0]})",
            flush=True,
        )
        return out
    finally:
        for scratch in scratches.values():
            await sssp.free_scratch_buffers(backend, scratch.buffers)


async def main_async(quick: bool, rounds: int) -> dict[str, Any]:
    """Every graph on one backend."""
    rng = np.random.default_rng(SEED)
    kind = "cpu" if quick else "cuda"
    if quick:
        specs = [("rmat20", 10), ("rmat22", 11), ("grid", 48)]
    else:
        specs = [("rmat20", 20), ("rmat22", 22), ("grid", 2048)]
    results: dict[str, Any] = {}
    async with va.open_backend(kind) as backend:
        summary: dict[str, Any] = {
            "benchmark": "sssp",
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            **environment(backend),
            "python": platform.python_version(),
            "event_loop": "asyncio",
            "backend": kind,
            "quick": quick,
            "seed": SEED,
            "rounds": rounds,
        }
        for label, size in specs:
            t0 = time.perf_counter()
            graph = grid_graph(rng, size) if label == "grid" else rmat_graph(rng, size)
            print(f"built {graph.name} in {time.perf_counter() - t0:.1f} s", flush=True)
            runs = 4 if label == "grid" else 8
            results[label] = {"graph": graph.name} | await bench_graph(
                backend, graph, rng, rounds, runs
            )
            del graph
    rmat20, rmat22, grid = results["rmat20"], results["rmat22"], results["grid"]
    summary["results"] = results
    summary["ratios"] = {
        "rmat20 scipy / sssp (wall)": rmat20["scipy_over_sssp_wall"],
        "rmat22 sssp / bfs (device)": rmat22["sssp_over_bfs_device"],
        "rmat22 sssp / bfs (wall)": rmat22["sssp_over_bfs_wall"],
        "grid host us per step": grid["sssp_host_us_per_step"],
    }
    summary["targets"] = {
        "rmat20: SSSP >= 50x SciPy dijkstra": 50.0,
        "rmat22: SSSP <= 4x BFS (device time)": 4.0,
        "grid: host time per step <= 10 us": 10.0,
    }
    summary["targets_met"] = {
        "rmat20: SSSP >= 50x SciPy dijkstra": rmat20["scipy_over_sssp_wall"] >= 50,
        "rmat22: SSSP <= 4x BFS (device time)": rmat22["sssp_over_bfs_device"] <= 4,
        "grid: host time per step <= 10 us": grid["sssp_host_us_per_step"] <= 10,
    }
    return summary


def main() -> None:
    """Run, print the summary, write it to --out."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="CPU backend, tiny graphs")
    args = parser.parse_args()
    summary = anyio.run(main_async, args.quick, args.rounds)
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
