"""Weighted shortest-path lengths, and ``shortest_path_length`` in all its forms.

Distances come from the device in float32. Where every weight is a whole number (and
the sums stay below 2**24, where float32 is exact) they are given as ints, as
NetworkX's sums of int weights are; otherwise as floats, within float32's precision
of NetworkX's float64 sums (a relative 1e-7 per edge on a path).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

import networkx as nx
import numpy as np

from ..errors import ValidationError
from ._graph import VyreGraph
from ._traversal import (
    _source,
    all_pairs_shortest_path_length,
    levels_from,
    single_source_shortest_path,
    single_source_shortest_path_length,
)

__all__ = ["shortest_path", "shortest_path_length", "single_source_dijkstra_path_length"]

#: Below this, float32 holds every whole number exactly.
_EXACT = float(1 << 24)


def distances_from(graph: VyreGraph, vertex: int, cutoff: float | None = None) -> np.ndarray:
    """float32 distances from ``vertex`` (+inf: unreached or beyond ``cutoff``).

    Raises:
        NotImplementedError: A negative weight (NetworkX's own functions say what to do).
    """
    try:
        distances: np.ndarray = graph.run("sssp", vertex, max_distance=cutoff)
    except ValidationError as exc:
        raise NotImplementedError(f"vyre cannot run this query: {exc.what}") from None
    return distances


def _lengths(graph: VyreGraph, distances: np.ndarray) -> dict[Hashable, Any]:
    """``{node: distance}`` of the reached vertices, nearest first."""
    reached = np.flatnonzero(np.isfinite(distances))
    order = reached[np.argsort(distances[reached], kind="stable")]
    values = distances[order]
    nodes = graph.nodes
    if graph.integral and (not values.size or float(values.max()) < _EXACT):
        numbers: list[Any] = values.astype(np.int64).tolist()
    else:
        numbers = values.astype(np.float64).tolist()
    return {nodes[v]: d for v, d in zip(order.tolist(), numbers, strict=True)}


def single_source_dijkstra_path_length(
    G: VyreGraph, source: Hashable, cutoff: float | None = None, weight: Any = "weight"
) -> dict[Hashable, Any]:
    """As ``networkx.single_source_dijkstra_path_length``: weighted lengths to each
    reached node, within ``cutoff``."""
    vertex = _source(G, source, nx.NodeNotFound, "Node {node} not found in graph")
    return _lengths(G, distances_from(G, vertex, cutoff))


def shortest_path_length(
    G: VyreGraph,
    source: Hashable | None = None,
    target: Hashable | None = None,
    weight: Any = None,
    method: str = "dijkstra",
) -> Any:
    """As ``networkx.shortest_path_length``: a number, a dict, or (no source and no
    target) an iterator of ``(node, dict)`` pairs."""
    if method not in ("dijkstra", "bellman-ford"):
        raise ValueError(f"method not supported: {method}")
    weighted = weight is not None and G.weight is not None
    if source is None and target is None:
        if weighted:
            return _all_pairs_weighted(G)
        return ((node, lengths) for node, lengths in all_pairs_shortest_path_length(G))
    if source is None:  # to the target: from it in the reversed graph
        graph = G.reversed()
        vertex = _source(graph, target, nx.NodeNotFound, "Target {node} is not in G")
        if weighted:
            return _lengths(graph, distances_from(graph, vertex))
        return single_source_shortest_path_length(graph, target)
    start = _source(G, source, nx.NodeNotFound, "Source {node} is not in G")
    if target is None:
        if weighted:
            return _lengths(G, distances_from(G, start))
        return single_source_shortest_path_length(G, source)
    end = _source(G, target, nx.NodeNotFound, "Target {node} is not in G")
    if weighted:
        lengths = _lengths(G, distances_from(G, start))
        if target not in lengths:
            raise nx.NetworkXNoPath(f"Node {target} not reachable from {source}")
        return lengths[target]
    level = int(levels_from(G, start)[end])
    if level < 0:
        raise nx.NetworkXNoPath(f"No path between {source} and {target}.")
    return level


def _all_pairs_weighted(graph: VyreGraph) -> Iterator[tuple[Hashable, dict[Hashable, Any]]]:
    for vertex, node in enumerate(graph.nodes):
        yield node, _lengths(graph, distances_from(graph, vertex))


def shortest_path(
    G: VyreGraph,
    source: Hashable | None = None,
    target: Hashable | None = None,
    weight: Any = None,
    method: str = "dijkstra",
) -> Any:
    """As ``networkx.shortest_path`` for unweighted paths from a source (to every node,
    or to ``target``), or to a target in an undirected graph: each path through the
    parents NetworkX's BFS from the source would give (``can_run`` leaves the other
    forms to NetworkX)."""
    if method not in ("dijkstra", "bellman-ford"):
        raise ValueError(f"method not supported: {method}")
    if source is None:
        if target not in G:
            raise nx.NodeNotFound(f"Target {target} not in G")
        paths = single_source_shortest_path(G.reversed(), target)
        return {node: path[::-1] for node, path in paths.items()}
    if source not in G:
        raise nx.NodeNotFound(f"Source {source} not in G")
    if target is None:
        return single_source_shortest_path(G, source)
    if target not in G:
        raise nx.NodeNotFound(f"Target {target} not in G")
    paths = single_source_shortest_path(G, source)
    if target not in paths:
        raise nx.NetworkXNoPath(f"No path between {source} and {target}.")
    return paths[target]
