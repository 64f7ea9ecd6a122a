"""NetworkX graphs as edge arrays over renumbered vertices, parallel edges summed."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from ._checks import INT32_MAX
from ._vertex_ids import VertexIds, ids_array

Int64s = npt.NDArray[np.int64]


def networkx_edges(
    graph: object, weight: str | None
) -> tuple[VertexIds, Int64s, Int64s, npt.NDArray[np.float64] | None, bool]:
    """The nodes and edges of a NetworkX graph as arrays.

    Vertex ``i`` is the ``i``-th node of ``graph.nodes`` (NetworkX's own order, as
    ``nx.to_scipy_sparse_array`` uses). An undirected edge is listed once. In a
    multigraph parallel edges are merged, their weights summed (as NetworkX does when
    it builds a matrix); an undirected pair is merged with its reverse.

    Args:
        graph: A ``networkx`` Graph, DiGraph, MultiGraph or MultiDiGraph.
        weight: The edge attribute holding the weight (missing on an edge: 1.0), or
            ``None`` for an unweighted graph.

    Returns:
        ``(ids, src, dst, weights, directed)``.

    Raises:
        TypeError: ``graph`` is not a NetworkX graph.
        ValidationError: Too many nodes, or a weight that is not a number.
    """
    g: Any = graph
    if not all(hasattr(g, name) for name in ("is_directed", "is_multigraph", "nodes", "edges")):
        raise TypeError(f"graph must be a networkx graph, got {type(graph).__name__}")
    nodes = list(g.nodes)
    n = len(nodes)
    if n > INT32_MAX:
        raise ValidationError(
            f"the graph has {n} nodes; vertex ids are int32, so at most {INT32_MAX}",
            fix="split the graph.",
        )
    index = {node: i for i, node in enumerate(nodes)}
    m = int(g.number_of_edges())
    src, dst = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64)
    weights = None if weight is None else np.empty(m, dtype=np.float64)
    edges = g.edges() if weight is None else g.edges(data=weight, default=1.0)
    for k, edge in enumerate(edges):
        src[k], dst[k] = index[edge[0]], index[edge[1]]
        if weights is not None:
            weights[k] = _number(edge, weight)
    directed = bool(g.is_directed())
    if g.is_multigraph() and m:
        src, dst, weights = _merge_parallel(src, dst, weights, n, directed=directed)
    return VertexIds(ids_array(nodes)), src, dst, weights, directed


def _number(edge: tuple[Any, ...], weight: str | None) -> float:
    value = edge[2]
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValidationError(
            f"edge {edge[0]!r} -> {edge[1]!r} has {weight}={value!r}, which is not a number",
            fix=f"give every edge a numeric {weight!r} attribute, or pass weight=None.",
        ) from None


def _merge_parallel(
    src: Int64s, dst: Int64s, weights: npt.NDArray[np.float64] | None, n: int, *, directed: bool
) -> tuple[Int64s, Int64s, npt.NDArray[np.float64] | None]:
    if not directed:  # an undirected pair in either orientation is one edge
        src, dst = np.minimum(src, dst), np.maximum(src, dst)
    keys, inverse = np.unique(src * np.int64(n) + dst, return_inverse=True)
    if weights is not None:
        summed = np.bincount(inverse.reshape(-1), weights=weights, minlength=keys.size)
        weights = summed.astype(np.float64, copy=False)
    return keys // n, keys % n, weights
