"""Blocks on Ray actors: one :class:`GraphWorker` actor per GPU of the cluster.

The job's driver stays as it is (producer, retries, committer, manifest): only
``target.run`` sends a block to the least busy actor and awaits its reply. Actors
are at-least-once: an actor that dies mid-block is restarted by Ray (up to
``limits.max_reopens`` times), the block fails with a retryable
:class:`DispatchError`, and the runner runs it again; records are keyed by item id
and committed by the driver only, so a block run twice is still committed once.

Ray's awaitables are asyncio futures: under trio a Ray job is refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import numpy as np

from ..backends import BackendKind
from ..errors import ConfigurationError, DispatchError
from ..jobs._execute import BlockResult
from ..jobs._spec import JobSpec, WorkloadSection
from ..logging import get_logger
from ._actor import GraphWorker, WorkerInfo
from ._wire import BlockRequest, WireArray, decode_result

_log = get_logger("vyre_async.cluster")


def _on_asyncio() -> bool:
    # Only a question, never scheduling: anyio runs everything else.
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigurationError(
            f"executor = 'ray' needs Ray, which is not installed ({exc})",
            fix="install it with `pip install 'vyre-async[ray]'`, or use executor = 'local'.",
        ) from None
    return ray


class RayTarget:
    """Blocks sent to a pool of actors; see the module docstring.

    Args:
        ray: The ``ray`` module.
        actors: The actor handles.
        backend: The backend kind the actors opened.
        workloads: The job's workloads (a block names one by index).
    """

    def __init__(
        self, ray: Any, actors: list[Any], backend: str, workloads: list[WorkloadSection]
    ) -> None:
        self._ray = ray
        self._actors = actors
        self._busy = [0] * len(actors)
        self._index = {id(w): i for i, w in enumerate(workloads)}
        self.backend = f"ray/{backend}"
        self.device = f"{len(actors)} Ray actor(s)"
        #: Two blocks per actor: one running, one on its way.
        self.concurrency = max(4, 2 * len(actors))

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
            },
        )


@asynccontextmanager
async def ray_target(
    spec: JobSpec, job_file: Path, backend: BackendKind
) -> AsyncIterator[RayTarget]:
    """Start (or join) Ray, make one actor per GPU, and remove them afterwards.

    Raises:
        ConfigurationError: Not running on asyncio, or Ray is not installed.
    """
    if not _on_asyncio():
        raise ConfigurationError(
            "executor = 'ray' runs on asyncio only (Ray's awaitables are asyncio futures), "
            "and this event loop is not asyncio's (trio?)",
            fix="run the job under asyncio (the vyre-async CLI does), or use executor = 'local'.",
        )
    ray = await anyio.to_thread.run_sync(_import_ray)
    job = spec.job
    started_here = not ray.is_initialized()
    if started_here:
        await anyio.to_thread.run_sync(
            lambda: ray.init(
                address=job.ray_address,
                include_dashboard=False,
                logging_level="ERROR",
                log_to_driver=False,
            )
        )
    gpus = int(ray.cluster_resources().get("GPU", 0))
    count = job.ray_workers or max(gpus, 1)
    per_actor = {"num_gpus": 1} if gpus else {"num_cpus": 1}
    worker = ray.remote(GraphWorker)
    spec_json = msgspec.json.encode(spec)
    where = str(await anyio.Path(job_file).resolve())  # actors may run in another folder
    actors = [
        worker.options(
            name=f"vyre-{job.name}-worker-{i}",
            max_restarts=spec.limits.max_reopens,
            max_task_retries=0,
            **per_actor,
        ).remote(spec_json, where, backend)
        for i in range(count)
    ]
    target = RayTarget(ray, actors, backend, list(spec.workload))
    _log.info("ray_actors_started", actors=count, gpus=gpus, address=job.ray_address or "local")
    try:
        yield target
    finally:
        for actor in actors:
            ray.kill(actor, no_restart=True)
        if started_here:
            await anyio.to_thread.run_sync(ray.shutdown)
