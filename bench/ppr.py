"""Personalized PageRank of 1,024 seeds on R-MAT 20 against PyTorch and single queries.

On R-MAT scale 20 (edge factor 16, symmetric, deduplicated), each seed's top 10
vertices after a fixed number of power iterations (``--iterations``, default 20, with a
tolerance no float32 column reaches, so every side runs them all):

- ``session.ppr_many(seeds, top_k=10)``, the 1,024 seeds as the columns of one run (a
  budget that fits them in one pass);
- the same power iteration as a PyTorch user writes it: ``torch.sparse.mm`` of the
  in-edge CSR tensor (``1 / out_degree`` per edge, int32 indices) by a dense
  ``V x 1024`` float32 matrix per iteration, the dangling mass back to the seeds, the
  same tolerance test, then ``torch.topk`` and a copy to the host;
- 1,024 single ``session.ppr(seed, top_k=10)`` calls in turn, without batching: timed
  on the first ``--singles`` seeds (default 32) and scaled to 1,024, stated as such.

Before timing, the top 10 of every seed are checked against the PyTorch iterate (the
ranks it holds at our vertices, and no vertex it ranks clearly higher left out); with
``--quick`` (the CPU backend, R-MAT scale 9, 64 seeds) against a float64 NumPy
iteration, and PyTorch only where it is installed. Targets, as ratios in one run:
``ppr_many`` >= 1.0x PyTorch, >= 30x the single calls (wall time, medians of
``--rounds``).

Usage: ``python bench/ppr.py --out results.json [--rounds 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import platform
import statistics
import time
from typing import Any

import anyio
import numpy as np
from device_record import environment, write_summary

import vyre_async as va
from vyre_async.algorithms import ppr
from vyre_async.graphs import CsrGraph, rmat

SEED = 20261207
TOP_K = 10
DAMPING = 0.85
#: Below any L1 change a float32 column reaches: every side runs every iteration.
TOL = 1e-12


def _in_edges(graph: CsrGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The in-edge CSR (row v: the sources u of u -> v), each edge's 1 / out_degree[u],
    and the out-degrees."""
    degree = graph.out_degree()
    transpose = graph.transpose()
    src = transpose.indices
    shares = (np.float32(1.0) / degree[src].astype(np.float32)).astype(np.float32)
    return transpose.offsets.astype(np.int64), src, shares, degree


def _power_float64(graph: CsrGraph, seeds: np.ndarray, iterations: int) -> np.ndarray:
    """``iterations`` power iterations in float64 from the seeds (the --quick check)."""
    import scipy.sparse as sp

    offsets, src, shares, degree = _in_edges(graph)
    n = graph.num_vertices
    walk = sp.csr_array((shares.astype(np.float64), src, offsets), shape=(n, n))
    personal = np.zeros((n, seeds.size))
    personal[seeds, np.arange(seeds.size)] = 1.0
    x = personal.copy()
    dangling = degree == 0
    for _ in range(iterations):
        x = DAMPING * (walk @ x) + ((1 - DAMPING) + DAMPING * x[dangling].sum(axis=0)) * personal
    return np.asarray(x.T)


