"""The Ray executor: a job's connection to the cluster and its actors, one
:class:`GraphWorker` per GPU of the cluster.

The job's driver stays as it is (producer, retries, committer, manifest): only its
target (:class:`~._target.RayTarget`) sends blocks to the actors. Actors are
at-least-once: an actor that dies mid-block is restarted by Ray (up to
``limits.max_reopens`` times) and the block runs again.

:func:`connect_ray` joins the cluster (``ray_address``, else ``RAY_ADDRESS``, else
a local Ray instance it starts) in the background while the driver prepares the
graph, logs where the Ray dashboard is, and at once creates the actors: each opens
its backend and waits for the graph from the cluster's
:class:`~vyre_async.cluster.GraphStore`. If the store kept the graph from an earlier
job, the actors start from it before the driver has its own; otherwise
:func:`ray_target` puts the driver's graph into the object store once and lends it to
the store, which hands it to this run's actors and keeps a copy for later jobs.
Actor names carry a random run id, so runs of one job on one cluster never collide.

Ray's awaitables are asyncio futures: under trio a Ray job is refused.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import msgspec

from ..backends import BackendKind, DeviceSelector
from ..errors import ConfigurationError
from ..graphs import CsrGraph
from ..jobs import BlockExecutor, JobSpec
from ..logging import get_logger
from ..telemetry import startup_stage
from ._actor import GraphWorker
from ._store import NAMESPACE, graph_store
from ._target import RayTarget
from ._wire import ActorJob

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


_NO_DASHBOARD = "not running (Ray starts it when `pip install 'ray[default]'` is installed)"


class _Generation:
    """One generation's actors, created and being started.

    Attributes:
        actors: The actor handles.
        names: Their names in the cluster (``vyre-<job>-<run id>-<i>``).
        run: The run id in their names.
        found: Whether the cluster's store had the graph when they were created.
    """

    def __init__(self, actors: list[Any], names: list[str], run: str, *, found: bool) -> None:
        self.actors = actors
        self.names = names
        self.run = run
        self.found = found


class RayConnection:
    """Ray joined (or started) for one job run, its actors started early; see
    :func:`connect_ray`.

    Attributes:
        dashboard: Where the Ray dashboard is, or why there is none.
        address: The address joined (``None``: a local instance was started).
        address_from: Where the address came from: ``"ray_address"`` (the job
            file), ``"RAY_ADDRESS"`` (the environment) or ``"none"``.
    """

    def __init__(self, ray: Any, spec: JobSpec, graph_key: str, tg: anyio.abc.TaskGroup) -> None:
        self._ray = ray
        self._spec = spec
        self._graph_key = graph_key
        self._tg = tg
        self.address, self.address_from = _address(spec)
        self._ready = anyio.Event()
        self._error: BaseException | None = None
        self.started_here = False
        self.dashboard = ""
        self.store: Any = None
        self._first: _Generation | None = None
        self._live: list[_Generation] = []

    async def _connect(self) -> None:
        ray = self._ray
        try:
            if ray.is_initialized():
                self.dashboard = "unknown (Ray was initialised by this process before the job)"
            else:
                context = await anyio.to_thread.run_sync(
                    lambda: ray.init(
                        address=self.address,
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
                address=self.address or "a local Ray instance",
                address_from=self.address_from,
                dashboard=self.dashboard,
            )
            startup_stage("ray_connected", address_from=self.address_from)
            self.store = await anyio.to_thread.run_sync(graph_store, ray)
            self._first = await self._start_generation()
        except Exception as exc:
            self._error = exc
        finally:
            self._ready.set()

    async def _start_generation(self) -> _Generation:
        """One actor per GPU (or ``ray_workers``), started: warm ones a job of this
        graph left take the job at once; new ones open their backends and fetch the
        graph from the store, while the driver goes on."""
        ray, spec = self._ray, self._spec
        found = await self.store.lookup.remote(self._graph_key) is not None
        gpus = int((await anyio.to_thread.run_sync(ray.cluster_resources)).get("GPU", 0))
        count = spec.job.ray_workers or max(gpus, 1)
        run = secrets.token_hex(4)
        job = msgspec.msgpack.encode(ActorJob.of(spec, self._graph_key, run))
        actors = await self._claim_warm(job, count)
        warm = len(actors)
        fresh = count - warm
        if fresh and gpus:
            free = (await anyio.to_thread.run_sync(ray.available_resources)).get("GPU", 0)
            if free < fresh:  # idle actors of other graphs hold devices this job needs
                evicted = await self.store.evict.remote(self.pool)
                _log.info("ray_actors_evicted", actors=evicted, reason="devices wanted")
        keep_s = spec.job.ray_keep_actors_s
        kept = {"lifetime": "detached", "namespace": NAMESPACE} if keep_s else {}
        worker = ray.remote(GraphWorker)
        for i in range(fresh):
            name = f"vyre-{spec.job.name}-{run}-{i}"
            actor = worker.options(
                name=name,
                max_restarts=spec.limits.max_reopens,
                max_task_retries=0,
                **({"num_gpus": 1} if gpus else {"num_cpus": 1}),
                **kept,
            ).remote(job, spec.job.backend, self.store)
            if keep_s:  # watched from the start: it exits idle even if this driver dies
                actor.keep_warm.remote(self.pool, name, keep_s)
            actors[name] = actor
            self._tg.start_soon(self._watch_start, name, actor.start.remote())
        names = list(actors)
        generation = _Generation(list(actors.values()), names, run, found=found)
        self._live.append(generation)
        _log.info(
            "ray_actors_started",
            actors=count,
            warm=warm,
            gpus=gpus,
            run=run,
            first=names[0],
            graph="in the cluster's store" if found else "from this driver",
        )
        startup_stage("ray_actors_created", actors=count, warm=warm, graph_found=found)
        return generation

    async def _claim_warm(self, job: bytes, count: int) -> dict[str, Any]:
        """The warm actors of this graph and backend that took the job (at most
        ``count``); one that fails to is dropped (a new one takes its place)."""
        claimed = await self.store.claim.remote(self.pool, count)
        taken: dict[str, Any] = {}
        for name, actor in claimed.items():
            try:
                seconds = await actor.adopt.remote(job)
            except self._ray.exceptions.RayError as exc:
                _log.warning("ray_warm_actor_lost", actor=name, error=type(exc).__name__)
                continue
            taken[name] = actor
            _log.info("ray_actor_ready", actor=name, warm=True, seconds=round(seconds, 3))
        if taken:
            startup_stage("ray_actor_ready", device="warm", actors=len(taken))
        return taken

    @property
    def pool(self) -> str:
        """The store's pool of warm actors this job can take: its graph and backend."""
        return f"{self._graph_key}/{self._spec.job.backend}"

    async def _keep_alive(self) -> None:
        """While this driver lives, touch its kept actors three times per idle time,
        so that its own pauses (checks before the first block, a slow commit) never
        look like a dead driver to them (:meth:`GraphWorker.keep_warm`)."""
        keep_s = self._spec.job.ray_keep_actors_s
        if not keep_s:
            return
        await self._ready.wait()
        while True:
            for generation in self._live:
                for actor in generation.actors:
                    actor.touch.remote()
            await anyio.sleep(keep_s / 3)

    async def _watch_start(self, name: str, started: Any) -> None:
        """Log when a new actor has its backend open and the graph uploaded."""
        try:
            seconds = await started
        except self._ray.exceptions.RayError as exc:
            # Its first block fails the same way and is retried (limits.retries).
            _log.warning("ray_actor_start_failed", actor=name, error=type(exc).__name__)
            return
        _log.info("ray_actor_ready", actor=name, warm=False, seconds=round(seconds, 3))
        startup_stage("ray_actor_ready", device=name.rsplit("-", 1)[-1], seconds=round(seconds, 3))

    async def ready(self) -> Any:
        """Wait for the connection; return the ``ray`` module.

        Raises:
            ConfigurationError: Ray could not start or reach the cluster.
        """
        await self._ready.wait()
        if self._error is not None:
            where = f"the Ray cluster at {self.address}" if self.address else "a local Ray"
            raise ConfigurationError(
                f"could not start or join {where}: {type(self._error).__name__}: {self._error}",
                fix="check ray_address or RAY_ADDRESS (the head node's address: 'auto' for "
                "the cluster `ray start --head` started on this host, 'ray://host:10001' or "
                "'host:6379'), or unset both to start a local instance.",
            ) from self._error
        return self._ray

    async def generation(self) -> _Generation:
        """The actors started while the driver prepared the graph, for the first
        target; actors started anew for a later one."""
        await self.ready()
        first, self._first = self._first, None
        return first if first is not None else await self._start_generation()

    def _kill(self, generation: _Generation) -> None:
        if generation in self._live:
            self._live.remove(generation)
            for actor in generation.actors:
                self._ray.kill(actor, no_restart=True)

    async def release(self, generation: _Generation) -> None:
        """A target is done with ``generation``: park its actors as warm for a later
        job (``ray_keep_actors_s > 0``), else remove them."""
        keep_s = self._spec.job.ray_keep_actors_s
        if not keep_s or generation not in self._live:
            await anyio.to_thread.run_sync(self._kill, generation)
            return
        self._live.remove(generation)
        for name, actor in zip(generation.names, generation.actors, strict=True):
            actor.keep_warm.remote(self.pool, name, keep_s)
        actors = dict(zip(generation.names, generation.actors, strict=True))
        await self.store.park.remote(self.pool, actors)
        _log.info("ray_actors_kept", actors=len(generation.actors), idle_s=keep_s)

    async def _disconnect(self) -> None:
        await self._ready.wait()
        for generation in list(self._live):  # started, never taken by a target
            await self.release(generation)
        if self.started_here:
            await anyio.to_thread.run_sync(self._ray.shutdown)


