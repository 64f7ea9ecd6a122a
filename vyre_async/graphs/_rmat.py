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

import numbers
from typing import Any

from ..errors import ValidationError
from ._csr import CsrGraph
from ._rmat_counter import RmatParams
from ._rmat_csr import rmat_csr
from ._trusted import trusted_csr


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

    Returns:
        The graph, rows sorted by destination; it has at most
        ``2 * edge_factor * 2**scale`` edges.

    Raises:
        ValidationError: A parameter is out of range.
    """
    params = rmat_params(scale, edge_factor, seed, a=a, b=b, c=c)
    offsets, indices = rmat_csr(params, symmetric=symmetric, dedupe=dedupe, permute=permute)
    return trusted_csr(offsets, indices, symmetric=symmetric)


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
    _check_parameters(scale, edge_factor, seed, a, b, c)
    return RmatParams(int(scale), int(edge_factor), int(seed), float(a), float(b), float(c))


def _check_parameters(
    scale: Any, edge_factor: Any, seed: Any, a: object, b: object, c: object
) -> None:
    if not _is_int(scale) or not 0 <= scale <= 30:
        raise ValidationError(
            f"rmat scale is {scale!r}; expected an int from 0 to 30",
            fix="pass scale as log2 of the vertex count, e.g. scale=18 for 262144 vertices.",
        )
    if not _is_int(edge_factor) or edge_factor < 1:
        raise ValidationError(
            f"rmat edge_factor is {edge_factor!r}; expected an int >= 1",
            fix="pass edges per vertex as a positive int; Graph500 uses 16.",
        )
    if not _is_int(seed) or not 0 <= seed < 2**64:
        raise ValidationError(
            f"rmat seed is {seed!r}; expected an int from 0 to 2**64 - 1",
            fix="pass seed as a non-negative int below 2**64.",
        )
    total = 0.0
    for name, p in (("a", a), ("b", b), ("c", c)):
        if not isinstance(p, numbers.Real) or not 0.0 < float(p) < 1.0:
            raise ValidationError(
                f"rmat probability {name} is {p!r}; expected a number strictly between 0 and 1",
                fix="use the Graph500 values a=0.57, b=0.19, c=0.19 or similar.",
            )
        total += float(p)
    if not total < 1.0:
        raise ValidationError(
            f"rmat probabilities sum to a + b + c = {total:g}; "
            "they must leave d = 1 - a - b - c > 0",
            fix="lower a, b or c so that their sum is below 1.",
        )


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
