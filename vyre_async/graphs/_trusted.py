"""Graphs from CSR arrays whose symmetry a trusted builder already guarantees."""

from __future__ import annotations

from ._checks import Indices, Offsets, Weights
from ._csr import CsrGraph


def trusted_csr(
    offsets: Offsets, indices: Indices, weights: Weights | None = None, *, symmetric: bool
) -> CsrGraph:
    """Wrap CSR arrays that a graph builder made as a graph, without re-checking symmetry.

    For arrays of :func:`~vyre_async.graphs.rmat`'s builder, of the device R-MAT
    builder, of a cache file that passed its checksum, or of a :class:`CsrGraph` that
    crossed a process boundary: dtypes, offsets and column bounds are checked as on
    construction, but ``symmetric`` is taken as given (checking it sorts every edge
    twice, seconds for 10**8 edges).

    Args:
        offsets: int32 or int64 row offsets.
        indices: int32 column indices.
        weights: Optional float32 edge weights.
        symmetric: Whether every edge has its reverse (the builder's guarantee).

    Returns:
        The graph, sharing the arrays (no copy of contiguous inputs).

    Raises:
        ValidationError: The arrays break the CSR rules.
    """
    return CsrGraph._trusted(offsets, indices, weights, symmetric=symmetric)
