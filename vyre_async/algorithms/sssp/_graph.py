"""What a run derives from a resident graph: its statistics, delta and light graph."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import NamedTuple

import anyio
import numpy as np

from ...backends import Backend, ResidentBuffer
from ._buffers import free_scratch_buffers
from ._delta import choose_delta
from ._kernels import sssp_graph_stats, sssp_light_count, sssp_light_fill
from ._layout import SSSP_UNBOUNDED

#: The graph arrays a run reads.
GRAPH_BUFFERS = ("offsets", "indices", "weights")
#: The light graph's arrays (:func:`build_light_graph`).
LIGHT_BUFFERS = ("light_offsets", "light_indices", "light_weights")


class LightGraph(NamedTuple):
    """A light graph and what a run needs to know about it.

    Attributes:
        buffers: ``light_offsets``, ``light_indices``, ``light_weights``.
        heavy_edges: Whether some edge of the graph is not in it.
        owned: Whether the buffers are new (the graph's own when every edge is light).
    """

    buffers: dict[str, ResidentBuffer]
    heavy_edges: bool
    owned: bool


class GraphStats(NamedTuple):
    """What delta and the many-source plan are chosen from.

    Attributes:
        num_vertices: Vertices.
        num_edges: Edges.
        weight_sum: Sum of the edge weights.
        max_degree: Largest out-degree.
    """

    num_vertices: int
    num_edges: int
    weight_sum: float
    max_degree: int


def graph_key(graph: Mapping[str, ResidentBuffer]) -> Hashable:
    """Identifies a resident graph by its arrays (what caches key on)."""
    return tuple(graph[name].id for name in GRAPH_BUFFERS)


def check_width(delta: float) -> float:
    """``delta`` as the kernels take it (``inf`` becomes ``SSSP_UNBOUNDED``).

    Raises:
        ValueError: It is not > 0.
    """
    if not delta > 0:
        raise ValueError(f"delta must be > 0 (or inf), got {delta!r}")
    return min(float(delta), SSSP_UNBOUNDED)


async def measure_graph(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    cache: dict[Hashable, GraphStats] | None = None,
) -> GraphStats:
    """The weight sum and largest degree of a resident graph, in one pass on the device.

    Args:
        backend: The backend holding the graph.
        graph: ``offsets`` and ``weights``.
        cache: Keeps the result per graph when given.
    """
    key = graph_key(graph)
    if cache is not None and key in cache:
        return cache[key]
    out = await backend.dispatch(
        sssp_graph_stats, {"offsets": graph["offsets"], "weights": graph["weights"]}
    )
    stats = GraphStats(
        graph["offsets"].size - 1,
        graph["weights"].size,
        float(out["weight_sum"][0]),
        int(out["max_degree"][0]),
    )
    if cache is not None:
        cache[key] = stats
    return stats


async def graph_delta(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    *,
    scale: float = 1.0,
    cache: dict[Hashable, GraphStats] | None = None,
) -> float:
    """The bucket width :func:`choose_delta` picks for a resident graph.

    Args:
        backend: The backend holding the graph.
        graph: ``offsets`` and ``weights``.
        scale: Factor on the chosen width.
        cache: Keeps the graph's statistics (see :func:`measure_graph`).
    """
    stats = await measure_graph(backend, graph, cache)
    return choose_delta(
        stats.num_vertices, stats.num_edges, stats.weight_sum, stats.max_degree, scale=scale
    )


async def build_light_graph(
    backend: Backend, graph: Mapping[str, ResidentBuffer], delta: float
) -> LightGraph:
    """The light graph of ``graph``: its edges lighter than ``delta``, as a CSR of its own.

    Light steps walk it instead of the whole lists, so a hub whose distance drops
    again reads its few light edges, not all of them. It is built on the device in
    two passes (count, then copy in list order), the offsets summed on the host in
    between. With ``delta`` at ``SSSP_UNBOUNDED`` every edge is light and the graph's
    own arrays are returned.

    Args:
        backend: The backend holding the graph.
        graph: ``offsets``, ``indices`` and ``weights``.
        delta: The bucket width the light graph is for.

    Returns:
        ``light_offsets`` (int64, V + 1), ``light_indices`` (int32) and
        ``light_weights`` (float32): new buffers the caller frees (``owned``), or the
        graph's own.

    Raises:
        ValueError: ``delta`` is not > 0.
    """
    width = check_width(delta)
    if width >= SSSP_UNBOUNDED:
        same = dict(zip(LIGHT_BUFFERS, (graph[name] for name in GRAPH_BUFFERS), strict=True))
        return LightGraph(same, heavy_edges=False, owned=False)
    counted = await backend.dispatch(
        sssp_light_count, {"offsets": graph["offsets"], "weights": graph["weights"]}, delta=width
    )
    counts = counted["counts"]

    def sum_offsets() -> np.ndarray:
        offsets = np.zeros(counts.size, dtype=np.int64)
        np.cumsum(counts[:-1], out=offsets[1:])
        return offsets

    offsets = await anyio.to_thread.run_sync(sum_offsets)
    light_edges = int(offsets[-1])
    made: list[ResidentBuffer] = []
    try:
        made.append(await backend.upload(offsets))
        made.append(await backend.alloc(4 * max(light_edges, 1), np.int32))
        made.append(await backend.alloc(4 * max(light_edges, 1), np.float32))
        light = dict(zip(LIGHT_BUFFERS, made, strict=True))
        await backend.dispatch(
            sssp_light_fill,
            {name: graph[name] for name in GRAPH_BUFFERS} | light,
            delta=width,
        )
    except BaseException:
        await free_scratch_buffers(backend, made)
        raise
    return LightGraph(light, heavy_edges=light_edges < graph["indices"].size, owned=True)
