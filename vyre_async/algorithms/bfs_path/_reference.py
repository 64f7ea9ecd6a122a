"""NumPy references of the path kernels: the device semantics on the host."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..bfs import STATE_DONE
from ._layout import PATH_FOUND, PATH_LOST


def bfs_path_init_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``bfs_path_init``: the target into ``goal[0]``.

    Args:
        arrays: ``goal`` (one int32, written).
        scalars: ``target``.
    """
    arrays["goal"][0] = scalars["target"]


def bfs_path_step_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``bfs_path_step``: once the target has a level, the walk back to the source.

    From the target at level ``L``, each step goes to the first in-neighbour (in in-list
    order) one level closer, writing ``path[L] = target`` down to ``path[0]``; then the
    state's done word is ``PATH_FOUND`` (``PATH_LOST`` if a step found none, or the
    level is ``n`` or more). Nothing happens while the traversal is done, or before the
    target has a level.

    Args:
        arrays: ``in_offsets``, ``in_indices``, ``levels``, ``goal`` (read), ``state``
            and ``path`` (updated).
        scalars: The derived ``n``.
    """
    state, levels, path = arrays["state"], arrays["levels"], arrays["path"]
    offsets, indices = arrays["in_offsets"], arrays["in_indices"]
    target = int(arrays["goal"][0])
    if state[STATE_DONE] != 0 or not 0 <= target < int(scalars["n"].item()):
        return
    level = int(levels[target])
    if level < 0:
        return
    if level >= path.size:
        state[STATE_DONE] = PATH_LOST
        return
    v = target
    path[level] = v
    for want in range(level - 1, -1, -1):
        neighbours = indices[offsets[v] : offsets[v + 1]]
        hits = np.flatnonzero(levels[neighbours] == want)
        if not hits.size:
            state[STATE_DONE] = PATH_LOST
            return
        v = int(neighbours[hits[0]])
        path[want] = v
    state[STATE_DONE] = PATH_FOUND
