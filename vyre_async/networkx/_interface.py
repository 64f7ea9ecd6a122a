"""The object NetworkX dispatches to: conversions, the functions, and when they can run."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

import networkx as nx

from ._components import (
    connected_components,
    is_connected,
    is_weakly_connected,
    node_connected_component,
    number_connected_components,
    number_weakly_connected_components,
    weakly_connected_components,
)
from ._graph import convert_from_nx, convert_to_nx
from ._link_analysis import pagerank
from ._paths import shortest_path, shortest_path_length, single_source_dijkstra_path_length
from ._traversal import (
    all_pairs_shortest_path_length,
    bfs_edges,
    bfs_layers,
    bfs_tree,
    descendants,
    descendants_at_distance,
    has_path,
    single_source_shortest_path,
    single_source_shortest_path_length,
)

__all__ = ["FUNCTIONS", "BackendInterface", "backend_interface"]

#: Every NetworkX function this backend runs, by its NetworkX name.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "all_pairs_shortest_path_length": all_pairs_shortest_path_length,
    "bfs_edges": bfs_edges,
    "bfs_layers": bfs_layers,
    "bfs_tree": bfs_tree,
    "connected_components": connected_components,
    "descendants": descendants,
    "descendants_at_distance": descendants_at_distance,
    "has_path": has_path,
    "is_connected": is_connected,
    "is_weakly_connected": is_weakly_connected,
    "node_connected_component": node_connected_component,
    "number_connected_components": number_connected_components,
    "number_weakly_connected_components": number_weakly_connected_components,
    "pagerank": pagerank,
    "shortest_path": shortest_path,
    "shortest_path_length": shortest_path_length,
    "single_source_dijkstra_path_length": single_source_dijkstra_path_length,
    "single_source_shortest_path": single_source_shortest_path,
    "single_source_shortest_path_length": single_source_shortest_path_length,
    "weakly_connected_components": weakly_connected_components,
}


@functools.cache
def _signature(name: str) -> inspect.Signature:
    return inspect.signature(getattr(nx, name))


def _arguments(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A call's arguments by name, defaults filled in (NetworkX passes them positionally)."""
    bound = _signature(name).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _whole(value: Any) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


class BackendInterface:
    """NetworkX's view of vyre_async: ``convert_from_nx``, ``convert_to_nx``, the
    functions, ``can_run`` (what a call asks for that vyre does not do is left to
    NetworkX) and ``should_run`` (where converting would cost more than it saves)."""

    convert_from_nx = staticmethod(convert_from_nx)
    convert_to_nx = staticmethod(convert_to_nx)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        try:
            return FUNCTIONS[name]
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *FUNCTIONS]

    @staticmethod
    def can_run(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool | str:
        """Whether vyre can run this call (a string says why not)."""
        if name not in FUNCTIONS:
            return f"vyre has no {name}"
        kwargs = _arguments(name, args, kwargs)
        args = ()
        if callable(kwargs.get("weight")):
            return "a weight function (vyre reads weights from one edge attribute)"
        cutoff = kwargs.get("cutoff")
        lengths = ("single_source_shortest_path_length", "all_pairs_shortest_path_length")
        if name in lengths and (not _whole(cutoff) or (cutoff is not None and cutoff < 0)):
            return "a cutoff that is not a whole number >= 0"
        if (
            name == "single_source_dijkstra_path_length"
            and cutoff is not None
            and (not isinstance(cutoff, int | float) or cutoff < 0)
        ):
            return "a cutoff that is not a number >= 0"
        if name == "descendants_at_distance" and not _whole(kwargs.get("distance")):
            return "a distance that is not a whole number"
        if name in ("bfs_edges", "bfs_tree"):
            if kwargs.get("sort_neighbors") is not None:
                return "sort_neighbors (vyre follows the graph's adjacency order)"
            if kwargs.get("reverse") and kwargs["G"].is_directed():
                return "reverse on a directed graph (NetworkX's predecessor order)"
            if not _whole(kwargs.get("depth_limit")):
                return "a depth_limit that is not a whole number"
        if name == "shortest_path":
            if kwargs.get("weight") is not None:
                return "weighted paths (vyre gives weighted lengths, not the paths)"
            if kwargs.get("source") is None and (
                kwargs.get("target") is None or kwargs["G"].is_directed()
            ):
                return "all pairs' paths, or paths to a target of a directed graph"
        if name == "pagerank":
            if kwargs.get("dangling"):
                return "a dangling distribution other than the personalization"
            if kwargs.get("personalization") and not _teleport_mass(kwargs):
                return "a personalization that is not non-negative weights of positive mass"
        return True

    @staticmethod
    def should_run(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool | str:
        """Whether running on vyre pays: small graphs are quicker in NetworkX itself."""
        graph = args[0] if args else kwargs.get("G")
        size = getattr(graph, "number_of_edges", None)
        if callable(size) and size() < SMALL_GRAPH_EDGES:
            return f"the graph has fewer than {SMALL_GRAPH_EDGES} edges"
        return True


def _teleport_mass(kwargs: dict[str, Any]) -> bool:
    """Whether a PageRank personalization is a mapping of finite non-negative weights
    with positive mass on the graph's nodes (anything else is NetworkX's to refuse)."""
    weights, graph = kwargs["personalization"], kwargs["G"]
    if not isinstance(weights, Mapping):
        return False
    values = [value for node, value in weights.items() if node in graph]
    if not all(isinstance(v, int | float) and math.isfinite(v) and v >= 0 for v in values):
        return False
    return bool(sum(values) > 0)


#: Below this many edges a call runs in NetworkX when the backend is chosen for it
#: automatically (``backend="vyre"`` still runs it here).
SMALL_GRAPH_EDGES = 10_000

#: What NetworkX loads from the ``networkx.backends`` entry point.
backend_interface = BackendInterface()
