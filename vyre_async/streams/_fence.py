"""Fences and lanes: how work on one CUDA stream is grouped for polling.

A stream runs its work in order, so one event recorded after several pieces of work
says when all of them have finished. A :class:`Fence` is that event plus the
completions it stands for. Work submitted to a stream joins the stream's *open*
fence; the first time anyone needs to observe it (a task starts polling, another
stream must wait for it, the watcher looks) the fence is *sealed*: its event is
recorded and later work opens the next fence. Dispatches submitted to one stream
within one turn of the event loop therefore share one event record, one query and
one wake-up.

A :class:`Lane` is one stream's queue of fences: the open one and the sealed ones,
oldest first. Only the oldest sealed fence of a lane is ever queried: while it is
not done, the later ones cannot be either.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._completion import Completion

__all__ = ["Fence", "Lane"]


class Fence:
    """An event recorded (once sealed) after every piece of work in ``works``.

    Attributes:
        lane: The lane (stream) the fence belongs to.
        works: Completions finished when the event is.
        event: The recorded event; ``None`` while the fence is open.
    """

    __slots__ = ("event", "lane", "works")

    def __init__(self, lane: Lane) -> None:
        self.lane = lane
        self.works: list[Completion] = []
        self.event: Any = None


class Lane:
    """One stream's fences, for the poller.

    Args:
        key: Identifies the stream (``int(stream)``).
        stream: The stream handle events are recorded on.

    Attributes:
        open: The fence new work joins; ``None`` until work arrives.
        sealed: Sealed fences not yet done, oldest first.
        spare_events: Events of finished fences, recorded again by later ones.
    """

    __slots__ = ("key", "open", "sealed", "spare_events", "stream")

    def __init__(self, key: Hashable, stream: Any) -> None:
        self.key = key
        self.stream = stream
        self.open: Fence | None = None
        self.sealed: deque[Fence] = deque()
        self.spare_events: list[Any] = []

    @property
    def idle(self) -> bool:
        """Whether no work is pending on the lane."""
        return self.open is None and not self.sealed

    def pending(self) -> int:
        """Pieces of work not yet finished."""
        count = sum(len(fence.works) for fence in self.sealed)
        return count + (len(self.open.works) if self.open is not None else 0)