def _address(spec: JobSpec) -> tuple[str | None, str]:
    """The cluster's address and where it came from (Ray reads ``RAY_ADDRESS`` itself
    too; reading it here lets the log say which)."""
    if spec.job.ray_address is not None:
        return spec.job.ray_address, "ray_address"
    from_env = os.environ.get("RAY_ADDRESS")
    if from_env:
        return from_env, "RAY_ADDRESS"
    return None, "none"


@asynccontextmanager
async def connect_ray(spec: JobSpec, graph_key: str) -> AsyncIterator[RayConnection]:
    """Join the cluster (``ray_address``, else ``RAY_ADDRESS``, else a local Ray
    instance started here) and start the job's actors, in the background.

    The connection is made and the actors started while the body runs (the driver
    prepares the graph meanwhile); :meth:`RayConnection.ready` waits for it. Actors
    no target took are removed on exit, and Ray is shut down if it was started here.

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
    async with anyio.create_task_group() as tg:
        connection = RayConnection(ray, spec, graph_key, tg)
        tg.start_soon(connection._connect)
        tg.start_soon(connection._keep_alive)
        try:
            yield connection
        finally:
            with anyio.CancelScope(shield=True):
                await connection._disconnect()
            tg.cancel_scope.cancel()  # actors' start watchers and the keep-alive


@asynccontextmanager
async def ray_target(
    connection: RayConnection, spec: JobSpec, backend: BackendKind, graph: CsrGraph
) -> AsyncIterator[RayTarget]:
    """Blocks on the connection's actors; the graph lent to them (and to the cluster's
    store) unless the store had it; the actors removed afterwards.

    Raises:
        ConfigurationError: Ray could not start or reach the cluster.
    """
    ray = await connection.ready()
    generation = await connection.generation()
    key, store = connection._graph_key, connection.store
    keeping = None
    lent: list[Any] = []
    if not generation.found:
        began = time.perf_counter()
        lent = await anyio.to_thread.run_sync(_put_graph, ray, graph)
        keeping = store.keep.remote(key, generation.run, lent)
        _log.info("ray_graph", origin="driver", seconds=round(time.perf_counter() - began, 3))
    else:
        _log.info("ray_graph", origin="cluster", seconds=0.0)
    target = RayTarget(
        ray,
        generation.actors,
        backend,
        list(spec.workload),
        generation.names,
        in_flight=spec.batching.in_flight,
    )
    try:
        yield target
    finally:
        with anyio.CancelScope(shield=True):
            await connection.release(generation)
            if keeping is not None:
                await _settle_keeping(ray, store, key, generation.run, keeping)
        del lent


def _put_graph(ray: Any, graph: CsrGraph) -> list[Any]:
    arrays = (graph.offsets, graph.indices, graph.weights)
    return [*(None if a is None else ray.put(a) for a in arrays), graph.symmetric]


async def _settle_keeping(ray: Any, store: Any, key: str, run: str, keeping: Any) -> None:
    """Wait for the store's copy (it reads the driver's objects, which go when the
    driver exits) and take back what this run lent."""
    try:
        status = await keeping
        await store.forget_lent.remote(key, run)
    except ray.exceptions.RayError as exc:
        status = f"not kept: the store failed ({type(exc).__name__})"
    _log.info("ray_graph_kept", status=status)


class RayExecutor:
    """``[job] executor = "ray"``: blocks on Ray actors (registered when this package loads)."""

    def connect(
        self, spec: JobSpec, *, graph_key: str
    ) -> AbstractAsyncContextManager[RayConnection]:
        """Join the cluster or start a local Ray, and start the actors, in the
        background (:func:`connect_ray`)."""
        return connect_ray(spec, graph_key)

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
        """The actors :meth:`connect` started (:func:`ray_target`); ``devices`` and
        ``execute`` are the actors' own (each holds one GPU and runs
        :func:`~vyre_async.jobs.execute_block`)."""
        return ray_target(connection, spec, backend, graph)
