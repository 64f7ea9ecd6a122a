"""A resident graph split over the devices of a group, and the choice to split it.

:func:`place_graph` decides, from each device's budget (see
:func:`~vyre_async.backends.device_budgets`), whether a session over a device group
replicates the graph (a whole copy per device) or splits it in contiguous vertex ranges
(:class:`~vyre_async.graphs.VertexRanges`); it logs which and why. A split graph is a
:class:`GraphPartition`: each device's part uploaded in one group, the copy routes
between the devices, and a pool of the scratch that runs on it reuse. It is what a
kind's :meth:`~vyre_async.algorithms.QueryKind.run_partitioned` sees
(:class:`~vyre_async.algorithms.Partition`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

import anyio

from .._groups import sole_vyre_error
from ..algorithms import PartScratch, RunMeasure, query_kinds
from ..backends import (
    Backend,
    DeviceGroup,
    DeviceLinks,
    Placement,
    ResidentBuffer,
    choose_placement,
    device_budgets,
    link_devices,
)
from ..errors import OutOfMemoryError
from ..graphs import CsrGraph, VertexRanges, graph_part, part_graph_bytes, replica_graph_bytes
from ..logging import get_logger
from ..telemetry import Activity
from ._stats import RunCounters

_log = get_logger("vyre_async.sessions")
PS = TypeVar("PS", bound=PartScratch)

#: Idle scratches a partition keeps per key for later runs.
IDLE_PER_KEY = 4


def _needs(graph: CsrGraph, parts: int) -> tuple[int, list[int]]:
    """What a whole copy needs and what each part needs, with the smallest scratch
    any registered kind's run needs there (reads the graph's transpose for a directed
    graph: call it off the event loop)."""
    ranges = VertexRanges(graph.num_vertices, parts)
    kinds = list(query_kinds())
    n = graph.num_vertices
    replica = replica_graph_bytes(graph) + max(k.replica_scratch_bytes(n) for k in kinds)
    each = part_graph_bytes(graph, ranges)
    return replica, [
        b + max(k.part_scratch_bytes(ranges, d) for k in kinds) for d, b in enumerate(each)
    ]


async def place_graph(group: DeviceGroup, graph: CsrGraph) -> Placement:
    """Replicate ``graph`` on ``group`` while a copy fits every device's budget, else
    split it; the choice and its reason are logged.

    Raises:
        OutOfMemoryError: Neither a copy nor a part fits some device's budget.
    """
    budgets = await device_budgets(group)
    replica, parts = await anyio.to_thread.run_sync(_needs, graph, len(group))
    placement = choose_placement(budgets, replica, parts)
    _log.info(
        "graph_placed",
        placement=placement.mode,
        devices=len(group),
        vertices=graph.num_vertices,
        edges=graph.num_edges,
        reason=placement.reason,
    )
    return placement


class _PartTimer:
    """One run's measurement on a split graph: every device's activity added together."""

    def __init__(self, backends: Sequence[Backend], counters: RunCounters) -> None:
        self._backends = backends
        self._counters = counters
        self.levels = 0
        self.device_ns = 0

    def _activity(self) -> Activity:
        each = [b.activity() for b in self._backends]
        return Activity(*(sum(values) for values in zip(*each, strict=True)))

    async def __aenter__(self) -> _PartTimer:
        self._before = self._activity()
        self._started = time.perf_counter_ns()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        wall = time.perf_counter_ns() - self._started
        self._counters.add_run(self._before, self._activity(), self.levels, wall, self.device_ns)


class GraphPartition:
    """A graph split over several devices, one contiguous vertex range each.

    Args:
        backends: One open backend per part, in part order (at least two).
        graph: The graph on the host.
        counters: The session's run totals.
        check: Raises unless the session is open.
        is_open: Whether the session is open (scratch is kept only then).
    """

    def __init__(
        self,
        backends: Sequence[Backend],
        graph: CsrGraph,
        counters: RunCounters,
        check: Callable[[], None],
        is_open: Callable[[], bool],
    ) -> None:
        self._backends = tuple(backends)
        self._graph = graph
        self._ranges = VertexRanges(graph.num_vertices, len(self._backends))
        self._counters = counters
        self._check = check
        self._is_open = is_open
        self._parts: list[dict[str, ResidentBuffer]] = []
        self._links: DeviceLinks | None = None
        self._idle: dict[Hashable, list[PartScratch]] = {}
        #: Device bytes of each device's part of the graph.
        self.graph_bytes: tuple[int, ...] = ()

    # ------------------------------------------------------- the Partition protocol
    @property
    def backends(self) -> Sequence[Backend]:
        """The open backends, one per part."""
        return self._backends

    @property
    def parts(self) -> Sequence[Mapping[str, ResidentBuffer]]:
        """Each device's arrays (see :class:`~vyre_async.algorithms.Partition`)."""
        return self._parts

    @property
    def ranges(self) -> VertexRanges:
        """Which vertices each device owns."""
        return self._ranges

    @property
    def links(self) -> DeviceLinks:
        """Ordered copies between the devices (opened by :meth:`upload`)."""
        if self._links is None:
            raise RuntimeError("the partition is not uploaded")
        return self._links

    @property
    def graph(self) -> CsrGraph:
        """The graph on the host."""
        return self._graph

    @property
    def num_vertices(self) -> int:
        """Vertices of the graph."""
        return self._graph.num_vertices

    def check(self) -> None:
        """Raise unless the session is open."""
        self._check()

    def measure(self) -> RunMeasure:
        """A run's measurement over every device, for the session's statistics."""
        return _PartTimer(self._backends, self._counters)

    def pooled(self, key: Hashable) -> Any | None:
        """An idle scratch of ``key``, or ``None``."""
        idle = self._idle.get(key)
        if not idle:
            return None
        self._counters.scratch_reused += 1
        return idle.pop()

    async def scratch(self, key: Hashable, make: Callable[[], Awaitable[PS]]) -> PS:
        """An idle scratch of ``key``, else ``make()``'s (idle ones freed if it does not fit)."""
        found = self.pooled(key)
        if found is not None:
            made: PS = found
            return made
        try:
            return await make()
        except OutOfMemoryError:
            if not any(self._idle.values()):
                raise
            await self._drop_idle()
            return await make()

    async def release(self, key: Hashable, scratch: PartScratch, *, keep: bool) -> None:
        """Keep ``scratch`` idle for the next run of ``key`` (while open, within the
        pool's bound), else free it once no unfinished work uses it."""
        idle = self._idle.setdefault(key, [])
        if keep and self._is_open() and self._parts and len(idle) < IDLE_PER_KEY:
            idle.append(scratch)
            return
        await scratch.free()

    # --------------------------------------------------------------- the session's
    async def upload(self) -> None:
        """Upload each device's part (one group each, all devices at once) and open the
        routes between them.

        Raises:
            OutOfMemoryError: A device had no room for its part (nothing is left there).
        """
        graph, ranges = self._graph, self._ranges
        parts = await anyio.to_thread.run_sync(
            lambda: [graph_part(graph, ranges, d) for d in range(ranges.parts)]
        )
        uploaded: list[dict[str, ResidentBuffer] | None] = [None] * len(parts)

        async def one(d: int) -> None:
            arrays = parts[d].arrays
            backend = self._backends[d]
            try:
                buffers = await backend.upload_group(list(arrays.values()))
            except OutOfMemoryError as exc:
                raise OutOfMemoryError(
                    f"part {d} of the graph (vertices {ranges.bounds(d)}, "
                    f"{parts[d].nbytes} bytes) could not be allocated on "
                    f"{backend.device_name} ({exc.what})",
                    fix="raise the devices' budgets, use more devices, or free other "
                    "resident buffers first.",
                ) from exc
            uploaded[d] = dict(zip(arrays, buffers, strict=True))

        try:
            async with anyio.create_task_group() as tg:
                for d in range(len(parts)):
                    tg.start_soon(one, d)
        except BaseExceptionGroup as group:
            await self._free_parts(
                [(self._backends[d], u) for d, u in enumerate(uploaded) if u is not None]
            )
            error = sole_vyre_error(group)
            if error is None:
                raise
            raise error from None
        self._parts = [u for u in uploaded if u is not None]
        for mine in self._parts:
            if graph.symmetric:
                mine["in_offsets"], mine["in_indices"] = mine["offsets"], mine["indices"]
        self.graph_bytes = tuple(p.nbytes for p in parts)
        self._links = await link_devices(self._backends)

    async def free_all(self) -> None:
        """Free every idle scratch and every part; runs even when cancelled."""
        with anyio.CancelScope(shield=True):
            await self._drop_idle()
            parts, self._parts = self._parts, []
            await self._free_parts(list(zip(self._backends, parts, strict=True)))

    async def _drop_idle(self) -> None:
        idle = [s for scratches in self._idle.values() for s in scratches]
        self._idle.clear()
        for scratch in idle:
            await scratch.free()

    async def _free_parts(self, parts: list[tuple[Backend, dict[str, ResidentBuffer]]]) -> None:
        with anyio.CancelScope(shield=True):
            for backend, mine in parts:
                owned = list({b.id: b for b in mine.values() if backend.owns(b)}.values())
                if owned:
                    await backend.settle(owned)
                    for buffer in owned:
                        await backend.free(buffer)
