"""Which scratch runs many sources: lanes where they pay, else one source at a time.

A replica pools scratches by their ``shape`` (a tuple whose first item names the kind)
and their bytes; :func:`allocate_shape` makes one of any shape this package plans.
"""

from __future__ import annotations

from ...backends import Backend
from ...errors import ValidationError
from ._graph import GraphStats
from ._many import (
    ManyShape,
    ManySsspScratch,
    Readback,
    allocate_many_scratch,
    lanes_for_budget,
    many_scratch_nbytes,
)
from ._run import ScratchShape, SsspScratch, allocate_scratch, scratch_nbytes

#: Lanes are planned only where ``max degree <= LANES_MAX_SKEW * mean degree``.
LANES_MAX_SKEW = 16.0


def plan_many(
    stats: GraphStats, count: int, readback: Readback, budget_bytes: int
) -> ScratchShape | ManyShape:
    """The scratch shape to run ``count`` sources with: lanes, or one at a time.

    Args:
        stats: The graph's statistics (``measure_graph``).
        count: Sources to run.
        readback: What comes back.
        budget_bytes: Device bytes one scratch may take.

    Returns:
        ``("sssp_many", V, E, lanes, readback)`` where lanes pay and fit, else
        ``("sssp", V, E)``.
    """
    vertices, edges = stats.num_vertices, stats.num_edges
    even = edges == 0 or stats.max_degree <= LANES_MAX_SKEW * edges / max(vertices, 1)
    if count > 1 and even:
        try:
            lanes = lanes_for_budget(vertices, edges, count, budget_bytes, readback)
        except ValidationError:
            lanes = 0
        if lanes > 1:
            return ("sssp_many", vertices, edges, lanes, readback)
    return ("sssp", vertices, edges)


def shape_nbytes(shape: ScratchShape | ManyShape) -> int:
    """Device bytes of a scratch of ``shape`` (a light graph built later comes on top)."""
    if len(shape) == 5:
        return many_scratch_nbytes(shape[1], shape[2], shape[3], shape[4])
    return scratch_nbytes(shape[1], shape[2])


async def allocate_shape(
    backend: Backend, shape: ScratchShape | ManyShape
) -> SsspScratch | ManySsspScratch:
    """Allocate a scratch of ``shape`` (from :func:`plan_many`, or a scratch's ``shape``).

    Raises:
        ValueError: Not a shortest-path scratch shape.
        OutOfMemoryError: The buffers do not fit (none is left allocated).
    """
    if len(shape) == 5 and shape[0] == "sssp_many":
        return await allocate_many_scratch(backend, shape[1], shape[2], shape[3], shape[4])
    if len(shape) == 3 and shape[0] == "sssp":
        return await allocate_scratch(backend, shape[1], shape[2])
    raise ValueError(f"not a shortest-path scratch shape: {shape!r}")
