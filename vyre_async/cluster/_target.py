"""Blocks sent to a job's Ray actors: the least busy one runs each.

A block crosses as msgspec bytes (:mod:`._wire`) and its reply comes back the same
way; an actor that fails a block makes it a retryable :class:`DispatchError` (the
runner runs it again; records are committed by the driver only, so a block run twice
is still committed once).
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from ..errors import DispatchError
from ..jobs import BlockResult, WorkloadSection
from ._actor import WorkerInfo
from ._wire import BlockRequest, WireArray, decode_result


class RayTarget:
    """Blocks sent to a pool of actors; see the module docstring.

    Args:
        ray: The ``ray`` module.
        actors: The actor handles.
        backend: The backend kind the actors opened.
        workloads: The job's workloads (a block names one by index).
        names: The actors' names in the cluster.
        in_flight: Batches each actor's device runs at once.
    """

    def __init__(
        self,
        ray: Any,
        actors: list[Any],
        backend: str,
        workloads: list[WorkloadSection],
        names: list[str] | None = None,
        *,
        in_flight: int = 1,
    ) -> None:
        self._ray = ray
        self._actors = actors
        #: The actors' names in the cluster (``vyre-<job>-<run id>-<i>``).
        self.names = list(names or [])
        self._busy = [0] * len(actors)
        self._index = {id(w): i for i, w in enumerate(workloads)}
        self.backend = f"ray/{backend}"
        self.device = f"{len(actors)} Ray actor(s)"
        #: Per actor, a block for each batch its device runs at once
        #: (``[batching] in_flight``) and one more waiting there, so a device that
        #: finishes a batch starts the next without waiting for a round trip.
        self.concurrency = max(4, (in_flight + 1) * len(actors))

    async def run(self, workload: WorkloadSection, sources: np.ndarray) -> BlockResult:
        """Run a block on the least busy actor."""
        pick = min(range(len(self._actors)), key=self._busy.__getitem__)
        request = msgspec.msgpack.encode(
            BlockRequest(self._index[id(workload)], WireArray.of(sources))
        )
        self._busy[pick] += 1
        try:
            reply = await self._actors[pick].run_block.remote(request)
        except self._ray.exceptions.RayError as exc:
            raise DispatchError(
                f"Ray actor {pick} failed while running a block of {sources.size} item(s): "
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                fix="the block is retried (limits.retries); Ray restarts a dead actor "
                "up to limits.max_reopens times.",
            ) from exc
        finally:
            self._busy[pick] -= 1
        return decode_result(reply)

    async def report(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """Every live actor's telemetry, and how many blocks each ran."""
        infos = []
        for actor in self._actors:
            try:
                infos.append(msgspec.msgpack.decode(await actor.info.remote(), type=WorkerInfo))
            except self._ray.exceptions.RayError:
                continue  # a dead actor reports nothing
        if not infos:
            return None, None
        return (
            {f"actor{i}": info.telemetry for i, info in enumerate(infos)},
            {
                "blocks_per_actor": [info.blocks for info in infos],
                "devices": sorted({info.device for info in infos}),
                "graph_loads_per_actor": [info.graph_loads for info in infos],
                "graph_shared_per_actor": [info.graph_shared for info in infos],
            },
        )
