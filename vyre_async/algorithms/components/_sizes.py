"""A graph's components and their sizes, from its labels."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class ComponentSizes(NamedTuple):
    """Every component of a graph once, by label: ``labels, sizes = session.component_sizes()``.

    Attributes:
        labels: int32, each component's label (its smallest vertex id), ascending.
        sizes: int64, the vertices of the component of the same position.
    """

    labels: np.ndarray
    sizes: np.ndarray


def component_sizes(labels: np.ndarray) -> ComponentSizes:
    """The components that per-vertex ``labels`` describe, and their sizes.

    Args:
        labels: One label per vertex, each a vertex id (the smallest of the vertex's
            component, as ``session.components()`` returns them).

    Returns:
        The distinct labels in ascending order and how many vertices carry each.
    """
    counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=len(labels))
    present = np.flatnonzero(counts)
    return ComponentSizes(present.astype(np.int32), counts[present].astype(np.int64))
