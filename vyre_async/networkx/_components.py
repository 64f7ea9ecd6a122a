"""Connected components, as NetworkX's functions give them.

The device labels every vertex with the smallest vertex number of its (weakly)
connected component; vertex numbers follow ``G``'s node order, so ordering the
components by label is NetworkX's order (it starts a component at each node, in
node order, that no earlier component holds).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator

import networkx as nx
import numpy as np

from ._graph import VyreGraph, as_nodes

__all__ = [
    "connected_components",
    "is_connected",
    "is_weakly_connected",
    "node_connected_component",
    "number_connected_components",
    "number_weakly_connected_components",
    "weakly_connected_components",
]


def _labels(graph: VyreGraph) -> np.ndarray:
    labels: np.ndarray = graph.run("components")
    return labels


def _components(graph: VyreGraph) -> Iterator[set[Hashable]]:
    """Each component's nodes, the component of the earliest node first."""
    labels = _labels(graph)
    order = np.argsort(labels, kind="stable")
    if not order.size:
        return
    nodes = as_nodes(graph, order.tolist())  # grouped by component, one pass
    cuts = (np.flatnonzero(np.diff(labels[order])) + 1).tolist()
    for start, stop in zip([0, *cuts], [*cuts, len(nodes)], strict=True):
        yield set(nodes[start:stop])


def connected_components(G: VyreGraph) -> Iterator[set[Hashable]]:
    """As ``networkx.connected_components``."""
    yield from _components(G)


def weakly_connected_components(G: VyreGraph) -> Iterator[set[Hashable]]:
    """As ``networkx.weakly_connected_components``."""
    yield from _components(G)


def number_connected_components(G: VyreGraph) -> int:
    """As ``networkx.number_connected_components``."""
    labels = _labels(G)
    return int(np.count_nonzero(labels == np.arange(labels.size)))


def number_weakly_connected_components(G: VyreGraph) -> int:
    """As ``networkx.number_weakly_connected_components``."""
    return number_connected_components(G)


def node_connected_component(G: VyreGraph, n: Hashable) -> set[Hashable]:
    """As ``networkx.node_connected_component``."""
    if n not in G:
        raise KeyError(n)  # NetworkX's own error here (its G.adj[n] lookup)
    labels = _labels(G)
    return set(as_nodes(G, np.flatnonzero(labels == labels[G.index[n]]).tolist()))


def is_connected(G: VyreGraph) -> bool:
    """As ``networkx.is_connected``."""
    if len(G) == 0:
        raise nx.NetworkXPointlessConcept("Connectivity is undefined for the null graph.")
    return number_connected_components(G) == 1


def is_weakly_connected(G: VyreGraph) -> bool:
    """As ``networkx.is_weakly_connected``."""
    if len(G) == 0:
        raise nx.NetworkXPointlessConcept("Connectivity is undefined for the null graph.")
    return number_connected_components(G) == 1
