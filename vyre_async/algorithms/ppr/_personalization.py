"""What a caller may personalize PageRank with, checked and normalized before any run.

``pagerank(personalization=...)`` takes a vertex (all teleports go there), a list of
vertices (uniform over the distinct ones), or a weight vector of length V
(non-negative, finite, with positive mass; normalized to sum to 1). Integer values
are vertex ids, floating ones weights.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from ...errors import ValidationError
from ._kind import PersonalizedParams, PprParams

__all__ = ["personalized_query", "require_seeds", "teleport_vector"]

#: A personalization as callers give it.
Personalization = int | np.integer | Sequence[int] | Sequence[float] | np.ndarray


def _is_vertex(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def _vertex(value: object, num_vertices: int) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"a personalization vertex must be an int, got {type(value).__name__}")
    vertex = int(value)
    if not 0 <= vertex < num_vertices:
        raise ValidationError(
            f"personalization vertex {vertex} is out of range for a graph of {num_vertices} "
            "vertices",
            fix=f"pass vertex ids in [0, {num_vertices - 1}]."
            if num_vertices
            else "the graph has no vertices.",
        )
    return vertex


def teleport_vector(value: Personalization, num_vertices: int) -> int | np.ndarray:
    """``value`` as a single seed vertex, or as a float32 distribution over the vertices.

    Args:
        value: A vertex id, a sequence (or 1-D array) of vertex ids, or a float
            sequence (or array) of ``num_vertices`` non-negative weights.
        num_vertices: Vertices of the graph.

    Returns:
        The vertex (an ``int``) for one vertex; else float32 weights summing to 1.

    Raises:
        ValidationError: A vertex out of range, an empty list, weights of the wrong
            length, negative, NaN or infinite, or with zero mass.
        TypeError: Neither ints nor floats.
    """
    if _is_vertex(value):
        return _vertex(value, num_vertices)
    array = np.asarray(value)
    if array.ndim != 1:
        raise ValidationError(
            f"a personalization must be a vertex, a list of vertices or a weight vector, "
            f"got an array of shape {array.shape}",
            fix="pass a vertex id, a flat list of vertex ids, or one weight per vertex.",
        )
    if array.size == 0:
        raise ValidationError(
            "the personalization lists no vertex",
            fix="pass at least one vertex id, or one weight per vertex.",
        )
    if array.dtype.kind in "iu":
        for vertex in (int(array.min()), int(array.max())):
            _vertex(vertex, num_vertices)
        chosen = np.unique(array)
        weights = np.zeros(num_vertices, np.float64)
        weights[chosen] = 1.0 / chosen.size
        return weights.astype(np.float32)
    if array.dtype.kind != "f":
        raise TypeError(
            f"a personalization holds vertex ids (ints) or weights (floats), got {array.dtype}"
        )
    return _normalized(array.astype(np.float64), num_vertices)


def _normalized(weights: np.ndarray, num_vertices: int) -> np.ndarray:
    if weights.size != num_vertices:
        raise ValidationError(
            f"the personalization has {weights.size} weights for a graph of {num_vertices} "
            "vertices",
            fix=f"pass one weight per vertex ({num_vertices}), or a list of vertex ids (ints).",
        )
    bad = np.flatnonzero(~np.isfinite(weights) | (weights < 0))
    if bad.size:
        raise ValidationError(
            f"personalization weight {int(bad[0])} is {float(weights[bad[0]])!r}; weights "
            "must be finite and >= 0",
            fix="pass non-negative finite weights (they are normalized to sum to 1).",
        )
    peak = float(weights.max())
    if not peak > 0:
        raise ValidationError(
            "the personalization weights sum to 0, so no vertex can be teleported to",
            fix="give at least one vertex a positive weight.",
        )
    scaled = weights / peak  # no overflow in the sum, however large the weights
    normalized: np.ndarray = (scaled / scaled.sum()).astype(np.float32)
    return normalized


def require_seeds(seeds: Sequence[int] | np.ndarray) -> None:
    """Refuse an empty seed list (a :class:`ValidationError` with a fix)."""
    if np.asarray(seeds).size == 0:
        raise ValidationError(
            "ppr_many needs at least one seed, got none", fix="pass one seed vertex per query."
        )


def personalized_query(
    personalization: Personalization,
    num_vertices: int,
    *,
    damping: float = 0.85,
    tol: float = 1e-6,
    max_iter: int = 100,
) -> tuple[PprParams, int | None]:
    """The ``ppr`` query that PageRank personalized by ``personalization`` is.

    Returns:
        ``(PprParams, vertex)`` for one vertex (a seeded query, which batches with
        others), else ``(PersonalizedParams, None)`` carrying the normalized weights.

    Raises:
        ValidationError: As :func:`teleport_vector`.
    """
    target = teleport_vector(personalization, num_vertices)
    if isinstance(target, int):
        return PprParams(damping=damping, tol=tol, max_iter=max_iter), target
    weights = target.astype("<f4").tobytes()
    params = PersonalizedParams(
        damping=damping, tol=tol, max_iter=max_iter, personalization=weights
    )
    return params, None
