"""Running a shortest-path query: a BFS that stops at the target, then its path back.

The traversal is the BFS of :mod:`..bfs` (``bfs_init``, then levels of top-down,
bottom-up and advance) with ``bfs_path_init`` in the prefix and ``bfs_path_step``
after each level; its batches are prepared once per scratch (:class:`PathScratch`) and
resubmitted with each query's source and target. The host waits once per batch for the
eight state words, as a traversal does, and once more for the path itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ...backends import Backend, ResidentBuffer, SequenceStep
from .._repeat import prepare_batches, run_prepared
from ..bfs import BFS_UNLIMITED, STATE_DONE, STATE_LEVEL, BfsScratch, bfs_init, level_steps
from ._kernels import bfs_path_init, bfs_path_step
from ._layout import PATH_FOUND


class PathScratch(BfsScratch):
    """A traversal's levels and state, the target's word and the path, and the batches
    prepared over them (by the first query that uses the scratch)."""

    __slots__ = ("goal", "path")

    def __init__(
        self,
        levels: ResidentBuffer,
        state: ResidentBuffer,
        goal: ResidentBuffer,
        path: ResidentBuffer,
    ) -> None:
        super().__init__(levels, state)
        self.goal = goal
        self.path = path
        self.nbytes += goal.nbytes + path.nbytes

    @property
    def buffers(self) -> tuple[ResidentBuffer, ...]:
        """The levels, state, target and path buffers."""
        return (self.levels, self.state, self.goal, self.path)


async def find_path(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    scratch: PathScratch,
    source: int,
    target: int,
    check: Callable[[], None],
) -> tuple[np.ndarray, np.ndarray, int]:
    """One shortest path (fewest edges) from ``source`` to ``target``, two distinct
    vertices checked by the caller.

    Each step back goes to the first in-neighbour (in the graph's in-list order) one
    level closer to the source, as BFS parents do.

    Args:
        backend: The backend holding the graph and the scratch.
        graph: The resident graph: ``offsets``, ``indices``, ``in_offsets``, ``in_indices``.
        scratch: Its buffers; its batches are prepared here on first use.
        source: The source vertex.
        target: The target vertex.
        check: Called before each submission (a closed session raises there).

    Returns:
        The int32 path from ``source`` to ``target`` (empty: unreachable), the final
        state words, and the device time in nanoseconds.
    """
    check()
    if scratch.first is None or scratch.more is None:
        prefix = [
            SequenceStep(
                bfs_init,
                {"levels": scratch.levels, "state": scratch.state},
                {"source": 0, "max_level": BFS_UNLIMITED},
            ),
            SequenceStep(bfs_path_init, {"goal": scratch.goal}, {"target": 0}),
        ]
        walk = SequenceStep(
            bfs_path_step,
            {
                "in_offsets": graph["in_offsets"],
                "in_indices": graph["in_indices"],
                "levels": scratch.levels,
                "state": scratch.state,
                "goal": scratch.goal,
                "path": scratch.path,
            },
        )
        body = [*level_steps(graph, scratch), walk]
        scratch.first, scratch.more = prepare_batches(backend, prefix, body, scratch.state)
    words, device_ns = await run_prepared(
        scratch.first,
        scratch.more,
        STATE_DONE,
        scalars={"source": int(source), "max_level": BFS_UNLIMITED, "target": int(target)},
        check=check,
    )
    if int(words[STATE_DONE]) != PATH_FOUND:
        return np.empty(0, np.int32), words, device_ns
    check()
    path = await backend.read(scratch.path, 0, int(words[STATE_LEVEL]) + 1)
    return path, words, device_ns
