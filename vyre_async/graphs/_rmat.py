"""R-MAT graphs as the Graph500 benchmark generates them (Kronecker, no noise).

Each edge picks one quadrant of the adjacency matrix per bit level, with
probabilities ``a, b, c, d = 1 - a - b - c``: the upper bit of the quadrant becomes a
source bit, the lower one a destination bit. With the default ``a = 0.57`` the
result has the heavy-tailed degrees of real networks.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from ._csr import CsrGraph

#: Edges generated per step: small enough that the per-level temporaries stay in cache.
#: It is part of the output's definition (it orders the random draws), so keep it fixed.
_CHUNK = 1 << 18

Int32s = npt.NDArray[np.int32]


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

    The same arguments give the same arrays on every call and machine.

    Args:
        scale: log2 of the vertex count, 0 to 30.
        edge_factor: Edges generated per vertex (before symmetrisation and dedupe).
        seed: Non-negative seed; edges and the vertex permutation draw from
            independent streams spawned from it.
        a: Probability of the top-left quadrant at each level.
        b: Probability of the top-right quadrant.
        c: Probability of the bottom-left quadrant (``d = 1 - a - b - c``).
        symmetric: Add every edge reversed (an undirected graph, as in Graph500).
        dedupe: Collapse repeated edges.
        permute: Relabel vertices with a seeded random permutation, so that vertex
            ids do not reveal degree.

    Returns:
        The graph; it has at most ``2 * edge_factor * 2**scale`` edges.

    Raises:
        ValidationError: A parameter is out of range.
    """
    _check_parameters(scale, edge_factor, seed, a, b, c)
    num_vertices = 1 << scale
    edge_seq, perm_seq = np.random.SeedSequence(seed).spawn(2)
    src, dst = kronecker_edges(
        scale, edge_factor * num_vertices, np.random.default_rng(edge_seq), a=a, b=b, c=c
    )
    if permute:
        perm = np.random.default_rng(perm_seq).permutation(num_vertices).astype(np.int32)
        for ids in (src, dst):
            for start in range(0, ids.size, _CHUNK):
                part = ids[start : start + _CHUNK]
                part[...] = perm[part]
    return CsrGraph.from_edges(src, dst, num_vertices, symmetric=symmetric, dedupe=dedupe)


def kronecker_edges(
    scale: int, num_edges: int, rng: np.random.Generator, *, a: float, b: float, c: float
) -> tuple[Int32s, Int32s]:
    """Draw ``num_edges`` R-MAT edges over ``2**scale`` vertices.

    One float32 uniform per edge and level picks the quadrant: below ``a`` is
    top-left, then top-right, bottom-left, and from ``a + b + c`` on bottom-right.

    Returns:
        ``(src, dst)`` as int32 arrays.
    """
    src = np.empty(num_edges, dtype=np.int32)
    dst = np.empty(num_edges, dtype=np.int32)
    ab, abc = np.float32(a + b), np.float32(a + b + c)
    a32 = np.float32(a)
    draw = np.empty(_CHUNK, dtype=np.float32)
    low = np.empty(_CHUNK, dtype=bool)
    high = np.empty(_CHUNK, dtype=bool)
    for start in range(0, num_edges, _CHUNK):
        n = min(_CHUNK, num_edges - start)
        s, d = src[start : start + n], dst[start : start + n]
        s[...] = 0
        d[...] = 0
        r, lo, hi = draw[:n], low[:n], high[:n]
        for _ in range(scale):
            rng.random(n, dtype=np.float32, out=r)
            # Quadrant q in 0..3 is the count of thresholds passed: q >> 1 is the source
            # bit and q & 1 the destination bit, i.e. [r >= a] ^ [r >= a+b] ^ [r >= a+b+c].
            np.greater_equal(r, ab, out=hi)
            s <<= 1
            np.add(s, hi, out=s)
            np.greater_equal(r, a32, out=lo)
            lo ^= hi
            np.greater_equal(r, abc, out=hi)
            lo ^= hi
            d <<= 1
            np.add(d, lo, out=d)
    return src, dst


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
    if not _is_int(seed) or seed < 0:
        raise ValidationError(
            f"rmat seed is {seed!r}; expected a non-negative int",
            fix="pass seed as an int >= 0.",
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
