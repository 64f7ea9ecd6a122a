"""k-hop sets on one GPU: ``session.khop(seed, 2, out=...)`` against PyTorch Geometric.

On R-MAT scale 18 and 20 (edge factor 16, symmetric), for the same seeds (vertices
with out-edges, drawn from a seeded generator) on the same graph:

- ``session.khop(seed, 2, out=device array)``: the traversal and the compaction on
  the device, the set written into a PyTorch tensor (a CuPy array where PyTorch is
  missing) and only its length returned;
- PyTorch Geometric's ``k_hop_subgraph(seed, 2, edge_index, flow="target_to_source")``
  over the graph's ``edge_index`` on the device (out-edges, as ``khop`` follows them),
  until its subset is ready (``torch.cuda.synchronize``);
- ``session.khop(seed, 2)``: the set read back into a new host array;
- ``bfs_many(seeds, k=2)`` per query, with every vertex's level read back
  (``readback="levels"``) and with counts only.

Before timing, every seed's set is checked three ways: the device array's head, the
host array, and PyG's subset (SciPy's levels with ``--quick``) must be equal. Variants
are interleaved seed by seed, ``--rounds`` times; the figures are medians of wall time
per query. Target, as a ratio in one run: ``khop`` into a device array >= 1.5x faster
than ``k_hop_subgraph`` at both scales; ``bfs_many`` per query is reported.

Usage: ``python bench/khop.py --out results.json [--rounds 5] [--seeds 32] [--quick]``
(``--quick``: the CPU backend, a ``ResidentBuffer`` as the device array, tiny graphs,
no PyTorch or PyG).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time
from typing import Any

import anyio
import numpy as np
from device_record import environment, write_summary
from scipy.sparse import csgraph, csr_array

import vyre_async as va
from vyre_async.graphs import CsrGraph, rmat

SEED = 20261129
K = 2
TARGET = 1.5


def _optional_torch() -> tuple[Any, Any]:
    """PyTorch (with CUDA) and PyG's ``k_hop_subgraph``, or ``None`` for what is missing."""
    try:
        import torch
    except ImportError:
        return None, None
    if not torch.cuda.is_available():
        return None, None
    try:
        from torch_geometric.utils import k_hop_subgraph
    except ImportError:
        return torch, None
    return torch, k_hop_subgraph


def _seeds(rng: np.random.Generator, graph: CsrGraph, count: int) -> list[int]:
    candidates = np.flatnonzero(np.diff(graph.offsets) > 0)
    return [int(s) for s in rng.choice(candidates, count, replace=False)]


def _scipy_within(graph: CsrGraph, seed: int) -> np.ndarray:
    n = graph.num_vertices
    matrix = csr_array((np.ones(graph.num_edges), graph.indices, graph.offsets), shape=(n, n))
    dist = csgraph.shortest_path(matrix, directed=True, unweighted=True, indices=seed)
    return np.flatnonzero(dist <= K).astype(np.int32)


class DeviceOut:
    """The array khop writes into: a PyTorch tensor, a CuPy array or a ResidentBuffer."""

    def __init__(self, backend: va.Backend, num_vertices: int, torch: Any) -> None:
        self.backend = backend
        self.array: Any = None
        self.name = ""
        self.n = num_vertices
        self.torch = torch

    async def __aenter__(self) -> DeviceOut:
        if self.backend.kind == "cuda" and self.torch is not None:
            self.array = self.torch.empty(self.n, dtype=self.torch.int32, device="cuda")
            self.name = "torch.Tensor (cuda)"
        else:
            cupy = None
            if self.backend.kind == "cuda":
                try:
                    import cupy
                except ImportError:
                    cupy = None
            if cupy is not None:
                self.array, self.name = cupy.empty(self.n, cupy.int32), "cupy.ndarray"
            else:
                self.array = await self.backend.alloc(4 * self.n, np.int32)
                self.name = "ResidentBuffer"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if isinstance(self.array, va.ResidentBuffer):
            await self.backend.free(self.array)

    async def head(self, count: int) -> np.ndarray:
        """The first ``count`` elements, on the host (for checking only)."""
        if isinstance(self.array, va.ResidentBuffer):
            return await self.backend.read(self.array, 0, count)
        if self.torch is not None and isinstance(self.array, self.torch.Tensor):
            return np.asarray(self.array[:count].cpu().numpy())
        return np.asarray(self.array[:count].get())


def _median_ms(samples: list[float]) -> float:
    return float(statistics.median(samples)) * 1e3


