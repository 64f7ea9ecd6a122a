"""Where a job's blocks run: a local backend's session, or Ray actors.

The runner sees a :class:`BlockTarget` either way: ``await target.run(workload,
sources)`` gives a block's :class:`BlockResult`. A target lives for one
*generation* of the runner (until the job ends or its device is lost).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import msgspec
import numpy as np

from ...backends import BackendKind, DeviceGroup, DeviceSelector, open_devices
from ...graphs import CsrGraph
from ...sessions import BatchingConfig, ResidentGraphSession, resident_graph
from ...telemetry import MetricFamily, telemetry_families
from ..spec import WorkloadSection
from ._device_start import DeviceStart
from ._execute import BlockExecutor, BlockResult


class BlockTarget(Protocol):
    """Runs blocks; says what it runs on and what it did."""

    backend: str
    device: str
    #: Blocks worth running at once (the runner keeps about this many in flight).
    concurrency: int

    async def run(self, workload: WorkloadSection, sources: np.ndarray) -> BlockResult:
        """Run one block's items."""
        ...

    async def report(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """Telemetry and batcher statistics, as plain data (``None`` where unknown)."""
        ...


class LocalTarget:
    """A resident-graph session on a backend of this process.

    Args:
        session: The open session.
        backend: Its backends' kind.
        device: Its devices' names.
        execute: Runs a block on the session.
        telemetry: The devices' telemetry snapshot function.
        blocks_per_slot: Blocks in flight per batch slot (``in_flight`` per device):
            1 where a block's records are made on the loop in microseconds (counts),
            2 where they are written in a worker thread while the slot runs the next.
    """

    def __init__(
        self,
        session: ResidentGraphSession,
        backend: str,
        device: str,
        execute: BlockExecutor,
        telemetry: Any,
        blocks_per_slot: int = 2,
    ) -> None:
        self._session = session
        self.backend = backend
        self.device = device
        self._execute = execute
        self._telemetry = telemetry
        in_flight = session.batching.in_flight if session.batching is not None else 1
        # A full block with a free slot runs at once; a block that must queue behind
        # a running one costs the event loop a ticket, a task and two wake-ups, which
        # slows every traversal on it. So only as many blocks as slots are kept in
        # flight, twice that where each block's records are written in a thread.
        self.concurrency = max(1, blocks_per_slot * session.devices * in_flight)

    async def run(self, workload: WorkloadSection, sources: np.ndarray) -> BlockResult:
        """Run one block on the session (through its batcher)."""
        return await self._execute(self._session, workload, sources)

    def metric_families(self, prefix: str) -> list[MetricFamily]:
        """The backend's telemetry and the session's batcher and session figures, now."""
        return telemetry_families(
            self._telemetry(),
            batches=self._session.batch_stats(),
            session=self._session.stats(),
            prefix=prefix,
        )

    async def report(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The backend's telemetry and the session's batcher statistics."""
        stats = self._session.batch_stats()
        return (
            msgspec.to_builtins(self._telemetry()),
            msgspec.to_builtins(stats) if stats is not None else None,
        )


@asynccontextmanager
async def local_target(
    kind: BackendKind,
    devices: DeviceSelector,
    graph: CsrGraph,
    batching: BatchingConfig,
    execute: BlockExecutor,
    blocks_per_slot: int = 2,
    start: DeviceStart | None = None,
    memory_limit: int | None = None,
) -> AsyncIterator[LocalTarget]:
    """A batching session over ``graph`` on the devices ``start`` opened (the first
    time), else on devices opened here with each a ``memory_limit`` budget for the
    graph (``None``: its free memory); the session and the devices close afterwards."""
    group = await start.take() if start is not None else None
    if group is None:
        async with (
            open_devices(kind, devices=devices, memory_limit=memory_limit) as opened,
            _session_target(opened, graph, batching, execute, blocks_per_slot) as target,
        ):
            yield target
        return
    assert start is not None  # a group is taken only from a start
    try:
        async with _session_target(group, graph, batching, execute, blocks_per_slot) as target:
            yield target
    finally:
        await start.release()


@asynccontextmanager
async def _session_target(
    group: DeviceGroup,
    graph: CsrGraph,
    batching: BatchingConfig,
    execute: BlockExecutor,
    blocks_per_slot: int,
) -> AsyncIterator[LocalTarget]:
    async with resident_graph(group, graph, batching=batching) as session:
        device = " + ".join(group.device_names)
        yield LocalTarget(session, group.kind, device, execute, group.telemetry, blocks_per_slot)
