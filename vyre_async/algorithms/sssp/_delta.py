"""Choosing the bucket width delta from the graph.

Davidson et al. (IPDPS 2014) set delta = ``32 * mean weight / mean degree``: a
bucket then holds about a warp's worth of edges per vertex. That fits a graph of even
degrees, like a road grid, where a bucket's light steps cost little and fewer, wider
buckets save steps. On a graph with hubs it does not: a hub's distance drops several
times within a wide bucket and each drop expands its whole list again. So the width
shrinks with the degree skew, by the fourth root of ``max degree / mean degree``
(1 on a grid, about 8 on an R-MAT graph of scale 22): Meyer and Sanders' bound
``1 / max degree`` for random weights, softened, because with light and heavy edges a
re-expanded hub relaxes only its light edges, of which a narrower bucket has fewer.
"""

from __future__ import annotations

import math

from ._layout import SSSP_UNBOUNDED

#: Warp width in Davidson et al.'s rule.
_WARP = 32.0
#: Smallest delta chosen (a float32 sum of distances moves by at least this).
_SMALLEST = 1e-30


def choose_delta(
    num_vertices: int, num_edges: int, weight_sum: float, max_degree: int, *, scale: float = 1.0
) -> float:
    """The bucket width for a graph: ``32 * mean weight / mean degree / skew ** 0.25``.

    ``skew`` is ``max degree / mean degree`` (at least 1). A graph without edges, or
    whose weights are all zero, gets ``SSSP_UNBOUNDED`` (one bucket).

    Args:
        num_vertices: Vertices of the graph.
        num_edges: Edges of the graph.
        weight_sum: Sum of the edge weights.
        max_degree: Largest out-degree.
        scale: Factor applied to the result (for tuning).

    Returns:
        A float32-representable delta in ``[1e-30, SSSP_UNBOUNDED]``.

    Raises:
        ValueError: A count is negative, or ``weight_sum``/``scale`` is not a
            non-negative finite number.
    """
    if num_vertices < 0 or num_edges < 0 or max_degree < 0:
        raise ValueError(
            f"graph counts must be >= 0, got {num_vertices} vertices, {num_edges} edges, "
            f"max degree {max_degree}"
        )
    if not (math.isfinite(weight_sum) and weight_sum >= 0):
        raise ValueError(f"weight_sum must be a finite number >= 0, got {weight_sum!r}")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
    if num_edges == 0 or num_vertices == 0 or weight_sum == 0:
        return SSSP_UNBOUNDED
    mean_weight = weight_sum / num_edges
    mean_degree = num_edges / num_vertices
    skew = max(1.0, max_degree / mean_degree)
    delta = float(scale * _WARP * mean_weight / mean_degree / skew**0.25)
    return min(max(delta, _SMALLEST), SSSP_UNBOUNDED)
