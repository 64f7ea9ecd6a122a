"""One device's copy of a resident graph: its buffers, scratch pool and load.

A session keeps one replica per device of its backend (one for a single-device
backend). Each query runs on one replica, chosen by load; a replica whose device is
lost is taken out and its work runs again on the others.

A replica is what a query kind sees (:class:`~vyre_async.algorithms.Replica`): it
pools scratch by the kind's key without knowing the kind, makes derived data once
(a kind's renumbering, its weights) and frees everything when the session closes.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import Any, TypeVar

import anyio
import numpy as np

from .._lifecycle import LifecycleState
from ..algorithms import RunMeasure, Scratch
from ..backends import Backend, ResidentBuffer
from ..errors import OutOfMemoryError
from ..graphs import CsrGraph
from ._stats import RunCounters

T = TypeVar("T")
S = TypeVar("S", bound=Scratch)

#: Idle scratches a replica keeps for later runs of their key: at most this many per
#: key (a key's concurrent runs each need their own)...
IDLE_PER_KEY = 64
#: ...this many together...
IDLE_SETS = 128
#: ...and this many device bytes together; beyond either, the least recently used
#: key's go first.
IDLE_BYTES = 4 << 30


class SessionHooks:
    """What every replica of one session shares: its counters, whether it is open, and
    what it made once on the host.

    Args:
        counters: The session's run totals.
        check: Raises unless the session is open.
        is_open: Whether the session is open (scratch is kept only then).
    """

    def __init__(
        self, counters: RunCounters, check: Callable[[], None], is_open: Callable[[], bool]
    ) -> None:
        self.counters = counters
        self.check = check
        self.is_open = is_open
        self._host: dict[Hashable, Any] = {}
        self._host_lock = anyio.Lock()

    async def host_derived(self, key: Hashable, make: Callable[[], T]) -> T:
        """``make()`` run once per session in a worker thread; later callers get its value."""
        if key not in self._host:
            async with self._host_lock:
                if key not in self._host:
                    self._host[key] = await anyio.to_thread.run_sync(make)
        value: T = self._host[key]
        return value


class RunTimer:
    """One run's measurement: telemetry and wall time around it, added on exit.

    A class rather than an ``asynccontextmanager``: entering and leaving one costs no
    generator round trips on a path run per query.
    """

    __slots__ = ("_backend", "_before", "_counters", "_started", "device_ns", "levels")

    def __init__(self, backend: Backend, counters: RunCounters) -> None:
        self._backend = backend
        self._counters = counters
        self.levels = 0
        self.device_ns = 0

    async def __aenter__(self) -> RunTimer:
        self._before = self._backend.activity()
        self._started = time.perf_counter_ns()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._counters.add_run(
            self._before,
            self._backend.activity(),
            self.levels,
            time.perf_counter_ns() - self._started,
            self.device_ns,
        )


class GraphReplica:
    """A graph uploaded to one backend, and the scratch buffers runs there reuse.

    Args:
        backend: An open backend.
        index: The replica's position in its session (a device number in messages).
        graph: The graph on the host.
        hooks: What the session's replicas share.
    """

    def __init__(self, backend: Backend, index: int, graph: CsrGraph, hooks: SessionHooks) -> None:
        self.backend = backend
        self.index = index
        self.graph = graph
        self.num_vertices = graph.num_vertices
        self.buffers: dict[str, ResidentBuffer] = {}
        self.graph_bytes = 0
        self.graph_allocations = 0
        #: Analyses (single runs or batches) running on this replica now.
        self.busy = 0
        #: Why the replica was taken out (its device was lost), or None.
        self.lost: BaseException | None = None
        self._hooks = hooks
        self.check = hooks.check
        #: Idle scratches by key, the least recently used key first.
        self._idle: OrderedDict[Hashable, list[Any]] = OrderedDict()
        self._idle_bytes = 0
        self._idle_sets = 0
        #: Every buffer the replica must free at close besides the graph's.
        self._held: dict[int, ResidentBuffer] = {}
        self._derived: dict[Hashable, Any] = {}
        self._derived_lock = anyio.Lock()

    async def upload(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Upload the graph's device arrays in one group (one allocation)."""
        backend, graph = self.backend, self.graph
        before = backend.telemetry()
        try:
            buffers = await backend.upload_group(list(arrays.values()))
        except OutOfMemoryError as exc:
            needed = sum(a.nbytes for a in arrays.values())
            raise OutOfMemoryError(
                f"the graph ({graph.num_vertices} vertices, {graph.num_edges} edges) needs "
                f"{needed} bytes on {backend.device_name}, which could not be "
                f"allocated ({exc.what})",
                fix="use a smaller graph or a device with more memory, or free other "
                "resident buffers first.",
            ) from exc
        after = backend.telemetry()
        self.buffers = dict(zip(arrays, buffers, strict=True))
        if graph.symmetric:
            self.buffers["in_offsets"] = self.buffers["offsets"]
            self.buffers["in_indices"] = self.buffers["indices"]
        self.graph_bytes = after.bytes_uploaded - before.bytes_uploaded
        self.graph_allocations = after.resident_allocations - before.resident_allocations

    # ------------------------------------------------------------ what kinds use
    def measure(self) -> RunMeasure:
        """A run's measurement for the session's statistics."""
        return RunTimer(self.backend, self._hooks.counters)

    def pooled(self, key: Hashable) -> Any | None:
        """An idle scratch of ``key``, or ``None``."""
        idle = self._idle.get(key)
        if not idle:
            return None
        self._hooks.counters.scratch_reused += 1
        scratch = idle.pop()
        self._idle_bytes -= scratch.nbytes
        self._idle_sets -= 1
        return scratch

    async def scratch(self, key: Hashable, make: Callable[[], Awaitable[S]]) -> S:
        """An idle scratch of ``key``, else a new one (the idle ones freed if it does not fit)."""
        found = self.pooled(key)
        if found is not None:
            made: S = found
            return made
        try:
            made = await make()
        except OutOfMemoryError:
            if not any(self._idle.values()):
                raise
            await self._drop_idle()
            made = await make()
        for buffer in made.buffers:
            self._held[buffer.id] = buffer
        return made

    def give_back(self, key: Hashable, scratch: Scratch) -> bool:
        """Keep ``scratch`` idle for the next run of ``key``, if the pool has room now;
        ``False``: it was not kept (call :meth:`release`, which frees or makes room)."""
        idle = self._idle.get(key)
        if (
            idle is None
            or len(idle) >= IDLE_PER_KEY
            or self._idle_sets >= IDLE_SETS
            or self._idle_bytes + scratch.nbytes > IDLE_BYTES
            or self.lost is not None
            or not self._hooks.is_open()
        ):
            return False
        self._idle.move_to_end(key)
        idle.append(scratch)
        self._idle_bytes += scratch.nbytes
        self._idle_sets += 1
        return True

    async def release(self, key: Hashable, scratch: Scratch, *, keep: bool) -> None:
        """Take back a scratch: idle for the next run of ``key`` while the session is
        open and the pool within its bounds (the least recently used freed to make
        room), else freed once no unfinished work uses it (a cancelled run's may still
        be running)."""
        if keep and self.give_back(key, scratch):
            return
        nbytes = scratch.nbytes
        if (
            keep
            and self._hooks.is_open()
            and self.lost is None
            and self.buffers
            and nbytes <= IDLE_BYTES
        ):
            idle = self._idle.get(key)
            if idle is None:
                idle = self._idle[key] = []
            else:
                self._idle.move_to_end(key)
            if len(idle) < IDLE_PER_KEY:
                idle.append(scratch)
                self._idle_bytes += nbytes
                self._idle_sets += 1
                if self._idle_bytes > IDLE_BYTES or self._idle_sets > IDLE_SETS:
                    await self._trim()
                return
        await self._free([scratch])

    async def derived(self, key: Hashable, make: Callable[[], Awaitable[T]]) -> T:
        """``make()``'s value, made once for this replica (later callers wait for it)."""
        if key not in self._derived:
            async with self._derived_lock:
                if key not in self._derived:
                    self._derived[key] = await make()
        value: T = self._derived[key]
        return value

    async def host_derived(self, key: Hashable, make: Callable[[], T]) -> T:
        """``make()``'s value, made once per session in a worker thread."""
        return await self._hooks.host_derived(key, make)

    def hold(self, buffer: ResidentBuffer) -> ResidentBuffer:
        """Keep ``buffer`` until the session closes."""
        self._held[buffer.id] = buffer
        return buffer

    # ------------------------------------------------------------------ the pool
    def idle_keys(self) -> list[tuple[Hashable, int]]:
        """The pool's keys with idle scratches and how many, least recently used first."""
        return [(key, len(idle)) for key, idle in self._idle.items() if idle]

    async def _trim(self) -> None:
        """Free idle scratches, the least recently used key first, until within bounds."""
        while self._idle and (self._idle_bytes > IDLE_BYTES or self._idle_sets > IDLE_SETS):
            key, idle = next(iter(self._idle.items()))
            if not idle:
                del self._idle[key]
                continue
            oldest = idle.pop(0)
            self._idle_bytes -= oldest.nbytes
            self._idle_sets -= 1
            await self._free([oldest])

    async def _drop_idle(self) -> None:
        idle = [s for scratches in self._idle.values() for s in scratches]
        self._idle.clear()
        self._idle_bytes = self._idle_sets = 0
        await self._free(idle)

    async def _free(self, scratches: list[Any]) -> None:
        """Free scratches' buffers, unless :meth:`free_all` freed them already."""
        mine = [b for s in scratches for b in s.buffers if self._held.pop(b.id, None) is not None]
        if mine and self.backend.state is LifecycleState.OPEN and self.lost is None:
            with anyio.CancelScope(shield=True):
                await self.backend.settle(mine)
                for buffer in mine:
                    await self.backend.free(buffer)

    async def free_all(self) -> None:
        """Free the graph and every scratch and held buffer; runs even when cancelled."""
        buffers = list({b.id: b for b in (*self.buffers.values(), *self._held.values())}.values())
        self.buffers.clear()
        self._held.clear()
        self._idle.clear()
        self._idle_bytes = self._idle_sets = 0
        self._derived.clear()
        if self.backend.state is not LifecycleState.OPEN or self.lost is not None:
            return  # the backend freed everything when it closed, or cannot any more
        with anyio.CancelScope(shield=True):
            # A cancelled query's sequence may still be running on these buffers.
            await self.backend.settle(buffers)
            for buffer in buffers:
                await self.backend.free(buffer)
