"""Graphs to split over a group's devices, a budget that forces the split, and SciPy's
rows: shared by the CPU and GPU partition tests."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from graph_references import scipy_levels

from vyre_async.algorithms import query_kinds
from vyre_async.graphs import CsrGraph, VertexRanges, part_graph_bytes, replica_graph_bytes


def random_graph(rng: np.random.Generator, n: int, m: int, symmetric: bool) -> CsrGraph:
    """``m`` random edges among ``n`` vertices."""
    return CsrGraph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n, symmetric=symmetric)


def _last_range_without_edges(rng: np.random.Generator) -> CsrGraph:
    """301 vertices; edges only among the first 150: over three devices, the third
    device's range (vertices 202..300) holds no edge at all."""
    return CsrGraph.from_edges(rng.integers(0, 150, 600), rng.integers(0, 150, 600), 301)


def _self_loops_and_islands(rng: np.random.Generator) -> CsrGraph:
    n = 211
    loops = np.arange(0, n, 3)
    src = np.concatenate([loops, rng.integers(0, 100, 300), rng.integers(120, n, 200)])
    dst = np.concatenate([loops, rng.integers(0, 100, 300), rng.integers(120, n, 200)])
    return CsrGraph.from_edges(src, dst, n)


def _long_path(rng: np.random.Generator) -> CsrGraph:
    n = 257
    order = rng.permutation(n)
    return CsrGraph.from_edges(order[:-1], order[1:], n, symmetric=True)


#: name -> a fresh random graph; vertex counts none of which 2 or 3 divides evenly
#: but one (so some last range is shorter), a range without edges, a device without
#: vertices, loops, islands.
SHAPES: dict[str, Callable[[np.random.Generator], CsrGraph]] = {
    "random_directed": lambda rng: random_graph(rng, 499, 1500, symmetric=False),
    "random_symmetric": lambda rng: random_graph(rng, 700, 2100, symmetric=True),
    "last_range_without_edges": _last_range_without_edges,
    "self_loops_and_islands": _self_loops_and_islands,
    "long_path": _long_path,
    # 4 vertices over 3 devices (chunk 2), 1 over 2 or 3: a device that owns no vertex.
    "device_without_vertices": lambda rng: CsrGraph.from_edges(
        rng.permutation(4), rng.permutation(4), 4
    ),
    "single_vertex": lambda rng: CsrGraph.from_edges(
        np.zeros(1, np.int64), np.zeros(1, np.int64), 1
    ),
}


def hub_graph(rng: np.random.Generator) -> CsrGraph:
    """20,011 vertices with random edges, and in each half of the range a hub with
    12,288 distinct out- and in-neighbours: over two devices, each part's lists include
    a hub's, longer than the split kernels' hub chunks at every lane width (8,192 edges
    at one word)."""
    n, degree = 20011, 12288
    src, dst = [rng.integers(0, n, 8 * n)], [rng.integers(0, n, 8 * n)]
    for hub in (5, n - 7):
        src += [np.full(degree, hub), rng.choice(n, degree, replace=False)]
        dst += [rng.choice(n, degree, replace=False), np.full(degree, hub)]
    return CsrGraph.from_edges(np.concatenate(src), np.concatenate(dst), n)


def split_limit(graph: CsrGraph, devices: int) -> int:
    """A per-device budget that the largest part fits and a whole copy does not (each
    with the largest of the registered kinds' smallest scratch, as placement counts)."""
    ranges = VertexRanges(graph.num_vertices, devices)
    kinds = list(query_kinds())
    parts = part_graph_bytes(graph, ranges)
    need = max(b + max(k.part_scratch_bytes(ranges, d) for k in kinds) for d, b in enumerate(parts))
    scratch = max(k.replica_scratch_bytes(graph.num_vertices) for k in kinds)
    assert need < replica_graph_bytes(graph) + scratch, "the graph is too small to split"
    return need


def reference_rows(graph: CsrGraph, sources: np.ndarray) -> np.ndarray:
    """SciPy's levels from each source, one row each."""
    return np.stack([scipy_levels(graph, int(s)) for s in sources])
