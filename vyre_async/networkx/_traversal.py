"""Traversals and unweighted shortest-path lengths, as NetworkX's functions give them.

The device gives the BFS levels; where NetworkX's answer has an order (its layers
list nodes in the order its queue meets them), the order is rebuilt on the host from
the levels and the adjacency order the conversion kept, in a few array passes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

import networkx as nx
import numpy as np

from ._graph import VyreGraph, as_nodes

__all__ = [
    "all_pairs_shortest_path_length",
    "bfs_edges",
    "bfs_layers",
    "bfs_tree",
    "descendants",
    "descendants_at_distance",
    "has_path",
    "levels_from",
    "single_source_shortest_path",
    "single_source_shortest_path_length",
]

#: Host bytes of BFS level rows one batch of an all-pairs call may bring back.
ROWS_BYTES = 256 << 20


def levels_from(graph: VyreGraph, vertex: int, cutoff: int | None = None) -> np.ndarray:
    """BFS levels from one vertex (``-1``: unreached), at most ``cutoff`` deep."""
    if cutoff is None:
        levels: np.ndarray = graph.run("bfs", vertex)
        return levels
    rows: np.ndarray = graph.run("bfs_many", [vertex], k=cutoff)
    row: np.ndarray = rows[0]
    return row


def _source(graph: VyreGraph, node: Hashable, error: type[Exception], message: str) -> int:
    try:
        return graph.index[node]
    except (KeyError, TypeError):
        raise error(message.format(node=node)) from None


def bfs_layers(G: VyreGraph, sources: Any) -> Iterator[list[Hashable]]:
    """As ``networkx.bfs_layers``: lists of nodes at the same distance, in NetworkX's order."""
    if sources in G:
        sources = [sources]
    visited = set(sources)
    current = list(visited)  # NetworkX's own first layer: its order included
    for source in current:
        if source not in G:
            raise nx.NetworkXError(f"The node {source} is not in the graph.")
    starts = np.array([G.index[s] for s in current], np.int32)
    if not starts.size:
        return
    rows: np.ndarray = G.run("bfs_many", starts) if starts.size > 1 else None  # type: ignore[assignment]
    levels = levels_from(G, int(starts[0])) if rows is None else _nearest(rows)
    yield from (as_nodes(G, layer) for layer in _ordered_layers(G, starts, levels))


def _nearest(rows: np.ndarray) -> np.ndarray:
    """Levels from the nearest of several sources (-1 where none reaches)."""
    reached = np.where(rows >= 0, rows, np.iinfo(np.int32).max)
    nearest = reached.min(axis=0)
    return np.where(nearest == np.iinfo(np.int32).max, -1, nearest).astype(np.int32)


def _ordered_layers(
    graph: VyreGraph, first: np.ndarray, levels: np.ndarray
) -> Iterator[np.ndarray]:
    """The layers in NetworkX's queue order (see :func:`_layers_and_parents`)."""
    for layer, _ in _layers_and_parents(graph, first, levels):
        yield layer


