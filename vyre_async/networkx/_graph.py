"""A NetworkX graph as vyre_async holds it: CSR arrays in NetworkX's own order.

:func:`convert_from_nx` numbers the nodes in ``G``'s order and keeps every vertex's
neighbours in ``G``'s adjacency order (the order NetworkX's traversals visit them
in), so results that NetworkX gives in visiting order can be given in the same
order. NetworkX keeps the converted graph in ``G.__networkx_cache__`` and clears it
when ``G`` changes through its methods, so a second call on an unchanged graph
neither converts nor uploads again; the resident session is opened on the first
call that needs the device and closed when the converted graph goes (or at exit).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Hashable, Iterable
from itertools import chain
from operator import methodcaller
from typing import Any

import numpy as np

from ..graphs import CsrGraph, trusted_csr
from ..sessions import ResidentGraphSession, resident_graph
from ._portal import loop

__all__ = ["VyreGraph", "convert_from_nx", "convert_to_nx", "conversions"]

#: Graphs converted so far in this process (a count tests and users can read).
_conversions = 0


def conversions() -> int:
    """How many NetworkX graphs this process converted (cache hits are not counted)."""
    return _conversions


class VyreGraph:
    """A converted NetworkX graph: its nodes, CSR arrays and, once used, its session.

    Attributes:
        nodes: The nodes, vertex ``i`` is ``nodes[i]``.
        index: Node -> vertex number.
        csr: The graph (weighted when the call asked for an edge attribute).
        weight: The edge attribute its weights came from, or ``None``.
        directed: Whether ``G`` was directed.
        multigraph: Whether ``G`` was a multigraph (parallel edges merged).
    """

    __networkx_backend__ = "vyre"

    def __init__(
        self,
        nodes: list[Hashable],
        csr: CsrGraph,
        *,
        weight: str | None,
        directed: bool,
        multigraph: bool,
        integral: bool,
    ) -> None:
        self.nodes = nodes
        self.index = {node: i for i, node in enumerate(nodes)}
        self.csr = csr
        self.weight = weight
        self.directed = directed
        self.multigraph = multigraph
        #: Every weight is a whole number (NetworkX then sums ints: lengths are ints).
        self.integral = integral
        self.graph: dict[str, Any] = {}
        self.__networkx_cache__: dict[str, Any] = {}
        self._token: int | None = None
        self._session: ResidentGraphSession | None = None
        self._reverse: VyreGraph | None = None

    def is_directed(self) -> bool:
        """As NetworkX's."""
        return self.directed

    def is_multigraph(self) -> bool:
        """As NetworkX's."""
        return self.multigraph

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, node: object) -> bool:
        try:
            return node in self.index
        except TypeError:  # an unhashable "node"
            return False

    def vertex(self, node: Hashable) -> int:
        """The vertex of ``node`` (KeyError if it is not one)."""
        return self.index[node]

    @property
    def session(self) -> ResidentGraphSession:
        """The graph's resident session on the NetworkX loop's backend (opened once)."""
        if self._session is None:
            token, session = loop.enter(resident_graph(loop.backend, self.csr))
            self._token, self._session = token, session
            weakref.finalize(self, loop.leave_soon, token)
        return self._session

    def run(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``await session.<method>(*args, **kwargs)`` on the loop, blocking for it."""
        session = self.session

        async def call() -> Any:
            return await getattr(session, method)(*args, **kwargs)

        return loop.call(call)

    def reversed(self) -> VyreGraph:
        """The graph with every edge reversed (for targets' distances), made once."""
        if not self.directed:
            return self
        if self._reverse is None:
            flipped = self.csr.transpose()
            self._reverse = VyreGraph(
                self.nodes,
                flipped,
                weight=self.weight,
                directed=True,
                multigraph=self.multigraph,
                integral=self.integral,
            )
        return self._reverse


def convert_from_nx(
    graph: Any,
    edge_attrs: dict[str, Any] | None = None,
    node_attrs: dict[str, Any] | None = None,
    preserve_edge_attrs: bool = False,
    preserve_node_attrs: bool = False,
    preserve_graph_attrs: bool = False,
    name: str | None = None,
    graph_name: str | None = None,
) -> VyreGraph:
    """Convert a NetworkX graph (NetworkX calls this; it caches what it returns).

    Only one edge attribute is kept, as float32 weights (``edge_attrs`` names it and
    its default); a multigraph's parallel edges become one, of the smallest weight
    (what shortest paths use).

    Raises:
        NotImplementedError: The call needs what a vyre graph does not keep (several
            edge attributes, node attributes, all edge data), or a weight that is not a
            finite number: NetworkX then runs its own implementation.
    """
    global _conversions
    if node_attrs or preserve_node_attrs or preserve_edge_attrs is True:
        raise NotImplementedError("vyre graphs keep no node attributes or all edge data")
    weight, default = _weight(edge_attrs)
    nodes = list(graph)
    index = {node: i for i, node in enumerate(nodes)}
    adjacency = graph._succ if graph.is_directed() else graph._adj
    multigraph = bool(graph.is_multigraph())
    rows = [adjacency[u] for u in nodes]
    counts = np.fromiter(map(len, rows), np.int64, len(nodes))
    offsets = np.zeros(len(nodes) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    edges = int(offsets[-1])
    # Per edge only C-level iteration (chain, map): conversion is the first call's cost.
    if nodes == list(range(len(nodes))):  # the nodes are their own numbers
        targets: Iterable[Any] = chain.from_iterable(rows)
    else:
        targets = chain.from_iterable(map(index.__getitem__, row) for row in rows)
    indices = np.fromiter(targets, np.int32, edges)
    weights = None
    integral = True
    if weight is not None:
        values = _edge_weights(rows, weight, default, multigraph, edges)
        integral = bool(np.all(values == np.round(values)))
        weights = values.astype(np.float32)
    csr = trusted_csr(offsets, indices, weights, symmetric=not graph.is_directed())
    _conversions += 1
    converted = VyreGraph(
        nodes,
        csr,
        weight=weight,
        directed=bool(graph.is_directed()),
        multigraph=multigraph,
        integral=integral,
    )
    if preserve_graph_attrs:
        converted.graph.update(graph.graph)
    return converted


def convert_to_nx(obj: Any, *, name: str | None = None) -> Any:
    """A result back to NetworkX: results are NetworkX's types already, returned as is."""
    return obj


def _weight(edge_attrs: dict[str, Any] | None) -> tuple[str | None, float]:
    if not edge_attrs:
        return None, 1.0
    if len(edge_attrs) != 1:
        raise NotImplementedError("vyre graphs keep one edge attribute (the weight)")
    ((weight, default),) = edge_attrs.items()
    if not isinstance(weight, str):
        raise NotImplementedError("the weight must be an edge attribute's name")
    return weight, 1.0 if default is None else float(default)


def _edge_weights(
    rows: list[Any], weight: str, default: float, multigraph: bool, edges: int
) -> np.ndarray:
    """float64 weights of the edges in row order: the ``weight`` attribute (else
    ``default``); a multigraph's parallel edges give their lightest.

    Raises:
        NotImplementedError: A weight is not a finite number.
    """
    attribute = methodcaller("get", weight, default)
    if multigraph:  # parallel edges: the lightest, as shortest paths take
        each: Iterable[Any] = (
            min(map(float, map(attribute, keyed.values())), default=math.inf)
            for row in rows
            for keyed in row.values()
        )
    else:
        each = chain.from_iterable(map(attribute, row.values()) for row in rows)
    try:
        values = np.fromiter(each, np.float64, edges)
    except (TypeError, ValueError):
        raise NotImplementedError("a weight is not a number") from None
    if values.size and not np.isfinite(values).all():
        raise NotImplementedError("a weight is not a finite number")
    return values


def as_nodes(graph: VyreGraph, vertices: Iterable[int]) -> list[Hashable]:
    """The nodes of vertex numbers."""
    nodes = graph.nodes
    return [nodes[v] for v in vertices]
