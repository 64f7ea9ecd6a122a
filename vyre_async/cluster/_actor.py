"""The body of one Ray actor: a backend with the job's graph resident on it.

Ray makes it an actor (``ray.remote(GraphWorker)``) with one GPU (``num_gpus=1``:
Ray sets ``CUDA_VISIBLE_DEVICES``, so the actor's device is ordinal 0). It is created
with an :class:`~._wire.ActorJob` (a few hundred bytes) and the cluster's graph store;
``start`` opens the backend while it fetches the graph's CSR arrays from the store
(:meth:`~._store.GraphStore.wait_for`: read-only NumPy arrays over the object store's
shared memory, no copy on the store's node), then uploads the graph. The actor never
loads or generates the graph itself; an actor that Ray restarts after it died fetches
the same arrays again. The first block starts it if ``start`` was not called.
Requests and replies are msgspec bytes (see :mod:`._wire`).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, NamedTuple

import anyio
import msgspec
import numpy as np

from ..algorithms import QueryKind, lookup
from ..backends import Backend, BackendKind, open_backend
from ..errors import ConfigurationError
from ..graphs import CsrGraph, trusted_csr
from ..jobs import execute_block, graph_loads
from ..sessions import ResidentGraphSession, resident_graph
from ._wire import ActorJob, BlockRequest, encode_result


class _Workload(NamedTuple):
    """A workload as :func:`~vyre_async.jobs.execute_block` reads it."""

    kind: str
    unit: QueryKind[Any]
    params: Any
    sources: None = None


class WorkerInfo(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What an actor reports about itself.

    Attributes:
        backend: Its backend's kind.
        device: Its backend's device name.
        blocks: Blocks it ran.
        telemetry: Its backend's telemetry snapshot.
        graph_loads: Times this actor's process called the job graph loader (0: the
            graph came from the object store).
        graph_shared: Whether the graph arrays it holds are read-only views of memory
            it does not own (the object store's), not copies.
    """

    backend: str
    device: str
    blocks: int
    telemetry: dict[str, object]
    graph_loads: int = 0
    graph_shared: bool = False


