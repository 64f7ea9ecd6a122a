"""Work in flight on the CUDA backend's streams, and what it gives back when done.

A :class:`Work` is the completion of one dispatch or sequence run: when its event
has completed, its release hands back the arrays it borrowed, its timing events and
its host memory (unless a caller still copies outputs out of it). The resident
buffers it claimed need nothing back: finished work stops counting as their user.
The helpers below are shared by the dispatch, submit, sequence and read paths.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

from ...cuda import DeviceAllocation, PinnedBuffer
from ...streams import Completion
from .._interop import Borrowed
from .._resident import ResidentRegistry
from ._bound import BoundLaunch, Staging
from ._sequence_plan import SequencePlan

#: The waits of work that must wait for nothing (shared: never mutated).
NO_WAITS: list[Completion] = []


class WorkOwner(Protocol):
    """What a piece of work needs from its backend when it is released."""

    _registry: ResidentRegistry[DeviceAllocation]

    def _elapsed_ns(self, pair: tuple[Any, Any]) -> int | None: ...

    def _give_back_timing(self, pair: tuple[Any, Any]) -> None: ...

    def _give_back_staging(self, launch: BoundLaunch, staging: Staging) -> None: ...

    def _release_read_block(self, block: PinnedBuffer) -> None: ...


class Work(Completion):
    """Stream work of the backend: what its release gives back once it has finished.

    ``keep`` says whether a caller will still copy outputs out of ``host``'s memory
    (then the caller gives it back); otherwise the release does.
    """

    __slots__ = ("backend", "borrowed", "host", "keep", "outputs", "timing")

    def __init__(self, backend: WorkOwner) -> None:
        # Completion.__init__ inlined: one object per dispatch, made on the hot path.
        self._done = False
        self._error = None
        self._callbacks = None
        self._waiters = None
        self._source = None
        self.device_ns = None
        self.fence = None
        self.after = None
        self.backend = backend
        #: The outputs, copied out when the backend closed before they were collected.
        self.outputs: Any = None
        self.timing: tuple[Any, Any] | None = None
        self.host: Any = None
        self.keep = False
        #: Other libraries' arrays the work uses in place: kept alive until it ends.
        self.borrowed: list[Borrowed] | None = None

    def _release(self) -> None:
        if self.borrowed is not None:
            let_go(self.borrowed)
            self.borrowed = None
        if self.timing is not None:
            backend = self.backend
            self.device_ns = backend._elapsed_ns(self.timing)
            backend._give_back_timing(self.timing)
        if self.host is not None and not self.keep:
            self.give_back_host()

    def give_back_host(self) -> None:
        """Return the host-side memory (staging pair or read block). Idempotent."""
        raise NotImplementedError

    def drop(self) -> None:
        """Nobody will collect the outputs: give their memory back once finished."""
        self.keep = False
        if self._done and self.host is not None:
            self.give_back_host()


class DispatchWork(Work):
    """One dispatch in flight; ``host`` is its :class:`Staging` pair, if any."""

    __slots__ = ("launch",)

    def __init__(self, backend: WorkOwner, launch: BoundLaunch | None) -> None:
        # Work.__init__ inlined (one call less per dispatch).
        self._done = False
        self._error = None
        self._callbacks = None
        self._waiters = None
        self._source = None
        self.device_ns = None
        self.fence = None
        self.after = None
        self.backend = backend
        self.outputs = None
        self.timing = None
        self.host = None
        self.keep = False
        self.borrowed = None
        #: ``None`` only until a submission whose kernel had to load is bound.
        self.launch = launch

    def give_back_host(self) -> None:
        staging, self.host = self.host, None
        if staging is not None and self.launch is not None:
            self.backend._give_back_staging(self.launch, staging)


class LaunchWork(Completion):
    """One awaited dispatch that is a single launch over resident buffers.

    It holds nothing to give back (no staging, borrowed arrays, timing events or
    outputs), so it is a bare completion: the most common piece of work, made and
    finished with the least.
    """

    __slots__ = ()

    def __init__(self) -> None:
        # Completion.__init__ inlined: one object per dispatch, made on the hot path.
        self._done = False
        self._error = None
        self._callbacks = None
        self._waiters = None
        self._source = None
        self.device_ns = None
        self.fence = None
        self.after = None

    def drop(self) -> None:
        """Nobody will collect outputs: there are none to give back."""


class SequenceWork(Work):
    """One sequence run in flight; ``host`` is the page-locked block its reads land in."""

    __slots__ = ("plan",)

    def __init__(self, backend: WorkOwner, plan: SequencePlan) -> None:
        super().__init__(backend)
        self.plan = plan

    def give_back_host(self) -> None:
        block, self.host = self.host, None
        if block is not None:
            self.backend._release_read_block(block)


def keep_alive(*_: object) -> None:
    """A completion callback whose only job is to hold its arguments until it runs."""


def let_go(borrowed: list[Borrowed]) -> None:
    """Hand borrowed arrays back (DLPack deleters run; the producer may free them)."""
    for item in borrowed:
        if item.release is not None:
            item.release()


def snapshot_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs with host arrays copied: what a submission enqueued later reads.

    ``submit`` promises that small host inputs are copied before it returns.
    """
    return {
        name: value.copy() if isinstance(value, np.ndarray) else value
        for name, value in inputs.items()
    }


def unrecorded(waits: list[Completion]) -> bool:
    """Whether earlier work among ``waits`` is not enqueued yet (it has no fence)."""
    return any(w.fence is None and not w._done for w in waits)


def once(release: Callable[[Any], None], item: Any) -> Callable[[], None]:
    """``release(item)`` at most once, whichever path (collect, drop, failure) comes first."""
    done = item is None

    def run() -> None:
        nonlocal done
        if not done:
            done = True
            release(item)

    return run
