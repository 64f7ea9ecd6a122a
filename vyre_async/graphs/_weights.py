"""Seeded edge weights for generated graphs: a pure function of each edge's end points.

``with_uniform_weights(graph, seed)`` gives every edge ``{u, v}`` a weight drawn
uniformly from (0, 1] by hashing the unordered pair and the seed, so an edge and its
reverse weigh the same (a symmetric graph stays symmetric), the same graph and seed
give the same weights on every machine, and the weights do not depend on how the
graph was built (host, device or cache).
"""

from __future__ import annotations

import numpy as np

from ._csr import CsrGraph
from ._trusted import trusted_csr

#: Weights take 2**24 values, k / 2**24 for k in 1 .. 2**24: exact in float32, never 0.
_STEPS = 1 << 24
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, elementwise on uint64 (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    mixed: np.ndarray = x ^ (x >> np.uint64(31))
    return mixed


def uniform_edge_weights(
    offsets: np.ndarray, indices: np.ndarray, seed: int, *, chunk: int = 1 << 22
) -> np.ndarray:
    """float32 weights in (0, 1] for the CSR edges, one per edge, symmetric in its ends.

    Args:
        offsets: The CSR row offsets.
        indices: The CSR column indices.
        seed: Non-negative seed.
        chunk: Edges hashed per step (bounds the temporary memory).
    """
    rows = np.repeat(np.arange(len(offsets) - 1, dtype=np.uint64), np.diff(offsets))
    out = np.empty(len(indices), np.float32)
    salt = _mix(np.array([seed], np.uint64) + _GOLDEN)[0]
    with np.errstate(over="ignore"):
        for start in range(0, len(indices), chunk):
            u = rows[start : start + chunk]
            v = indices[start : start + chunk].astype(np.uint64)
            pair = (np.minimum(u, v) << np.uint64(32)) | np.maximum(u, v)
            bits = _mix(pair ^ salt) >> np.uint64(40)  # the top 24 bits
            out[start : start + chunk] = (bits + np.uint64(1)).astype(np.float32) / _STEPS
    return out


def with_uniform_weights(graph: CsrGraph, seed: int) -> CsrGraph:
    """``graph`` with seeded uniform (0, 1] weights (see the module description)."""
    weights = uniform_edge_weights(graph.offsets, graph.indices, seed)
    return trusted_csr(graph.offsets, graph.indices, weights, symmetric=graph.symmetric)
