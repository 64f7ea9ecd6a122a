"""NetworkX's own implementations against ``backend="vyre"``, on one graph, in one run.

An R-MAT graph (scale 18, edge factor 16, directed) built as a ``networkx.DiGraph``
(its undirected copy for components). For each function, NetworkX's time, then
vyre's first call (the conversion and the upload included) and its cached call (the
graph converted and resident already), as ratios; every vyre result is checked
against NetworkX's first. Functions: ``pagerank``, ``single_source_shortest_path_length``
(one source), ``connected_components`` (undirected) and
``all_pairs_shortest_path_length`` restricted to the first 1,000 sources (NetworkX's
time for those is measured on ``--nx-sources`` of them and scaled, and says so).

Beside each, the result floor: the time to build the same answer again (the dicts and
sets NetworkX returns) from lists already in memory. No backend that returns NetworkX's
types can be quicker than that, so NetworkX's time over the floor is the ceiling of
any backend's ratio.

Targets: cached calls >= 10x NetworkX on the CPU backend and >= 100x on CUDA; first
calls, conversion included, no slower than NetworkX.

Usage: ``python bench/networkx.py --out results.json [--scale 18] [--backend auto|cpu|cuda]
[--nx-sources 20] [--quick]`` (``--quick``: scale 11, the CPU backend).
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# This file is named for what it measures, so its folder must not shadow the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent]

import networkx as nx  # noqa: E402 (after the path above)
import numpy as np  # noqa: E402

SOURCES = 1000


def build(scale: int) -> tuple[nx.DiGraph, nx.Graph]:
    """The R-MAT graph as NetworkX graphs (directed, and its undirected copy)."""
    import vyre_async as va

    graph = va.graphs.rmat(scale, 16, seed=scale, symmetric=False)
    rows = np.repeat(np.arange(graph.num_vertices), np.diff(graph.offsets))
    directed = nx.DiGraph()
    directed.add_nodes_from(range(graph.num_vertices))
    directed.add_edges_from(zip(rows.tolist(), graph.indices.tolist(), strict=True))
    return directed, directed.to_undirected()


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def same(name: str, got: Any, want: Any) -> None:
    if name == "pagerank":
        worst = max(abs(got[n] - want[n]) for n in want)
        if worst > 1e-5:
            raise SystemExit(f"pagerank differs from NetworkX by {worst}")
    elif got != want:
        raise SystemExit(f"{name} differs from NetworkX")


def result_floor(got: Any) -> float:
    """Seconds to build ``got`` again from lists already in memory: the least any
    backend spends handing NetworkX its answer as NetworkX's types (dicts, sets)."""
    if isinstance(got, list):  # components: a list of sets
        parts = [list(part) for part in got]
        return timed(lambda: [set(part) for part in parts])[0]
    if got and isinstance(next(iter(got.values())), dict):  # all pairs: dict of dicts
        rows = [(k, list(v), list(v.values())) for k, v in got.items()]
        return timed(lambda: {k: dict(zip(keys, vals, strict=True)) for k, keys, vals in rows})[0]
    keys, vals = list(got), list(got.values())
    return timed(lambda: dict(zip(keys, vals, strict=True)))[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--scale", type=int, default=18)
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--nx-sources", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.scale, args.backend, args.nx_sources = 11, "cpu", 5
    os.environ["VYRE_ASYNC_NX_BACKEND"] = args.backend
    nx.config.warnings_to_ignore.add("cache")
    import vyre_async.networkx as vx
    from vyre_async.networkx._portal import loop

    started = time.perf_counter()
    directed, undirected = build(args.scale)
    print(
        f"R-MAT {args.scale}: {directed.number_of_nodes():,} nodes, "
        f"{directed.number_of_edges():,} edges (built in {time.perf_counter() - started:.1f} s)"
    )
    source = max(directed, key=directed.out_degree)
    first = list(itertools.islice(directed, SOURCES))

    def all_pairs(graph: Any, count: int, **backend: str) -> dict[Any, Any]:
        pairs = nx.all_pairs_shortest_path_length(graph, **backend)
        return dict(itertools.islice(pairs, count))

    cases: dict[str, tuple[Any, Callable[..., Any]]] = {
        "pagerank": (directed, lambda g, **b: nx.pagerank(g, **b)),
        "single_source_shortest_path_length": (
            directed,
            lambda g, **b: nx.single_source_shortest_path_length(g, source, **b),
        ),
        "connected_components": (
            undirected,
            lambda g, **b: list(nx.connected_components(g, **b)),
        ),
    }
    results: dict[str, dict[str, float]] = {}
    # The backend starts (its device and kernels) before any timing.
    loop.backend  # noqa: B018
    for name, (graph, call) in cases.items():
        nx_s, want = timed(lambda g=graph, c=call: c(g))
        graph.__networkx_cache__.clear()  # each first call converts and uploads
        first_s, got = timed(lambda g=graph, c=call: c(g, backend="vyre"))
        same(name, got, want)
        cached = [
            timed(lambda g=graph, c=call: c(g, backend="vyre"))[0] for _ in range(args.rounds)
        ]
        results[name] = {
            "networkx_s": nx_s,
            "first_s": first_s,
            "cached_s": statistics.median(cached),
            "result_floor_s": statistics.median(result_floor(got) for _ in range(args.rounds)),
        }
    # All pairs from the first 1,000 sources: NetworkX on a few of them, scaled.
    few = args.nx_sources
    nx_few, want = timed(lambda: all_pairs(directed, few))
    directed.__networkx_cache__.clear()
    first_s, got = timed(lambda: all_pairs(directed, SOURCES, backend="vyre"))
    same("all_pairs", {k: got[k] for k in first[:few]}, want)
    cached = [
        timed(lambda: all_pairs(directed, SOURCES, backend="vyre"))[0] for _ in range(args.rounds)
    ]
    results["all_pairs_shortest_path_length (1,000 sources)"] = {
        "networkx_s": nx_few * SOURCES / few,
        "networkx_measured_sources": few,
        "first_s": first_s,
        "cached_s": statistics.median(cached),
        "result_floor_s": statistics.median(result_floor(got) for _ in range(args.rounds)),
    }
    backend = loop.backend
    print(f"backend: {backend.kind} ({backend.device_name}); conversions: {vx.conversions()}")
    target = 100.0 if backend.kind == "cuda" else 10.0
    ratios: dict[str, float] = {}
    met: dict[str, bool] = {}
    for name, r in results.items():
        cached_x, first_x = r["networkx_s"] / r["cached_s"], r["networkx_s"] / r["first_s"]
        ratios[f"{name}: cached"] = cached_x
        ratios[f"{name}: first"] = first_x
        ceiling = ratios[f"{name}: ceiling"] = r["networkx_s"] / r["result_floor_s"]
        met[f"{name}: cached >= {target:g}x NetworkX"] = cached_x >= target
        met[f"{name}: first >= 1x NetworkX"] = first_x >= 1.0
        print(
            f"{name:<50} networkx {r['networkx_s']:8.3f} s  first {r['first_s']:8.3f} s "
            f"({first_x:6.1f}x)  cached {r['cached_s']:8.4f} s ({cached_x:7.1f}x)  "
            f"result floor {r['result_floor_s']:8.4f} s (ceiling {ceiling:7.1f}x)"
        )
    info = getattr(backend, "device_info", None)  # the CUDA backend's
    summary = {
        "benchmark": "networkx",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": {
            "backend": backend.kind,
            "name": backend.device_name,
            "driver_version": None if info is None else info.driver_version,
        },
        "python": platform.python_version(),
        "networkx": nx.__version__,
        "scale": args.scale,
        "nodes": directed.number_of_nodes(),
        "edges": directed.number_of_edges(),
        "rounds": args.rounds,
        "results": results,
        "ratios": ratios,
        "targets": {"cached": target, "first": 1.0},
        "targets_met": met,
    }
    with open(args.out, "w") as file:
        json.dump(summary, file, indent=2)
    for key, ok in met.items():
        print(f"{key:<70} {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