def _layers_and_parents(
    graph: VyreGraph, first: np.ndarray, levels: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Each layer in NetworkX's queue order, with each vertex's parent there (-1 in the
    first layer): a vertex of layer L + 1 comes where it first appears among the
    neighbours (in adjacency order) of layer L's vertices, in order, and that
    neighbour list's owner is its parent, as NetworkX's BFS discovers it."""
    offsets, indices = graph.csr.offsets, graph.csr.indices
    layer = first
    parents = np.full(first.size, -1, np.int64)
    depth = 0
    while layer.size:
        yield layer, parents
        starts = offsets[layer]
        counts = (offsets[layer + 1] - starts).astype(np.int64)
        total = int(counts.sum())
        if not total:
            return
        # Every neighbour of the layer, in order: start of each list plus its offset.
        begin = np.repeat(starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
        children = indices[begin + np.arange(total)]
        owners = np.repeat(layer, counts)
        keep = levels[children] == depth + 1
        children, owners = children[keep], owners[keep]
        _, first_seen = np.unique(children, return_index=True)
        order = np.sort(first_seen)
        layer, parents = children[order], owners[order]
        depth += 1


def bfs_edges(
    G: VyreGraph,
    source: Hashable,
    reverse: bool = False,
    depth_limit: int | None = None,
    sort_neighbors: Any = None,
) -> Iterator[tuple[Hashable, Hashable]]:
    """As ``networkx.bfs_edges``: the tree edges in the order NetworkX's BFS finds them."""
    graph = G.reversed() if reverse else G
    if source not in graph:
        raise nx.NetworkXError(f"The node {source} is not in the graph.")
    vertex = graph.index[source]
    limit = len(graph) if depth_limit is None else int(depth_limit)
    if limit <= 0:
        return
    levels = levels_from(graph, vertex, None if depth_limit is None else limit)
    nodes = graph.nodes
    first = np.array([vertex], np.int32)
    for depth, (layer, parents) in enumerate(_layers_and_parents(graph, first, levels)):
        if depth:
            yield from zip(
                as_nodes(graph, parents.tolist()), as_nodes(graph, layer.tolist()), strict=True
            )
    del nodes


def bfs_tree(
    G: VyreGraph,
    source: Hashable,
    reverse: bool = False,
    depth_limit: int | None = None,
    sort_neighbors: Any = None,
) -> nx.DiGraph:
    """As ``networkx.bfs_tree``: the BFS tree as a ``networkx.DiGraph``."""
    tree = nx.DiGraph()
    tree.add_node(source)
    tree.add_edges_from(bfs_edges(G, source, reverse=reverse, depth_limit=depth_limit))
    return tree


def single_source_shortest_path(
    G: VyreGraph, source: Hashable, cutoff: int | None = None
) -> dict[Hashable, list[Hashable]]:
    """As ``networkx.single_source_shortest_path``: a path to each reached node, through
    the parents NetworkX's BFS would give."""
    if source not in G:
        raise nx.NodeNotFound(f"Source {source} not in G")
    vertex = G.index[source]
    levels = levels_from(G, vertex, None if cutoff is None else int(cutoff))
    nodes = G.nodes
    paths: dict[Hashable, list[Hashable]] = {source: [source]}
    first = np.array([vertex], np.int32)
    for depth, (layer, parents) in enumerate(_layers_and_parents(G, first, levels)):
        if depth:
            for child, parent in zip(layer.tolist(), parents.tolist(), strict=True):
                paths[nodes[child]] = [*paths[nodes[parent]], nodes[child]]
    return paths


def descendants(G: VyreGraph, source: Hashable) -> set[Hashable]:
    """As ``networkx.descendants``: the nodes reachable from ``source``, not itself."""
    vertex = _source(G, source, nx.NetworkXError, "The node {node} is not in the graph.")
    levels = levels_from(G, vertex)
    return set(as_nodes(G, np.flatnonzero(levels > 0).tolist()))


def descendants_at_distance(G: VyreGraph, source: Hashable, distance: int) -> set[Hashable]:
    """As ``networkx.descendants_at_distance``: the nodes exactly ``distance`` away."""
    vertex = _source(G, source, nx.NetworkXError, "The node {node} is not in the graph.")
    if distance < 0:
        return set()
    levels = levels_from(G, vertex, int(distance))
    return set(as_nodes(G, np.flatnonzero(levels == distance).tolist()))


def has_path(G: VyreGraph, source: Hashable, target: Hashable) -> bool:
    """As ``networkx.has_path``."""
    start = _source(G, source, nx.NodeNotFound, "Source {node} is not in G")
    end = _source(G, target, nx.NodeNotFound, "Target {node} is not in G")
    return bool(levels_from(G, start)[end] >= 0)


def single_source_shortest_path_length(
    G: VyreGraph, source: Hashable, cutoff: int | None = None
) -> dict[Hashable, int]:
    """As ``networkx.single_source_shortest_path_length``: hops to each reached node."""
    vertex = _source(G, source, nx.NodeNotFound, "Source {node} is not in G")
    levels = levels_from(G, vertex, None if cutoff is None else int(cutoff))
    return _lengths(G, levels)


def _lengths(graph: VyreGraph, levels: np.ndarray) -> dict[Hashable, int]:
    """``{node: level}`` of the reached vertices, nearest first (then vertex order)."""
    reached = np.flatnonzero(levels >= 0)
    order = reached[np.argsort(levels[reached], kind="stable")]
    nodes = graph.nodes
    return {
        nodes[v]: level for v, level in zip(order.tolist(), levels[order].tolist(), strict=True)
    }


def all_pairs_shortest_path_length(
    G: VyreGraph, cutoff: int | None = None
) -> Iterator[tuple[Hashable, dict[Hashable, int]]]:
    """As ``networkx.all_pairs_shortest_path_length``: each node's lengths, in node order,
    the sources run as multi-source traversals in batches."""
    count = len(G)
    batch = max(1, min(1024, ROWS_BYTES // max(1, 4 * count)))
    k = None if cutoff is None else int(cutoff)
    for start in range(0, count, batch):
        sources = np.arange(start, min(start + batch, count), dtype=np.int32)
        rows: np.ndarray = G.run("bfs_many", sources, k=k)
        for vertex, levels in zip(sources.tolist(), rows, strict=True):
            yield G.nodes[vertex], _lengths(G, levels)