async def bench_graph(
    backend: va.Backend,
    graph: CsrGraph,
    seeds: list[int],
    rounds: int,
    torch: Any,
    k_hop_subgraph: Any,
) -> dict[str, Any]:
    """Check, then time, every variant on one graph."""
    edge_index = None
    if k_hop_subgraph is not None:
        rows = np.repeat(np.arange(graph.num_vertices, dtype=np.int64), np.diff(graph.offsets))
        host = np.stack([rows, graph.indices.astype(np.int64)])
        edge_index = torch.from_numpy(host).cuda()
        torch.cuda.synchronize()

    def pyg(seed: int) -> Any:
        subset = k_hop_subgraph(seed, K, edge_index, flow="target_to_source")[0]
        torch.cuda.synchronize()
        return subset

    async with (
        va.resident_graph(backend, graph) as session,
        DeviceOut(backend, graph.num_vertices, torch) as out,
    ):
        sizes = []
        for seed in seeds:  # check (and warm up) every variant
            count = await session.khop(seed, K, out=out.array)
            on_device = await out.head(count)
            on_host = await session.khop(seed, K)
            if not np.array_equal(on_device, on_host):
                raise SystemExit(f"seed {seed}: khop into {out.name} and into the host differ")
            if k_hop_subgraph is not None:
                theirs = pyg(seed).cpu().numpy()
                if not np.array_equal(on_host, theirs):
                    raise SystemExit(f"seed {seed}: khop and PyG's k_hop_subgraph differ")
            elif not np.array_equal(on_host, _scipy_within(graph, seed)):
                raise SystemExit(f"seed {seed}: khop and SciPy's levels differ")
            sizes.append(count)
        await session.bfs_many(seeds, k=K, readback="levels")
        await session.bfs_many(seeds, k=K, readback="counts")

        times: dict[str, list[float]] = {"device_out": [], "host": [], "pyg": []}
        many: dict[str, list[float]] = {"levels": [], "counts": []}
        for _ in range(rounds):
            for seed in seeds:
                t0 = time.perf_counter()
                await session.khop(seed, K, out=out.array)
                times["device_out"].append(time.perf_counter() - t0)
                if k_hop_subgraph is not None:
                    t0 = time.perf_counter()
                    pyg(seed)
                    times["pyg"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                await session.khop(seed, K)
                times["host"].append(time.perf_counter() - t0)
            for readback in ("levels", "counts"):
                t0 = time.perf_counter()
                await session.bfs_many(seeds, k=K, readback=readback)  # type: ignore[arg-type]
                many[readback].append((time.perf_counter() - t0) / len(seeds))
        result: dict[str, Any] = {
            "vertices": graph.num_vertices,
            "edges": graph.num_edges,
            "seeds": len(seeds),
            "set_size_median": float(statistics.median(sizes)),
            "out": out.name,
            "khop_device_out_ms": _median_ms(times["device_out"]),
            "khop_host_ms": _median_ms(times["host"]),
            "bfs_many_levels_ms_per_query": _median_ms(many["levels"]),
            "bfs_many_counts_ms_per_query": _median_ms(many["counts"]),
        }
        if times["pyg"]:
            result["pyg_k_hop_subgraph_ms"] = _median_ms(times["pyg"])
            ours = result["khop_device_out_ms"]
            result["pyg_over_khop_device_out"] = result["pyg_k_hop_subgraph_ms"] / ours
            result["pyg_over_bfs_many_levels"] = (
                result["pyg_k_hop_subgraph_ms"] / result["bfs_many_levels_ms_per_query"]
            )
    print(
        f"  {graph.num_vertices} vertices: khop(out={out.name}) "
        f"{result['khop_device_out_ms']:.3f} ms, khop (host) {result['khop_host_ms']:.3f} ms"
        + (
            f", PyG k_hop_subgraph {result['pyg_k_hop_subgraph_ms']:.3f} ms "
            f"({result['pyg_over_khop_device_out']:.2f}x)"
            if "pyg_k_hop_subgraph_ms" in result
            else ""
        )
        + f", bfs_many levels {result['bfs_many_levels_ms_per_query']:.3f} ms/query, "
        f"counts {result['bfs_many_counts_ms_per_query']:.3f} ms/query",
        flush=True,
    )
    return result


async def main_async(quick: bool, rounds: int, count: int, torch: Any, pyg: Any) -> dict[str, Any]:
    """Both graphs on one backend."""
    rng = np.random.default_rng(SEED)
    kind = "cpu" if quick else "cuda"
    scales = {"rmat18": 10 if quick else 18, "rmat20": 11 if quick else 20}
    results: dict[str, Any] = {}
    async with va.open_backend(kind) as backend:
        summary: dict[str, Any] = {
            "benchmark": "khop",
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            **environment(backend),
            "python": platform.python_version(),
            "torch": getattr(torch, "__version__", None),
            "torch_geometric": _pyg_version() if pyg is not None else None,
            "event_loop": "asyncio",
            "backend": kind,
            "quick": quick,
            "seed": SEED,
            "rounds": rounds,
            "k": K,
        }
        for label, scale in scales.items():
            t0 = time.perf_counter()
            graph = rmat(scale, 16, seed=scale)
            print(f"built {label} (scale {scale}) in {time.perf_counter() - t0:.1f} s", flush=True)
            seeds = _seeds(rng, graph, min(count, graph.num_vertices))
            results[label] = await bench_graph(backend, graph, seeds, rounds, torch, pyg)
            del graph
    summary["results"] = results
    names = {label: f"{label}: khop(k=2) into a device array >= 1.5x PyG" for label in scales}
    summary["targets"] = dict.fromkeys(names.values(), TARGET)
    if pyg is None:
        summary["ratios"] = {}
        summary["targets_met"] = {}
        summary["not_measured"] = "PyTorch Geometric (and PyTorch with CUDA) not available here"
        return summary
    summary["ratios"] = {
        f"{label} PyG / khop(out=device)": results[label]["pyg_over_khop_device_out"]
        for label in scales
    } | {
        f"{label} PyG / bfs_many(k=2, levels) per query": results[label]["pyg_over_bfs_many_levels"]
        for label in scales
    }
    summary["targets_met"] = {
        name: results[label]["pyg_over_khop_device_out"] >= TARGET for label, name in names.items()
    }
    return summary


def _pyg_version() -> str | None:
    try:
        import torch_geometric
    except ImportError:
        return None
    return str(torch_geometric.__version__)


def main() -> None:
    """Run, print the summary, write it to --out."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="CPU backend, tiny graphs, no PyG")
    args = parser.parse_args()
    torch, pyg = (None, None) if args.quick else _optional_torch()
    if not args.quick and pyg is None:
        print("PyTorch Geometric (or PyTorch with CUDA) is missing: no ratios", file=sys.stderr)
    summary = anyio.run(main_async, args.quick, args.rounds, args.seeds, torch, pyg)
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
