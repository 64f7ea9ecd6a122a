"""Pending dispatches: the awaitable side of work submitted with ``backend.submit``.

A :class:`PendingDispatch` wraps a :class:`~._completion.Completion` with the
copy-out step and timing. Cancelling an ``await`` only stops that waiter; the
completion and its release are untouched, so cancellation can never hand memory back
early. ``await backend.dispatch(...)`` makes none of this: it waits on the
completion itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from typing import Any, Generic, TypeVar

import anyio
import msgspec

from ..errors import DispatchError
from ._completion import Completion

T = TypeVar("T")


class DispatchTiming(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Where the time of one dispatch went, in nanoseconds.

    Attributes:
        wall_ns: From the start of ``submit`` to the outputs being in host arrays.
        device_ns: Device execution time (CUDA events, or the CPU reference's run
            time); ``None`` when timing was not asked for on the CUDA backend.
        enqueue_ns: Time spent inside ``submit`` (validation, staging, enqueue).
        wait_ns: Time the awaiting task spent waiting, copy-out included.
    """

    wall_ns: int
    device_ns: int | None
    enqueue_ns: int
    wait_ns: int


class TimedResult(msgspec.Struct, Generic[T], frozen=True):
    """The result of ``await pending.timed()``: the outputs and their timing.

    A msgspec struct, like :class:`DispatchTiming`: made once per awaited dispatch,
    it costs a fifth of a frozen dataclass.
    """

    outputs: T
    timing: DispatchTiming


class PendingDispatch(Generic[T]):
    """Submitted work whose outputs can be awaited.

    ``await pending`` returns the outputs; awaiting again returns the same objects.
    Dropping a pending dispatch without awaiting it is allowed: its staging memory
    goes back to the pool once the work has finished, never earlier.

    Args:
        completion: Set when the work finishes.
        collect: Produces the outputs once the work finished; called at most once.
        discard: Releases what ``collect`` would have released, for a dispatch that is
            dropped unawaited.
        label: Name used in timeout messages (the kernel or sequence).
        submitted_ns: ``perf_counter_ns()`` when ``submit`` started.
        enqueue_ns: Time spent inside ``submit``.
        timeout: Seconds an ``await`` may take before :class:`DispatchError`.
        observe: Called once with the timing of the first successful await
            (telemetry).
    """

    __slots__ = (
        "__weakref__",
        "_collect",
        "_completion",
        "_discard",
        "_label",
        "_observe",
        "_outputs",
        "_submitted_ns",
        "_timeout",
        "enqueue_ns",
    )

    def __init__(
        self,
        completion: Completion,
        collect: Callable[[], T],
        *,
        discard: Callable[[], None] | None = None,
        label: str,
        submitted_ns: int,
        enqueue_ns: int,
        timeout: float | None = None,
        observe: Callable[[DispatchTiming], None] | None = None,
    ) -> None:
        self._completion = completion
        self._collect = collect
        self._label = label
        self._submitted_ns = submitted_ns
        self._timeout = timeout
        self._observe = observe
        self._outputs: tuple[T] | None = None
        self.enqueue_ns = enqueue_ns
        self._discard = discard

    def __del__(self) -> None:
        # Dropped before its outputs were collected: release what collecting would
        # have, once the work has finished (a finalizer cost ~2 us per submit).
        discard = getattr(self, "_discard", None)
        if discard is not None:
            self._discard = None
            self._completion.add_done_callback(discard)

    def is_ready(self) -> bool:
        """Whether the work has finished; never blocks."""
        return self._completion.done

    @property
    def error(self) -> BaseException | None:
        """The work's failure once it has finished (``None``: it did not fail, or has
        not finished); never blocks, and unlike an ``await`` counts no host wait."""
        return self._completion.error

    def __await__(self) -> Generator[Any, None, T]:
        return self.wait().__await__()

    async def wait(self) -> T:
        """Wait for the work and return its outputs.

        Raises:
            DispatchError: The work failed, or ``timeout`` passed first.
            DeviceLostError: The device failed while running it.
        """
        return (await self.timed()).outputs

    async def timed(self) -> TimedResult[T]:
        """Wait for the work and return its outputs with a :class:`DispatchTiming`."""
        start = time.perf_counter_ns()
        first = False
        if self._outputs is None:
            await self._wait_completion()
            if self._outputs is None:
                first = True
                self._discard = None
                self._outputs = (self._collect(),)
        end = time.perf_counter_ns()
        timing = DispatchTiming(
            wall_ns=end - self._submitted_ns,
            device_ns=self._completion.device_ns,
            enqueue_ns=self.enqueue_ns,
            wait_ns=end - start,
        )
        if first and self._observe is not None:
            self._observe(timing)
        return TimedResult(outputs=self._outputs[0], timing=timing)

    async def _wait_completion(self) -> None:
        if self._timeout is None:
            await self._completion.wait()
            return
        try:
            with anyio.fail_after(self._timeout):
                await self._completion.wait()
        except TimeoutError:
            raise DispatchError(
                f"{self._label} did not finish within its timeout of {self._timeout:g} s; "
                "it keeps running and its memory stays reserved until it does",
                fix="raise DispatchConfig.timeout, or await it again later.",
            ) from None
