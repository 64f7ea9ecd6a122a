"""Weakly connected components on one GPU against SciPy's ``connected_components``.

On R-MAT scale 22 (edge factor 16, symmetric, deduplicated, built on the device), in
one process:

- SciPy's ``connected_components`` on the same graph (CPU), both as a directed graph
  with ``connection="weak"`` and as an undirected one (the same answer for a symmetric
  graph, and SciPy's faster path), one run each;
- ``session.components()`` on a resident session: the labels are checked against
  SciPy's (each component labelled by its smallest vertex id) before anything is
  timed, then ``--rounds`` runs, medians of wall time (the caller's, labels read back
  to the host included), device time (CUDA timing events around each submission) and
  rounds (hooking and pointer-jumping rounds, from the session's figures);
- ``session.component_sizes()`` (the labels, then each component's size on the host).

Target, as a ratio in one run: ``components()`` >= 30x the faster SciPy call (wall).

Usage: ``python bench/components.py --out results.json [--rounds 5] [--quick]``
(``--quick``: the CPU backend and R-MAT 12, to try the script anywhere).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time
from typing import Any

import anyio
import numpy as np
from device_record import environment, write_summary
from scipy.sparse import csgraph, csr_array

import vyre_async as va
from vyre_async.algorithms.rmat import rmat_on_device
from vyre_async.graphs import rmat, rmat_params

SEED = 20261128
TARGET = 30.0


def _median(rows: list[dict[str, float]], key: str) -> float:
    return float(statistics.median(row[key] for row in rows))


def _scipy(graph: va.graphs.CsrGraph) -> dict[str, Any]:
    """SciPy's components, both ways, timed once each, labels mapped to smallest ids."""
    n = graph.num_vertices
    # float64 data, as csgraph keeps it: SciPy's time holds no conversion of ours.
    matrix = csr_array(
        (np.ones(graph.num_edges, np.float64), graph.indices, graph.offsets), shape=(n, n)
    )
    t0 = time.perf_counter()
    count, labels = csgraph.connected_components(matrix, directed=True, connection="weak")
    weak_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    count_u, _ = csgraph.connected_components(matrix, directed=False)
    undirected_s = time.perf_counter() - t0
    if count_u != count:
        raise SystemExit(f"SciPy disagrees with itself: {count} weak, {count_u} undirected")
    smallest = np.full(count, n, np.int64)
    np.minimum.at(smallest, labels, np.arange(n))
    return {
        "labels": smallest[labels],
        "components": int(count),
        "largest": int(np.bincount(labels).max()),
        "weak_s": weak_s,
        "undirected_s": undirected_s,
    }


async def _components(session: va.ResidentGraphSession) -> dict[str, float]:
    before = session.stats()
    t0 = time.perf_counter()
    await session.components()
    wall = time.perf_counter() - t0
    after = session.stats()
    return {
        "wall_ms": wall * 1e3,
        "device_ms": (after.device_ns - before.device_ns) / 1e6,
        "rounds": after.levels - before.levels,
        "host_syncs": after.host_syncs - before.host_syncs,
    }


async def _sizes(session: va.ResidentGraphSession) -> dict[str, float]:
    t0 = time.perf_counter()
    labels, sizes = await session.component_sizes()
    return {
        "wall_ms": (time.perf_counter() - t0) * 1e3,
        "components": labels.size,
        "largest": int(sizes.max(initial=0)),
    }


async def bench(backend: va.Backend, graph: va.graphs.CsrGraph, rounds: int) -> dict[str, Any]:
    """Everything measured on one graph."""
    print(f"{graph.num_vertices} vertices, {graph.num_edges} edges", flush=True)
    scipy = await anyio.to_thread.run_sync(_scipy, graph)
    print(
        f"  scipy: {scipy['components']} components (largest {scipy['largest']}); weak "
        f"{scipy['weak_s']:.2f} s, undirected {scipy['undirected_s']:.2f} s",
        flush=True,
    )
    async with va.resident_graph(backend, graph) as session:
        first = await session.components()  # warm up: kernels, batches, the scratch
        if not np.array_equal(first, scipy["labels"]):
            wrong = int(np.flatnonzero(first != scipy["labels"])[0])
            raise SystemExit(
                f"labels disagree with SciPy's at vertex {wrong}: {int(first[wrong])} "
                f"against {int(scipy['labels'][wrong])}"
            )
        print("  check: labels equal SciPy's (smallest id per component)", flush=True)
        rows = [await _components(session) for _ in range(rounds)]
        sizes = [await _sizes(session) for _ in range(rounds)]
    if (sizes[0]["components"], sizes[0]["largest"]) != (scipy["components"], scipy["largest"]):
        raise SystemExit(f"component_sizes disagrees with SciPy: {sizes[0]}")
    wall = _median(rows, "wall_ms")
    scipy_best_ms = min(scipy["weak_s"], scipy["undirected_s"]) * 1e3
    print(
        f"  components(): wall {wall:.2f} ms, device {_median(rows, 'device_ms'):.2f} ms, "
        f"{_median(rows, 'rounds'):.0f} rounds; component_sizes(): "
        f"{_median(sizes, 'wall_ms'):.2f} ms; {scipy_best_ms / wall:.1f}x SciPy",
        flush=True,
    )
    return {
        "vertices": graph.num_vertices,
        "edges": graph.num_edges,
        "components": scipy["components"],
        "largest_component": scipy["largest"],
        "scipy_weak_ms": scipy["weak_s"] * 1e3,
        "scipy_undirected_ms": scipy["undirected_s"] * 1e3,
        "components_wall_ms": wall,
        "components_wall_ms_min": min(row["wall_ms"] for row in rows),
        "components_device_ms": _median(rows, "device_ms"),
        "components_rounds": _median(rows, "rounds"),
        "components_host_syncs": _median(rows, "host_syncs"),
        "component_sizes_wall_ms": _median(sizes, "wall_ms"),
        "scipy_over_components_wall": scipy_best_ms / wall,
    }


async def main_async(quick: bool, rounds: int) -> dict[str, Any]:
    """The graph on one backend."""
    kind = "cpu" if quick else "cuda"
    scale = 12 if quick else 22
    async with va.open_backend(kind) as backend:
        summary: dict[str, Any] = {
            "benchmark": "components",
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            **environment(backend),
            "python": platform.python_version(),
            "event_loop": "asyncio",
            "backend": kind,
            "quick": quick,
            "seed": SEED,
            "rounds": rounds,
        }
        t0 = time.perf_counter()
        if quick:
            graph = rmat(scale, 16, seed=SEED)
        else:
            graph = await rmat_on_device(backend, rmat_params(scale, 16, SEED))
        print(f"built rmat{scale} in {time.perf_counter() - t0:.1f} s", flush=True)
        result = {"graph": f"rmat{scale}"} | await bench(backend, graph, rounds)
    label = f"rmat{scale}: components() >= {TARGET:g}x SciPy connected_components (wall)"
    summary["results"] = {f"rmat{scale}": result}
    summary["ratios"] = {
        f"rmat{scale} scipy / components (wall)": result["scipy_over_components_wall"]
    }
    summary["targets"] = {label: TARGET}
    summary["targets_met"] = {label: result["scipy_over_components_wall"] >= TARGET}
    return summary


def main() -> None:
    """Run, print the summary, write it to --out."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="CPU backend, R-MAT 12")
    args = parser.parse_args()
    summary = anyio.run(main_async, args.quick, args.rounds)
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
