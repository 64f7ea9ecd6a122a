"""PageRank, as ``networkx.pagerank`` gives it.

NetworkX stops once an iteration changes the ranks by less than ``N * tol`` in L1
norm, and raises ``PowerIterationFailedConvergence`` when ``max_iter`` iterations do
not get there: the device run stops on the same test (float32), and a run that used
every iteration is checked once more on the host before its ranks are returned.
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
            differ, a multigraph's parallel edges, a personalization or a dangling
            distribution.
    """
    count = len(G)
    if count == 0:
        return {}
    if G.multigraph:
        raise NotImplementedError("PageRank over a multigraph's parallel edges")
    weights = G.csr.weights
    if weight is not None and weights is not None and weights.size and np.ptp(weights) != 0:
        raise NotImplementedError("PageRank with edge weights that differ")
    if personalization is not None or dangling is not None:
        raise NotImplementedError("PageRank with a personalization or dangling distribution")
    if max_iter < 1:
        raise nx.PowerIterationFailedConvergence(max_iter)
    before = G.session.stats().levels
    ranks: np.ndarray = G.run("pagerank", float(alpha), float(tol) * count, int(max_iter))
    if G.session.stats().levels - before >= max_iter and not _converged(
        G, ranks, alpha, tol * count
    ):
        raise nx.PowerIterationFailedConvergence(max_iter)
    return dict(zip(G.nodes, ranks.astype(np.float64).tolist(), strict=True))


def _converged(graph: VyreGraph, ranks: np.ndarray, alpha: float, bound: float) -> bool:
    """Whether one more power iteration (float64, on the host) moves ``ranks`` by less
    than ``bound`` in L1 norm."""
    csr = graph.csr
    x = ranks.astype(np.float64)
    degree = np.diff(csr.offsets).astype(np.float64)
    share = np.divide(x, degree, out=np.zeros_like(x), where=degree > 0)
    sources = np.repeat(np.arange(len(x)), np.diff(csr.offsets))
    gathered = np.bincount(csr.indices, weights=share[sources], minlength=len(x))
    dangling = float(x[degree == 0].sum())
    following = alpha * (gathered + dangling / len(x)) + (1.0 - alpha) / len(x)
    return float(np.abs(following - x).sum()) < bound
