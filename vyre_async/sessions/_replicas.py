"""The replicas of one session's graph: one per device, chosen by load, lost ones taken out.

A session over one backend has one replica; over a device group, one per device.
Each analysis (with batching, each batch) runs on the replica with the least work
running, so work spreads over the devices by queue depth. A replica whose device is
lost is taken out and the work runs again on another; when none is left the error
says so.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TypeVar

import anyio
import numpy as np

from .._groups import sole_vyre_error
from ..backends import Backend
from ..errors import DeviceLostError
from ..graphs import CsrGraph
from ..logging import get_logger
from ..telemetry import startup_stage
from ._replica import GraphReplica, SessionHooks

_log = get_logger("vyre_async.sessions")
T = TypeVar("T")


def device_arrays(graph: CsrGraph) -> dict[str, np.ndarray]:
    """The arrays the kernels read: int64 offsets, out-degrees and, if directed, the transpose.

    Widening offsets and transposing take seconds on large graphs: call it off the loop.
    """
    arrays: dict[str, np.ndarray] = {
        "offsets": graph.offsets.astype(np.int64, copy=False),
        "indices": graph.indices,
        "out_degree": graph.out_degree(),
    }
    if not graph.symmetric:
        transpose = graph.transpose()
        arrays["in_offsets"] = transpose.offsets.astype(np.int64, copy=False)
        arrays["in_indices"] = transpose.indices
    return arrays


async def _upload(replica: GraphReplica, arrays: dict[str, np.ndarray]) -> None:
    """One replica's upload, marked on the start-up timeline (the device by its place
    in the session)."""
    began = time.monotonic()
    await replica.upload(arrays)
    startup_stage(
        "graph_uploaded", began=began, device=str(replica.index), bytes=replica.graph_bytes
    )


class ReplicaSet:
    """One :class:`GraphReplica` per backend, and which one runs the next piece of work.

    Args:
        backends: Open backends, at least one.
        graph: The graph each replica holds.
        hooks: What the session's replicas share.
    """

    def __init__(self, backends: Sequence[Backend], graph: CsrGraph, hooks: SessionHooks) -> None:
        if not backends:
            raise ValueError("a resident-graph session needs at least one backend")
        self._graph = graph
        self._replicas = [GraphReplica(b, i, graph, hooks) for i, b in enumerate(backends)]

    def __len__(self) -> int:
        return len(self._replicas)

    def __iter__(self) -> Iterator[GraphReplica]:
        return iter(self._replicas)

    def __getitem__(self, index: int) -> GraphReplica:
        return self._replicas[index]

    @property
    def live(self) -> int:
        """Replicas still in service (devices not lost)."""
        return sum(r.lost is None for r in self._replicas)

    async def upload(self) -> None:
        """Upload the graph to every device at once (one allocation each).

        Raises:
            OutOfMemoryError: A device had no room (that error, not a group of them).
        """
        began = time.monotonic()
        arrays = await anyio.to_thread.run_sync(device_arrays, self._graph)
        startup_stage("device_arrays", began=began)
        if len(self._replicas) == 1:
            await _upload(self._replicas[0], arrays)
            return
        try:
            async with anyio.create_task_group() as tg:  # every device's copy at once
                for replica in self._replicas:
                    tg.start_soon(_upload, replica, arrays)
        except BaseExceptionGroup as group:
            error = sole_vyre_error(group)
            if error is None:
                raise
            raise error from None

    async def free_all(self) -> None:
        """Free every replica's graph and scratch; runs even when cancelled."""
        with anyio.CancelScope(shield=True):
            for replica in self._replicas:
                await replica.free_all()

    def pick(self) -> GraphReplica:
        """The live replica with the least work running.

        Raises:
            DeviceLostError: Every device was lost.
        """
        replicas = self._replicas
        if len(replicas) == 1 and replicas[0].lost is None:
            return replicas[0]
        live = [r for r in replicas if r.lost is None]
        if not live:
            raise DeviceLostError(
                f"every device of this session was lost ({len(replicas)} of "
                f"{len(replicas)}); last: {replicas[-1].lost}",
                fix="restart the process; check the devices with `vyre-async info`.",
            )
        return min(live, key=lambda r: r.busy)

    async def run(self, work: Callable[[GraphReplica], Awaitable[T]]) -> T:
        """Run ``work`` on the least busy replica; on a lost device, again on another one."""
        while True:
            replica = self.pick()
            replica.busy += 1
            try:
                return await work(replica)
            except DeviceLostError as exc:
                if len(self._replicas) == 1:
                    raise
                replica.lost = exc
                _log.warning(
                    "device_taken_out",
                    replica=replica.index,
                    device=replica.backend.device_name,
                    devices_left=self.live,
                    error=exc.what,
                )
            finally:
                replica.busy -= 1
