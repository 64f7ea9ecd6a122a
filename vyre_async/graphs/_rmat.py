"""R-MAT graphs as the Graph500 benchmark draws them (Kronecker, no noise), fast.

Each edge picks one quadrant of the adjacency matrix per bit level, with
probabilities ``a, b, c, d = 1 - a - b - c``: the upper bit of the quadrant becomes a
source bit, the lower one a destination bit. With the default ``a = 0.57`` the
result has the heavy-tailed degrees of real networks.

The edges come from a counter-based generator (:mod:`._rmat_counter`): edge ``e`` is a
pure function of the seed and ``e``, so the stream can be cut anywhere, drawn by many
threads at once, or drawn on a GPU, and always gives the same graph.
"""

from __future__ import annotations

from typing import Literal

from ..errors import ValidationError
from ._csr import CsrGraph
from ._rmat_counter import RmatParams, check_rmat_parameters
from ._rmat_csr import rmat_csr
from ._trusted import trusted_csr
from ._weights import with_uniform_weights


def rmat(
    scale: int,
    edge_factor: int = 16,
    seed: int = 0,
    *,
    a: float = 0.57,
    b: float = 0.19,
    c: float = 0.19,
    symmetric: bool = True,
    dedupe: bool = True,
    permute: bool = True,
    weights: Literal["uniform"] | None = None,
) -> CsrGraph:
    """Generate a Graph500-style R-MAT graph with ``2**scale`` vertices.

    The same arguments give the same arrays on every call and machine, on the host and
    on a GPU (see :class:`RmatParams` for the generator's definition).

    Args:
        scale: log2 of the vertex count, 0 to 30.
        edge_factor: Edges generated per vertex (before symmetrisation and dedupe).
        seed: Non-negative seed of the edge stream and of the vertex relabelling.
        a: Probability of the top-left quadrant at each level.
        b: Probability of the top-right quadrant.
        c: Probability of the bottom-left quadrant (``d = 1 - a - b - c``).
        symmetric: Add every edge reversed (an undirected graph, as in Graph500).
        dedupe: Collapse repeated edges.
        permute: Relabel vertices with a seeded bijection, so that vertex ids do not
            reveal degree.
        weights: ``"uniform"``: float32 weights in (0, 1], a seeded hash of each edge's
            end points (an edge and its reverse weigh the same); ``None``: unweighted.

    Returns:
        The graph, rows sorted by destination; it has at most
        ``2 * edge_factor * 2**scale`` edges.

    Raises:
        ValidationError: A parameter is out of range.
    """
    params = rmat_params(scale, edge_factor, seed, a=a, b=b, c=c)
    offsets, indices = rmat_csr(params, symmetric=symmetric, dedupe=dedupe, permute=permute)
    graph = trusted_csr(offsets, indices, symmetric=symmetric)
    if weights is None:
        return graph
    if weights != "uniform":
        raise ValidationError(
            f"weights must be 'uniform' or None, got {weights!r}",
            fix="pass weights='uniform' for seeded (0, 1] weights, or leave it out.",
        )
    return with_uniform_weights(graph, params.seed)


def rmat_params(
    scale: int,
    edge_factor: int = 16,
    seed: int = 0,
    *,
    a: float = 0.57,
    b: float = 0.19,
    c: float = 0.19,
) -> RmatParams:
    """Check R-MAT parameters (as :func:`rmat` takes them) and return them as one value.

    Raises:
        ValidationError: A parameter is out of range.
    """
    check_rmat_parameters(scale, edge_factor, seed, a, b, c)
    return RmatParams(int(scale), int(edge_factor), int(seed), float(a), float(b), float(c))
