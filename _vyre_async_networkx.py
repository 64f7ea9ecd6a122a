"""What NetworkX learns about the ``vyre`` backend when it starts (no heavy imports).

NetworkX calls :func:`get_info` through the ``networkx.backend_info`` entry point while
``import networkx`` runs, so this module sits beside the package and imports nothing
of it; the backend itself (``vyre_async.networkx``) loads on the first dispatch.
"""

from __future__ import annotations

from typing import Any

#: The functions ``vyre_async.networkx`` runs (a test checks it lists them all).
FUNCTIONS = (
    "all_pairs_shortest_path_length",
    "bfs_edges",
    "bfs_layers",
    "bfs_tree",
    "connected_components",
    "descendants",
    "descendants_at_distance",
    "has_path",
    "is_connected",
    "is_weakly_connected",
    "node_connected_component",
    "number_connected_components",
    "number_weakly_connected_components",
    "pagerank",
    "shortest_path",
    "shortest_path_length",
    "single_source_dijkstra_path_length",
    "single_source_shortest_path",
    "single_source_shortest_path_length",
    "weakly_connected_components",
)


def get_info() -> dict[str, Any]:
    """The backend's description, as NetworkX's ``networkx.backend_info`` asks for it."""
    return {
        "backend_name": "vyre",
        "project": "vyre-async",
        "package": "vyre_async",
        "short_summary": "Resident-graph traversals, shortest paths and PageRank on a "
        "GPU (or vyre_async's CPU backend).",
        "functions": {
            name: {"additional_docs": "Runs on vyre_async; see docs/guide/networkx.md."}
            for name in FUNCTIONS
        },
        "default_config": {},
    }
