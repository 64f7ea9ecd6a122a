"""Running connected components on a resident graph, as a repeated sequence.

A run is ``cc_init`` once, then rounds ``[cc_hook, cc_jump, cc_jump, cc_check]``
repeated, submitted several rounds at a time with only the state words read back
between submissions (see :mod:`.._repeat`). The labels stay in the scratch's
``parent`` buffer. The batches are prepared once per scratch and graph, so a run
binds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

import numpy as np

from ...backends import Backend, PreparedSequence, ResidentBuffer, SequenceStep
from .._repeat import prepare_batches, run_prepared
from ._kernels import cc_check, cc_hook, cc_init, cc_jump
from ._layout import STATE_DONE, STATE_WORDS

#: Pointer-jumping steps per round: two halve a tree's depth twice for one pass over
#: the edges (a long path needs fewer rounds than with one; R-MAT graphs the same).
JUMPS_PER_ROUND = 2


class ComponentsScratch:
    """A run's parents (the labels, once it is done) and state words, and the batches
    prepared over them for the graph it last ran on.

    Attributes:
        parent: int32, one per vertex: the labels after a run.
        state: The state words of the last run (``STATE_*``).
        nbytes: Bytes of the two buffers.
    """

    __slots__ = ("_batches", "nbytes", "parent", "state")

    def __init__(self, parent: ResidentBuffer, state: ResidentBuffer) -> None:
        self.parent = parent
        self.state = state
        self.nbytes = parent.nbytes + state.nbytes
        self._batches: tuple[Hashable, PreparedSequence, PreparedSequence] | None = None

    @property
    def buffers(self) -> tuple[ResidentBuffer, ResidentBuffer]:
        """The parent and state buffers."""
        return (self.parent, self.state)


async def allocate_scratch(backend: Backend, num_vertices: int) -> ComponentsScratch:
    """A scratch for graphs of ``num_vertices`` vertices (at least one).

    Raises:
        OutOfMemoryError: The buffers do not fit (none is left allocated).
    """
    parent = await backend.alloc(4 * max(num_vertices, 1), np.int32)
    try:
        state = await backend.alloc(4 * STATE_WORDS, np.int32)
    except BaseException:
        await backend.free(parent)
        raise
    return ComponentsScratch(parent, state)


def round_steps(
    graph: Mapping[str, ResidentBuffer], scratch: ComponentsScratch, *, skip_reverse: bool
) -> list[SequenceStep]:
    """One round: hook every edge, jump twice, check.

    Args:
        graph: The resident graph: ``offsets`` (int64) and ``indices`` (int32).
        scratch: The run's parents and state.
        skip_reverse: The graph is symmetric: take each edge one way only.
    """
    parent, state = scratch.parent, scratch.state
    jump = SequenceStep(cc_jump, {"parent": parent, "state": state})
    return [
        SequenceStep(
            cc_hook,
            {
                "offsets": graph["offsets"],
                "indices": graph["indices"],
                "parent": parent,
                "state": state,
            },
            {"skip_reverse": int(skip_reverse)},
        ),
        *[jump] * JUMPS_PER_ROUND,
        SequenceStep(cc_check, {"state": state}),
    ]


def _batches(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    scratch: ComponentsScratch,
    skip_reverse: bool,
) -> tuple[PreparedSequence, PreparedSequence]:
    key = (graph["offsets"].id, graph["indices"].id, skip_reverse)
    if scratch._batches is None or scratch._batches[0] != key:
        init = SequenceStep(cc_init, {"parent": scratch.parent, "state": scratch.state})
        body = round_steps(graph, scratch, skip_reverse=skip_reverse)
        first, more = prepare_batches(backend, [init], body, scratch.state)
        scratch._batches = (key, first, more)
    return scratch._batches[1], scratch._batches[2]


async def label_components(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    scratch: ComponentsScratch,
    check: Callable[[], None] = lambda: None,
    *,
    skip_reverse: bool = False,
) -> tuple[np.ndarray, int]:
    """Label every vertex with the smallest vertex id of its weakly connected component,
    into ``scratch.parent``.

    Args:
        backend: The backend holding the graph and the scratch.
        graph: The resident graph: ``offsets`` (int64, V + 1, V >= 1) and ``indices``
            (int32, E).
        scratch: Buffers for a graph of V vertices (:func:`allocate_scratch`); its
            batches are prepared here on first use with this graph.
        check: Called before each submission (a closed session raises there).
        skip_reverse: The graph is symmetric (every edge also stored reversed): each
            edge is taken one way only. Wrong for a graph that is not symmetric.

    Returns:
        The final state words (``STATE_ROUNDS``: the rounds run) and the device time of
        the run in nanoseconds.
    """
    check()
    first, more = _batches(backend, graph, scratch, skip_reverse)
    return await run_prepared(first, more, STATE_DONE, check=check)
