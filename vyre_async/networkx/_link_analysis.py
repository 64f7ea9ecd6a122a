"""PageRank, as ``networkx.pagerank`` gives it, personalized or not.

NetworkX stops once an iteration changes the ranks by less than ``N * tol`` in L1
norm, and raises ``PowerIterationFailedConvergence`` when ``max_iter`` iterations do
not get there: the device run stops on the same test (float32), and a run that used
every iteration is checked once more on the host before its ranks are returned. A
personalization runs as the session's personalized PageRank (the ``ppr`` kind), whose
walk leaves a vertex without out-edges to the personalization, as NetworkX's does
when ``dangling`` is not given.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import networkx as nx
import numpy as np

from ._graph import VyreGraph

__all__ = ["pagerank"]


def pagerank(
    G: VyreGraph,
    alpha: float = 0.85,
    personalization: dict[Hashable, float] | None = None,
    max_iter: int = 100,
    tol: float = 1.0e-6,
    nstart: dict[Hashable, float] | None = None,
    weight: Any = "weight",
    dangling: dict[Hashable, float] | None = None,
) -> dict[Hashable, float]:
    """As ``networkx.pagerank`` (``nstart`` only starts NetworkX's iteration elsewhere: the
    converged ranks do not depend on it).

    Raises:
        NotImplementedError: What vyre's PageRank does not compute: weights that
            differ, a multigraph's parallel edges, a dangling distribution.
    """
    count = len(G)
    if count == 0:
        return {}
    if G.multigraph:
        raise NotImplementedError("PageRank over a multigraph's parallel edges")
    weights = G.csr.weights
    if weight is not None and weights is not None and weights.size and np.ptp(weights) != 0:
        raise NotImplementedError("PageRank with edge weights that differ")
    if dangling is not None:
        raise NotImplementedError("PageRank with a dangling distribution")
    if max_iter < 1:
        raise nx.PowerIterationFailedConvergence(max_iter)
    teleport = None
    if personalization:  # NetworkX treats an empty dict as none
        teleport = np.array([personalization.get(n, 0) for n in G.nodes], dtype=np.float64)
        teleport /= teleport.sum()
    before = G.session.stats().levels
    ranks: np.ndarray = G.run(
        "pagerank", float(alpha), float(tol) * count, int(max_iter), personalization=teleport
    )
    if G.session.stats().levels - before >= max_iter and not _converged(
        G, ranks, alpha, tol * count, teleport
    ):
        raise nx.PowerIterationFailedConvergence(max_iter)
    return dict(zip(G.nodes, ranks.astype(np.float64).tolist(), strict=True))


def _converged(
    graph: VyreGraph,
    ranks: np.ndarray,
    alpha: float,
    bound: float,
    teleport: np.ndarray | None,
) -> bool:
    """Whether one more power iteration (float64, on the host) moves ``ranks`` by less
    than ``bound`` in L1 norm; the walk teleports, and leaves vertices without
    out-edges, to ``teleport`` (``None``: uniformly)."""
    csr = graph.csr
    x = ranks.astype(np.float64)
    degree = np.diff(csr.offsets).astype(np.float64)
    share = np.divide(x, degree, out=np.zeros_like(x), where=degree > 0)
    sources = np.repeat(np.arange(len(x)), np.diff(csr.offsets))
    gathered = np.bincount(csr.indices, weights=share[sources], minlength=len(x))
    target = np.full(len(x), 1.0 / len(x)) if teleport is None else teleport
    dangling = float(x[degree == 0].sum())
    following = alpha * (gathered + dangling * target) + (1.0 - alpha) * target
    return float(np.abs(following - x).sum()) < bound
