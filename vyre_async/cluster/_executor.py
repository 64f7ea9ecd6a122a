"""Blocks on Ray actors: one :class:`GraphWorker` actor per GPU of the cluster.

The job's driver stays as it is (producer, retries, committer, manifest): only
``target.run`` sends a block to the least busy actor and awaits its reply. Actors
are at-least-once: an actor that dies mid-block is restarted by Ray (up to
``limits.max_reopens`` times), the block fails with a retryable
:class:`DispatchError`, and the runner runs it again; records are keyed by item id
and committed by the driver only, so a block run twice is still committed once.

:func:`connect_ray` joins the cluster at ``ray_address`` (or starts a local Ray
instance) in the background while the driver prepares the graph, and logs where the
Ray dashboard is. :func:`ray_target` puts the graph's arrays into Ray's object store
once and starts every actor at once with references to them; actors open their
backends and upload the graph in parallel while the driver cuts the first blocks.
Actor names carry a random run id, so runs of one job on one cluster never collide.

Ray's awaitables are asyncio futures: under trio a Ray job is refused.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import msgspec
import numpy as np

from ..backends import BackendKind, DeviceSelector
from ..errors import ConfigurationError, DispatchError
from ..graphs import CsrGraph
from ..jobs import BlockExecutor, BlockResult, JobSpec, WorkloadSection
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
        self,
        ray: Any,
        actors: list[Any],
        backend: str,
        workloads: list[WorkloadSection],
        names: list[str] | None = None,
    ) -> None:
        self._ray = ray
        self._actors = actors
        #: The actors' names in the cluster (``vyre-<job>-<run id>-<i>``).
        self.names = list(names or [])
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
                "graph_loads_per_actor": [info.graph_loads for info in infos],
                "graph_shared_per_actor": [info.graph_shared for info in infos],
            },
        )


_NO_DASHBOARD = "not running (Ray starts it when `pip install 'ray[default]'` is installed)"


class RayConnection:
    """Ray joined (or started) for one job run; see :func:`connect_ray`.

    Attributes:
        dashboard: Where the Ray dashboard is, or why there is none.
    """

    def __init__(self, ray: Any, address: str | None) -> None:
        self._ray = ray
        self._address = address
        self._ready = anyio.Event()
        self._error: BaseException | None = None
        self.started_here = False
        self.dashboard = ""

    async def _connect(self) -> None:
        ray = self._ray
        try:
            if ray.is_initialized():
                self.dashboard = "unknown (Ray was initialised by this process before the job)"
            else:
                context = await anyio.to_thread.run_sync(
                    lambda: ray.init(
                        address=self._address,
                        logging_level="ERROR",
                        log_to_driver=False,
                    )
                )
                self.started_here = True
                url = getattr(context, "dashboard_url", "") or ""
                if url and "://" not in url:
                    url = f"http://{url}"
                self.dashboard = url or _NO_DASHBOARD
            _log.info(
                "ray_connected",
                address=self._address or "a local Ray instance",
                dashboard=self.dashboard,
            )
        except Exception as exc:
            self._error = exc
        finally:
            self._ready.set()

    async def ready(self) -> Any:
        """Wait for the connection; return the ``ray`` module.

        Raises:
            ConfigurationError: Ray could not start or reach the cluster.
        """
        await self._ready.wait()
        if self._error is not None:
            where = f"the Ray cluster at {self._address}" if self._address else "a local Ray"
            raise ConfigurationError(
                f"could not start or join {where}: {type(self._error).__name__}: {self._error}",
                fix="check ray_address (the head node's address, e.g. 'ray://host:10001' or "
                "'host:6379'), or unset it to start a local instance.",
            ) from self._error
        return self._ray

    async def _disconnect(self) -> None:
        await self._ready.wait()
        if self.started_here:
            await anyio.to_thread.run_sync(self._ray.shutdown)


@asynccontextmanager
async def connect_ray(spec: JobSpec) -> AsyncIterator[RayConnection]:
    """Join ``ray_address`` (or start a local Ray instance) in the background.

    The connection is made while the body runs (the driver prepares the graph
    meanwhile); :meth:`RayConnection.ready` waits for it. Ray is shut down on exit if
    it was started here.

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
    connection = RayConnection(ray, spec.job.ray_address)
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection._connect)
        try:
            yield connection
        finally:
            with anyio.CancelScope(shield=True):
                await connection._disconnect()


@asynccontextmanager
async def ray_target(
    connection: RayConnection, spec: JobSpec, backend: BackendKind, graph: CsrGraph
) -> AsyncIterator[RayTarget]:
    """Put the graph into the object store, start one actor per GPU, remove them afterwards.

    Raises:
        ConfigurationError: Ray could not start or reach the cluster.
    """
    ray = await connection.ready()
    job = spec.job
    gpus = int((await anyio.to_thread.run_sync(ray.cluster_resources)).get("GPU", 0))
    count = job.ray_workers or max(gpus, 1)
    per_actor = {"num_gpus": 1} if gpus else {"num_cpus": 1}
    arrays = (graph.offsets, graph.indices, graph.weights)
    refs = await anyio.to_thread.run_sync(
        lambda: [None if a is None else ray.put(a) for a in arrays]
    )
    worker = ray.remote(GraphWorker)
    spec_json = msgspec.json.encode(spec)
    run = secrets.token_hex(4)
    names = [f"vyre-{job.name}-{run}-{i}" for i in range(count)]
    actors = [
        worker.options(
            name=name,
            max_restarts=spec.limits.max_reopens,
            max_task_retries=0,
            **per_actor,
        ).remote(spec_json, backend, *refs, graph.symmetric)
        for name in names
    ]
    # Every actor opens its backend and uploads the graph now, all at once.
    started = [actor.start.remote() for actor in actors]
    target = RayTarget(ray, actors, backend, list(spec.workload), names)
    _log.info("ray_actors_started", actors=count, gpus=gpus, run=run, first=names[0])
    try:
        yield target
    finally:
        del started, refs
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(
                lambda: [ray.kill(actor, no_restart=True) for actor in actors]
            )


class RayExecutor:
    """``[job] executor = "ray"``: blocks on Ray actors (registered when this package loads)."""

    def connect(self, spec: JobSpec) -> AbstractAsyncContextManager[RayConnection]:
        """Join ``ray_address`` or start a local Ray, in the background (:func:`connect_ray`)."""
        return connect_ray(spec)

    def target(
        self,
        connection: RayConnection,
        spec: JobSpec,
        *,
        backend: BackendKind,
        devices: DeviceSelector,
        graph: CsrGraph,
        execute: BlockExecutor,
    ) -> AbstractAsyncContextManager[RayTarget]:
        """One actor per GPU of the cluster (:func:`ray_target`); ``devices`` and
        ``execute`` are the actors' own (each holds one GPU and runs
        :func:`~vyre_async.jobs.execute_block`)."""
        return ray_target(connection, spec, backend, graph)
