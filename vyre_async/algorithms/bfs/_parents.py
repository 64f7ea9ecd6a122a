"""A single-source traversal that also gives each vertex a BFS parent.

After the traversal, one kernel over the vertices (``msbfs_parents``, shared with the
multi-source traversals, whose rows it handles the same way) pulls each vertex's
parent from its in-edges: its first in-neighbour, in in-list order, one level closer
to the source. The kernel and the read of both arrays are one prepared sequence, so
the parents cost one launch and one more array in the same readback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ...backends import Backend, PreparedSequence, ReadRange, ResidentBuffer, SequenceStep
from ..msbfs import msbfs_parents
from ._run import BfsScratch, traverse


class ParentsScratch(BfsScratch):
    """A traversal's levels and state, its parents buffer, and the parents' sequence.

    The sequence (``msbfs_parents`` then the read of levels and parents) is prepared by
    the first traversal that uses the scratch, as the traversal's batches are.
    """

    __slots__ = ("finish", "parents")

    def __init__(self, levels: ResidentBuffer, state: ResidentBuffer, parents: ResidentBuffer):
        super().__init__(levels, state)
        self.parents = parents
        self.nbytes += parents.nbytes
        self.finish: PreparedSequence | None = None

    @property
    def buffers(self) -> tuple[ResidentBuffer, ...]:
        """The levels, state and parents buffers."""
        return (self.levels, self.state, self.parents)


async def traverse_with_parents(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    scratch: ParentsScratch,
    source: int,
    max_level: int,
    check: Callable[[], None],
) -> tuple[np.ndarray, np.ndarray, int]:
    """BFS from ``source`` (as :func:`~._run.traverse`), then every vertex's parent.

    Args:
        backend: The backend holding the graph and the scratch.
        graph: The resident graph: ``offsets``, ``indices``, ``in_offsets``, ``in_indices``.
        scratch: Levels, state and parents; the sequences are prepared on first use.
        source: The source vertex (checked by the caller).
        max_level: The deepest level to discover (``BFS_UNLIMITED``: no limit).
        check: Called before each submission (a closed session raises there).

    Returns:
        The final state words, an int32 ``(2, V)`` array of the levels and the parents
        (-1 for the source and where unreached), and the device time in nanoseconds.
    """
    words, device_ns = await traverse(backend, graph, scratch, source, max_level, check)
    if scratch.finish is None:
        step = SequenceStep(
            msbfs_parents,
            {
                "in_offsets": graph["in_offsets"],
                "in_indices": graph["in_indices"],
                "levels": scratch.levels,
                "parents": scratch.parents,
            },
        )
        reads = [ReadRange(scratch.levels), ReadRange(scratch.parents)]
        scratch.finish = backend.prepare_repeated([step], [], reads=reads)
    check()
    (levels, parents), finish_ns = await scratch.finish.run(0)
    return words, np.stack([levels, parents]), device_ns + finish_ns