class GraphWorker:
    """One actor's state: the job's workloads, its backend and its resident graph.

    Args:
        job: The actor's part of the job, a msgpack :class:`~._wire.ActorJob`.
        backend: The backend kind it opens.
        store: The cluster's graph store (an actor handle).
    """

    def __init__(self, job: bytes, backend: BackendKind, store: Any) -> None:
        self._kind = backend
        self._store = store
        self._adopt(job)
        self._arrays: tuple[np.ndarray | None, ...] = ()
        self._graph: CsrGraph | None = None
        self._backend: Backend | None = None
        self._backend_stack = contextlib.AsyncExitStack()
        self._session_stack = contextlib.AsyncExitStack()
        self._session: ResidentGraphSession | None = None
        self._blocks = 0
        self._starting: anyio.Lock | None = None
        self._last_asked = time.monotonic()
        self._running = 0  # blocks running now: never idle meanwhile
        self._watch = 0

    def _adopt(self, job: bytes) -> None:
        self._job = msgspec.msgpack.decode(job, type=ActorJob)
        self._workloads = [_workload(w.kind, w.params) for w in self._job.workloads]

    async def _fetch_graph(self, asked: Any) -> CsrGraph:
        """The graph from the store's answer (read-only views of the object store)."""
        refs = await asked
        offsets, indices = await refs[0], await refs[1]
        weights = None if refs[2] is None else await refs[2]
        self._arrays = (offsets, indices, weights)
        return await anyio.to_thread.run_sync(
            lambda: trusted_csr(offsets, indices, weights, symmetric=bool(refs[3]))
        )

    async def _session_now(self) -> ResidentGraphSession:
        self._last_asked = time.monotonic()
        async with self._lock():
            if self._session is None:
                try:
                    if self._backend is None or self._graph is None:
                        # The store answers while the backend opens.
                        job = self._job
                        asked = self._store.wait_for.remote(job.graph_key, job.run)
                        self._backend = await self._backend_stack.enter_async_context(
                            open_backend(self._kind)
                        )
                        self._graph = await self._fetch_graph(asked)
                    self._session = await self._session_stack.enter_async_context(
                        resident_graph(
                            self._backend,
                            self._graph,
                            batching=self._job.batching.session_config(),
                        )
                    )
                except BaseException:
                    await self.close()
                    raise
        self._last_asked = time.monotonic()  # idle from when it is ready, not from the ask
        return self._session

    async def touch(self) -> None:
        """Its driver lives: count the actor as asked for work now (see
        :meth:`keep_warm`)."""
        self._last_asked = time.monotonic()

    async def start(self) -> float:
        """Open the backend and upload the graph now, before the first block; return
        the seconds it took (about 0 when it had been done)."""
        began = time.perf_counter()
        await self._session_now()
        return time.perf_counter() - began

    async def adopt(self, job: bytes) -> float:
        """Take a later job of the same graph (a msgpack :class:`~._wire.ActorJob`):
        its workloads, and its batching (a new session over the resident graph where
        that differs); return the seconds it took.

        Raises:
            ConfigurationError: The job's graph is another one.
        """
        began = time.perf_counter()
        previous = self._job
        self._adopt(job)
        self._blocks = 0  # WorkerInfo counts this job's blocks
        if self._job.graph_key != previous.graph_key:
            self._job = previous
            raise ConfigurationError(
                "a warm actor was handed a job of another graph",
                fix="report this: the cluster's graph store pairs actors by graph.",
            )
        if self._job.batching != previous.batching and self._session is not None:
            async with self._lock():
                self._session = None
                await self._session_stack.aclose()
        await self._session_now()
        return time.perf_counter() - began

    def _lock(self) -> anyio.Lock:
        if self._starting is None:
            self._starting = anyio.Lock()
        return self._starting

    async def keep_warm(self, pool: str, name: str, idle_s: float) -> None:
        """Stay alive while asked for work (a block, or its driver's :meth:`touch`);
        once nothing was asked for ``idle_s`` seconds and the store agrees
        (:meth:`~._store.GraphStore.retire`), close and exit. A later call takes over
        from an earlier one (which returns), so one watch runs whatever the number of
        jobs; the driver calls it when it creates a kept actor (so an actor whose
        driver died exits too) and when it parks one (so one that Ray restarted is
        watched again)."""
        import ray

        self._watch += 1
        watch = self._watch
        while watch == self._watch:
            if self._running:  # a running block is never idle time
                self._last_asked = time.monotonic()
            idle = time.monotonic() - self._last_asked
            if idle >= idle_s:
                try:
                    retire = await self._store.retire.remote(pool, name, idle_s)
                except ray.exceptions.RayActorError:
                    retire = True  # the store is gone, and with it the list of kept actors
                if retire:
                    await self.close()
                    exit_actor: Any = ray.actor.exit_actor
                    exit_actor()
                self._last_asked = time.monotonic()  # a job took it meanwhile
                continue
            await anyio.sleep(idle_s - idle)

    async def run_block(self, request: bytes) -> bytes:
        """Run one block (a msgpack :class:`BlockRequest`); return its result as bytes."""
        self._running += 1
        try:
            session = await self._session_now()
            block = msgspec.msgpack.decode(request, type=BlockRequest)
            result = await execute_block(
                session, self._workloads[block.workload], block.sources.array()
            )
        finally:
            self._running -= 1
            self._last_asked = time.monotonic()
        self._blocks += 1
        return encode_result(result)

    async def info(self) -> bytes:
        """A msgpack :class:`WorkerInfo` (starting the session if it was not yet)."""
        await self._session_now()
        backend = self._backend
        assert backend is not None  # a session has a backend
        telemetry = msgspec.to_builtins(backend.telemetry())
        shared = all(
            a is None or (not a.flags.writeable and not a.flags.owndata) for a in self._arrays
        )
        info = WorkerInfo(
            backend.kind, backend.device_name, self._blocks, telemetry, graph_loads(), shared
        )
        return msgspec.msgpack.encode(info)

    async def close(self) -> None:
        """Close the session and the backend."""
        self._session = None
        self._backend = None
        try:
            await self._session_stack.aclose()
        finally:
            await self._backend_stack.aclose()


def _workload(kind: str, params: dict[str, Any]) -> _Workload:
    unit = lookup(kind)
    return _Workload(kind, unit, msgspec.convert(params, unit.params))
