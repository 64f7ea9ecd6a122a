"""Prepared sequences: a resident sequence bound and checked once, submitted many times.

``submit_repeated`` binds every step, plans the reads and works out which buffers
the work reads and writes, on every call. A resident session submits the same
sequence traversal after traversal, changing only the source, and on an H200 host
that per-call work was about a fifth of a 7-level traversal's host overhead. A
:class:`PreparedSequence` does it once; each :meth:`PreparedSequence.submit` only
reserves the buffers and enqueues. Prefix scalars (a traversal's source) may change
per submission; their bindings are kept per value.

:meth:`PreparedSequence.run` submits and waits in one step, for a caller that awaits
its work at once: no pending dispatch is made, and on the CUDA backend the waiting
task polls the work's end itself (``CompletionWatcher.follow``).
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

from ..errors import ValidationError
from ..kernels import BoundCall
from ..streams import PendingDispatch
from ._config import DispatchConfig
from ._resident import ResidentBuffer
from ._sequence import ReadPlan, SequenceStep, bind_step

#: Prefix bindings kept per prepared sequence (one per distinct set of scalar values).
PREFIX_BINDINGS = 1024


class SequenceResult(NamedTuple):
    """What :meth:`PreparedSequence.run` returns.

    Attributes:
        outputs: The read ranges, in order.
        device_ns: Device time of the run (timing events on CUDA, the reference's run
            time on the CPU backend).
    """

    outputs: list[np.ndarray]
    device_ns: int


class SequenceRunner(Protocol):
    """What runs a prepared sequence: the backend that prepared it."""

    def submit_prepared(
        self,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        config: DispatchConfig | None,
        start: int,
    ) -> PendingDispatch[list[np.ndarray]]:
        """Enqueue one run (what :meth:`PreparedSequence.submit` does)."""
        ...

    def run_prepared(
        self,
        prepared: PreparedSequence,
        prefix: list[BoundCall[ResidentBuffer]],
        repeat_count: int,
        start: int,
    ) -> Coroutine[Any, Any, SequenceResult]:
        """Run once and wait (what :meth:`PreparedSequence.run` does)."""
        ...


class PreparedSequence:
    """A resident repeated sequence, bound once; made by ``backend.prepare_repeated``.

    Each :meth:`submit` runs the prefix once, then the repeated steps
    ``repeat_count`` times, then reads the ranges back, with one host sync: what
    ``submit_repeated`` with the same steps would do, without binding them again.
    Buffers stay checked per submission: one freed since is refused there.
    """

    __slots__ = (
        "_backend",
        "_by_scalars",
        "_names",
        "_steps",
        "backend_plan",
        "prefix",
        "reads",
        "repeated",
        "reservation",
        "uses",
    )

    def __init__(
        self,
        backend: SequenceRunner,
        steps: Sequence[SequenceStep],
        prefix: list[BoundCall[ResidentBuffer]],
        repeated: list[BoundCall[ResidentBuffer]],
        plans: list[ReadPlan],
        uses: dict[ResidentBuffer, bool],
    ) -> None:
        self._backend = backend
        self._steps = list(steps)
        #: The prefix as prepared (what the backend enqueues from).
        self.prefix = prefix
        #: The repeated steps, bound.
        self.repeated = repeated
        #: The planned reads.
        self.reads = plans
        #: Each buffer the steps touch -> whether they write it.
        self.uses = uses
        #: What the backend works out once for this sequence (CUDA: its body and
        #: reads, see ``backends.cuda._sequence_plan.SequencePlan``); made by the
        #: backend on first submission, kept here with the sequence.
        self.backend_plan: object = None
        #: (registry generation, resolved records) of ``uses``, kept here for the
        #: backend; see ``ResidentRegistry.resolve``.
        self.reservation: tuple[int, Any] | None = None
        self._names = {p.name for step in self._steps for p in step.kernel.scalar_params}
        self._by_scalars: dict[tuple[Any, ...], list[BoundCall[ResidentBuffer]]] = {}

    def submit(
        self,
        repeat_count: int,
        *,
        scalars: Mapping[str, Any] | None = None,
        config: DispatchConfig | None = None,
    ) -> PendingDispatch[list[np.ndarray]]:
        """Enqueue one run; return a pending dispatch whose outputs are the read ranges.

        Args:
            repeat_count: Times the repeated steps run (0: only the prefix).
            scalars: New values for scalars of the prefix steps, by name; every prefix
                step with a scalar of that name takes the value.
            config: As for ``submit_repeated``.

        Raises:
            ValidationError: A scalar name no prefix step has, or a value its kernel
                refuses (nothing was enqueued).
            LifecycleError: The backend closed, or a buffer was freed.
        """
        start = time.perf_counter_ns()
        prefix = self.prefix if not scalars else self._prefix_with(scalars)
        return self._backend.submit_prepared(self, prefix, repeat_count, config, start)

    def run(
        self, repeat_count: int, *, scalars: Mapping[str, Any] | None = None
    ) -> Coroutine[Any, Any, SequenceResult]:
        """Enqueue one run and wait for it: ``submit(...)`` then ``timed()``, for less.

        Use it as ``await prepared.run(...)``. It returns the backend's coroutine
        itself rather than wrapping it in one more (scalars are checked here, so a
        bad one raises at the call): every poll of a waiting run resumes each
        coroutine it is nested in.

        For a caller that awaits at once: no :class:`PendingDispatch` is made and the
        device time is always measured. On the CUDA backend, while little else is in
        flight, the waiting task polls the run's end itself instead of being woken by
        the completion watcher. Cancelling the wait leaves the run on the device; its
        memory goes back once it has finished.

        Args:
            repeat_count: Times the repeated steps run (0: only the prefix).
            scalars: New values for scalars of the prefix steps, as for :meth:`submit`.

        Raises:
            ValidationError: A scalar name no prefix step has, or a value its kernel
                refuses (nothing was enqueued).
            LifecycleError: The backend closed, or a buffer was freed.
            DispatchError: The run failed on the device.
        """
        start = time.perf_counter_ns()
        prefix = self.prefix if not scalars else self._prefix_with(scalars)
        return self._backend.run_prepared(self, prefix, repeat_count, start)

    def _prefix_with(self, scalars: Mapping[str, Any]) -> list[BoundCall[ResidentBuffer]]:
        # Types are part of the key: 1, 1.0 and True are equal, but a kernel may take
        # one and refuse another.
        key = (*scalars.items(), *map(type, scalars.values()))
        try:
            found = self._by_scalars.get(key)
        except TypeError:  # an unhashable value: bind it and let the kernel judge it
            found, key = None, ()
        if found is not None:
            return found
        unknown = sorted(set(scalars) - self._names)
        if unknown:
            raise ValidationError(
                f"the prefix of this prepared sequence has no scalar {unknown[0]!r}; its "
                f"scalars are {sorted(self._names) or 'none'}",
                fix="pass only scalars of the prefix steps, or prepare another sequence.",
            )
        bound = []
        for i, (step, call) in enumerate(zip(self._steps, self.prefix, strict=True)):
            mine = {p.name: scalars[p.name] for p in step.kernel.scalar_params if p.name in scalars}
            if mine:
                call = bind_step(
                    i, SequenceStep(step.kernel, step.buffers, {**step.scalars, **mine})
                )
            bound.append(call)
        if key:
            if len(self._by_scalars) >= PREFIX_BINDINGS:
                self._by_scalars.clear()
            self._by_scalars[key] = bound
        return bound
