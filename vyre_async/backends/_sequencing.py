"""Resident sequences, as every backend offers them: bound and checked once, run many times.

``submit_sequence`` and ``submit_repeated`` prepare and submit in one call;
``prepare_repeated`` binds the steps, plans the reads and works out which buffers
the work reads and writes once, for a :class:`~._prepared.PreparedSequence` to
submit again and again. Identical steps are bound once per backend.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from ..kernels import BoundCall
from ..streams import PendingDispatch
from ._checks import check_repeat_count, uses_of
from ._config import DispatchConfig
from ._prepared import PreparedSequence, SequenceResult
from ._residency import ResidentMemory
from ._resident import ResidentBuffer
from ._sequence import ReadRange, SequenceStep, bind_step

S = TypeVar("S")
#: Bound sequence steps remembered per backend (sessions repeat the same steps).
_BOUND_STEP_CACHE = 4096


class Sequencing(ResidentMemory[S]):
    """The sequence half of :class:`~._core.BackendCore`, over its resident memory."""

    _bound_steps: dict[tuple[Any, ...], BoundCall[ResidentBuffer]]

    def submit_sequence(
        self,
        steps: Sequence[SequenceStep],
        *,
        reads: Sequence[ReadRange] = (),
        config: DispatchConfig | None = None,
    ) -> PendingDispatch[list[np.ndarray]]:
        """Run steps in order on one stream, then read ranges back; one host sync.

        Returns:
            A pending dispatch whose outputs are the read ranges, in order.
        """
        return self.submit_repeated(steps, (), repeat_count=0, reads=reads, config=config)

    def submit_repeated(
        self,
        prefix: Sequence[SequenceStep],
        repeated: Sequence[SequenceStep],
        *,
        repeat_count: int,
        reads: Sequence[ReadRange] = (),
        config: DispatchConfig | None = None,
    ) -> PendingDispatch[list[np.ndarray]]:
        """Run ``prefix`` once, then ``repeated`` ``repeat_count`` times, then read back.

        Everything runs on one stream with one host synchronisation at the end.

        Raises:
            ValidationError: A step or range is invalid (nothing was enqueued).
        """
        start = time.perf_counter_ns()
        self._check_open()
        check_repeat_count(repeat_count)
        prepared = self.prepare_repeated(prefix, repeated, reads=reads)
        return self.submit_prepared(prepared, prepared.prefix, repeat_count, config, start)

    def prepare_repeated(
        self,
        prefix: Sequence[SequenceStep],
        repeated: Sequence[SequenceStep],
        *,
        reads: Sequence[ReadRange] = (),
    ) -> PreparedSequence:
        """Bind and check a repeated sequence once, to submit it many times.

        ``prepared.submit(repeat_count, scalars=...)`` then does what
        ``submit_repeated`` does with these steps, without binding them, planning the
        reads or working out the buffers' uses again; prefix scalars may change per
        submission. Resident sessions run every traversal this way.

        Raises:
            ValidationError: A step or range is invalid.
            LifecycleError: The backend is not open, or a buffer was freed.
        """
        self._check_open()
        bound_prefix = [self._bind_step(i, s) for i, s in enumerate(prefix)]
        bound_repeated = [self._bind_step(len(prefix) + i, s) for i, s in enumerate(repeated)]
        plans = self._plan_reads(reads)
        uses = uses_of([*bound_prefix, *bound_repeated])
        for r in reads:
            uses.setdefault(r.buffer, False)
        return PreparedSequence(self, prefix, bound_prefix, bound_repeated, plans, uses)

    @abstractmethod
    def submit_prepared(
        self,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        config: DispatchConfig | None,
        start: int,
    ) -> PendingDispatch[list[np.ndarray]]:
        """Enqueue one run of a prepared sequence (``PreparedSequence.submit``).

        ``prefix`` is the prepared prefix, or its binding with new scalars. ``start``
        is when the submission began (``perf_counter_ns``), for ``enqueue_ns``.
        """

    @abstractmethod
    async def run_prepared(
        self,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        start: int,
    ) -> SequenceResult:
        """Run a prepared sequence once and wait for it (``PreparedSequence.run``)."""

    def _bind_step(self, index: int, step: SequenceStep) -> BoundCall[ResidentBuffer]:
        """Bind a sequence step, reusing the binding of an identical earlier step.

        Sessions submit the same steps (kernel, buffers, scalars) batch after batch;
        a binding depends on nothing else, since a buffer's dtype and size never change.
        """
        try:
            key = (
                id(step.kernel),
                tuple((name, b.id) for name, b in step.buffers.items()),
                tuple(step.scalars.items()),
            )
            cached = self._bound_steps.get(key)
        except (AttributeError, TypeError):  # not a SequenceStep of buffers: bind reports it
            return bind_step(index, step)
        if cached is not None and cached.kernel is step.kernel:
            return cached
        call = bind_step(index, step)
        if len(self._bound_steps) >= _BOUND_STEP_CACHE:
            self._bound_steps.clear()
        self._bound_steps[key] = call
        return call