class TorchPower:
    """The power iteration in PyTorch: ``torch.sparse.mm`` on a CSR tensor per iteration."""

    def __init__(self, graph: CsrGraph, device: str) -> None:
        import torch

        self.torch = torch
        self.device = device
        offsets, src, shares, degree = _in_edges(graph)
        n = graph.num_vertices
        try:
            self.walk = torch.sparse_csr_tensor(
                torch.from_numpy(offsets.astype(np.int32)),
                torch.from_numpy(src.astype(np.int32)),
                torch.from_numpy(shares),
                size=(n, n),
            ).to(device)
            self.index_dtype = "int32"
        except (RuntimeError, TypeError):
            self.walk = torch.sparse_csr_tensor(
                torch.from_numpy(offsets),
                torch.from_numpy(src.astype(np.int64)),
                torch.from_numpy(shares),
                size=(n, n),
            ).to(device)
            self.index_dtype = "int64"
        self.dangling = torch.from_numpy((degree == 0).astype(np.float32)).to(device)
        self.n = n

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def run(self, seeds: np.ndarray, iterations: int) -> tuple[Any, np.ndarray, np.ndarray]:
        """The iterate, and each seed's top k (vertices, ranks) on the host."""
        torch = self.torch
        width = seeds.size
        rows = torch.from_numpy(seeds.astype(np.int64)).to(self.device)
        cols = torch.arange(width, device=self.device)
        x = torch.zeros((self.n, width), dtype=torch.float32, device=self.device)
        x[rows, cols] = 1.0
        for _ in range(iterations):
            restart = (1.0 - DAMPING) + DAMPING * (self.dangling @ x)
            fresh = DAMPING * torch.sparse.mm(self.walk, x)
            fresh[rows, cols] += restart
            change = (fresh - x).abs().sum(dim=0)
            x = fresh
            if bool((change < TOL).all()):
                break
        ranks, vertices = torch.topk(x, TOP_K, dim=0)
        return x, vertices.T.cpu().numpy().astype(np.int32), ranks.T.cpu().numpy()


def _check(ranks: np.ndarray, theirs: np.ndarray) -> float:
    """Our top-k ranks against another iterate's ranks at the same vertices: the largest
    relative difference (exits above 1e-3)."""
    worst = float(np.max(np.abs(ranks - theirs) / np.maximum(theirs, 1e-30)))
    if worst > 1e-3:
        raise SystemExit(f"top-k ranks differ from the other side by {worst:.3g} (relative)")
    return worst


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


async def bench(
    backend: va.Backend,
    graph: CsrGraph,
    seeds: np.ndarray,
    torch_device: str | None,
    rounds: int,
    iterations: int,
    singles: int,
) -> dict[str, Any]:
    """Everything measured on one graph."""
    n = graph.num_vertices
    result: dict[str, Any] = {"vertices": n, "edges": graph.num_edges, "seeds": int(seeds.size)}
    params = {"top_k": TOP_K, "tol": TOL, "max_iter": iterations}
    async with va.resident_graph(backend, graph) as session:
        budget = (
            session.stats().graph_bytes_uploaded
            + 4 * graph.num_edges
            + ppr.scratch_nbytes(n, ppr.columns_for(seeds.size), TOP_K)
            + (1 << 20)
        )
        t0 = time.perf_counter()
        await session.ppr_many(seeds, budget_bytes=budget, **params)  # warm up
        await session.ppr(int(seeds[0]), **params)
        print(f"  warm-up (kernels, shares, scratch) {time.perf_counter() - t0:.2f} s", flush=True)
        many_s: list[float] = []
        found: Any = None
        for _ in range(rounds):
            t0 = time.perf_counter()
            found = await session.ppr_many(seeds, budget_bytes=budget, **params)
            many_s.append(time.perf_counter() - t0)
        single_s: list[float] = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for seed in seeds[:singles].tolist():
                await session.ppr(seed, **params)
            single_s.append((time.perf_counter() - t0) * seeds.size / singles)
        stats = session.stats()
    assert isinstance(found, ppr.TopRanks)
    result |= {
        "many_wall_ms": _median(many_s) * 1e3,
        "many_ms_per_iteration": _median(many_s) * 1e3 / iterations,
        "singles_timed": singles,
        "singles_wall_ms_scaled_to_all": _median(single_s) * 1e3,
        "single_wall_ms": _median(single_s) * 1e3 / seeds.size,
        "session_device_ms_all_runs": stats.device_ns / 1e6,
    }
    result["singles_over_many"] = result["singles_wall_ms_scaled_to_all"] / result["many_wall_ms"]
    print(
        f"  ppr_many {result['many_wall_ms']:.1f} ms ({result['many_ms_per_iteration']:.2f} ms "
        f"per iteration); single ppr {result['single_wall_ms']:.2f} ms each ({singles} timed, "
        f"scaled to {seeds.size}: {result['singles_wall_ms_scaled_to_all']:.0f} ms)",
        flush=True,
    )
    if torch_device is None:
        want = _power_float64(graph, seeds, iterations)
        result["check"] = "float64 NumPy"
        result["check_max_relative_difference"] = _check(
            found.ranks, np.take_along_axis(want, found.vertices, axis=1)
        )
        print(f"  checked against float64 NumPy: {result['check_max_relative_difference']:.2e}")
        return result
    import torch

    torch_power = TorchPower(graph, torch_device)
    x, _, _ = torch_power.run(seeds, iterations)  # warm up, and the check
    index = torch.from_numpy(found.vertices.T.astype(np.int64)).to(torch_device)
    at_ours = x[index, torch.arange(seeds.size, device=torch_device)].T.cpu().numpy()
    result["check"] = "PyTorch"
    result["check_max_relative_difference"] = _check(found.ranks, at_ours)
    kth = torch.topk(x, TOP_K, dim=0).values[-1].cpu().numpy()
    missed = kth > found.ranks[:, -1] * (1 + 1e-3)
    if missed.any():
        raise SystemExit(f"PyTorch ranks a vertex clearly above our k-th for {missed.sum()} seeds")
    del x
    torch_s: list[float] = []
    for _ in range(rounds):
        torch_power.sync()
        t0 = time.perf_counter()
        torch_power.run(seeds, iterations)
        torch_power.sync()
        torch_s.append(time.perf_counter() - t0)
    result |= {
        "torch_index_dtype": torch_power.index_dtype,
        "torch_wall_ms": _median(torch_s) * 1e3,
        "torch_ms_per_iteration": _median(torch_s) * 1e3 / iterations,
    }
    result["torch_over_many"] = result["torch_wall_ms"] / result["many_wall_ms"]
    print(
        f"  PyTorch sparse.mm {result['torch_wall_ms']:.1f} ms; checked: max relative "
        f"difference {result['check_max_relative_difference']:.2e}",
        flush=True,
    )
    return result


