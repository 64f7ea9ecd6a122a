"""Running a direction-optimizing BFS on a resident graph, as repeated sequences.

A traversal is ``bfs_init`` once and then levels ``[bfs_top_down, bfs_bottom_up,
bfs_advance]``, submitted a few levels at a time with only the eight state words read
back between submissions (see :mod:`.._repeat`). The batches are prepared once per
scratch (:class:`BfsScratch`) and then only resubmitted with each traversal's source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ...backends import Backend, PreparedSequence, ResidentBuffer, SequenceStep
from .._repeat import FIRST_BATCH, prepare_batches, run_prepared
from ._kernels import bfs_advance, bfs_bottom_up, bfs_init, bfs_top_down
from ._state import BFS_UNLIMITED, STATE_DONE


class BfsScratch:
    """A traversal's levels and state buffers, and its batches prepared over them.

    The batches (``first``: init then levels; ``more``: levels) are prepared once,
    by the first traversal that uses the scratch; later traversals only submit them
    with their own source.
    """

    __slots__ = ("first", "levels", "more", "nbytes", "state")

    def __init__(self, levels: ResidentBuffer, state: ResidentBuffer) -> None:
        self.levels = levels
        self.state = state
        #: Their bytes.
        self.nbytes = levels.nbytes + state.nbytes
        self.first: PreparedSequence | None = None
        self.more: PreparedSequence | None = None

    @property
    def buffers(self) -> tuple[ResidentBuffer, ...]:
        """The levels and state buffers."""
        return (self.levels, self.state)


def level_steps(graph: Mapping[str, ResidentBuffer], scratch: BfsScratch) -> list[SequenceStep]:
    """One direction-optimizing level: top-down, bottom-up, then the switch and advance.

    Args:
        graph: The resident graph: ``offsets``, ``indices``, ``in_offsets``, ``in_indices``.
        scratch: The traversal's levels and state.
    """
    levels, state = scratch.levels, scratch.state
    return [
        SequenceStep(
            bfs_top_down,
            {
                "offsets": graph["offsets"],
                "indices": graph["indices"],
                "levels": levels,
                "state": state,
            },
        ),
        SequenceStep(
            bfs_bottom_up,
            {
                "in_offsets": graph["in_offsets"],
                "in_indices": graph["in_indices"],
                "levels": levels,
                "state": state,
            },
        ),
        SequenceStep(bfs_advance, {"levels": levels, "state": state}, {"bottom_up": 1}),
    ]


async def traverse(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    scratch: BfsScratch,
    source: int,
    max_level: int,
    check: Callable[[], None],
) -> tuple[np.ndarray, int]:
    """BFS from ``source`` into ``scratch.levels``, at most ``max_level`` levels deep.

    Args:
        backend: The backend holding the graph and the scratch.
        graph: The resident graph (see :func:`level_steps`).
        scratch: Levels and state; its batches are prepared here on first use.
        source: The source vertex (checked by the caller).
        max_level: The deepest level to discover (``BFS_UNLIMITED``: no limit). Below
            16, the first submission runs exactly ``max_level`` levels, all it needs.
        check: Called before each submission (a closed session raises there).

    Returns:
        The final state words and the device time of the traversal in nanoseconds.
    """
    check()
    if scratch.first is None or scratch.more is None:
        init = SequenceStep(
            bfs_init,
            {"levels": scratch.levels, "state": scratch.state},
            {"source": 0, "max_level": BFS_UNLIMITED},
        )
        scratch.first, scratch.more = prepare_batches(
            backend, [init], level_steps(graph, scratch), scratch.state
        )
    return await run_prepared(
        scratch.first,
        scratch.more,
        STATE_DONE,
        scalars={"source": int(source), "max_level": max_level},
        check=check,
        first_batch=min(max(max_level, 0), FIRST_BATCH),
    )