async def main_async(quick: bool, rounds: int, iterations: int, singles: int) -> dict[str, Any]:
    """One graph on one backend."""
    rng = np.random.default_rng(SEED)
    kind, scale, count = ("cpu", 9, 64) if quick else ("cuda", 20, 1024)
    has_torch = importlib.util.find_spec("torch") is not None
    torch_device = None if not has_torch else ("cpu" if quick else "cuda")
    if quick and has_torch:
        torch_device = "cpu"
    t0 = time.perf_counter()
    graph = rmat(scale, 16, seed=scale)
    print(f"built rmat{scale}: {graph.num_vertices} vertices, {graph.num_edges} edges in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)  # fmt: skip
    seeds = rng.choice(np.flatnonzero(graph.out_degree() > 0), count, replace=False)
    async with va.open_backend(kind) as backend:
        summary: dict[str, Any] = {
            "benchmark": "ppr",
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            **environment(backend),
            "python": platform.python_version(),
            "event_loop": "asyncio",
            "backend": kind,
            "quick": quick,
            "seed": SEED,
            "rounds": rounds,
            "iterations": iterations,
            "top_k": TOP_K,
            "tol": TOL,
            "torch": torch_device,
        }
        results = await bench(
            backend, graph, seeds.astype(np.int32), torch_device, rounds, iterations,
            min(singles, count),
        )  # fmt: skip
    summary["results"] = {f"rmat{scale}": results}
    ratios = {"singles / ppr_many (wall)": results["singles_over_many"]}
    targets = {"ppr_many >= 30x single ppr calls": 30.0}
    met = {"ppr_many >= 30x single ppr calls": results["singles_over_many"] >= 30}
    if "torch_over_many" in results:
        ratios["torch sparse.mm / ppr_many (wall)"] = results["torch_over_many"]
        targets["ppr_many >= 1.0x torch.sparse.mm"] = 1.0
        met["ppr_many >= 1.0x torch.sparse.mm"] = results["torch_over_many"] >= 1.0
    summary |= {"ratios": ratios, "targets": targets, "targets_met": met}
    return summary


def main() -> None:
    """Run, print the summary, write it to --out."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--singles", type=int, default=32, help="single calls timed")
    parser.add_argument("--quick", action="store_true", help="CPU backend, tiny graph")
    args = parser.parse_args()
    summary = anyio.run(main_async, args.quick, args.rounds, args.iterations, args.singles)
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
