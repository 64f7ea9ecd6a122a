"""The body of one Ray actor: a backend with the job's graph resident on it.

Ray makes it an actor (``ray.remote(GraphWorker)``) with one GPU (``num_gpus=1``:
Ray sets ``CUDA_VISIBLE_DEVICES``, so the actor's device is ordinal 0). The graph's
CSR arrays arrive as constructor arguments the driver put into Ray's object store:
Ray resolves them before ``__init__``, as read-only NumPy arrays over the store's
shared memory (no copy on the driver's node). The actor never loads or generates the
graph itself; an actor that Ray restarts after it died gets the same arrays again.
``start`` opens the backend and uploads the graph; the first block does it otherwise.
Requests and replies are msgspec bytes (see :mod:`._wire`).
"""

from __future__ import annotations

import contextlib

import anyio
import msgspec
import numpy as np

from ..backends import BackendKind, open_backend
from ..graphs import CsrGraph, trusted_csr
from ..jobs import JobSpec, execute_block, graph_loads
from ..sessions import ResidentGraphSession, resident_graph
from ._wire import BlockRequest, encode_result


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
    """One actor's state: the job, its backend and its resident graph session.

    Args:
        spec_json: The job spec, JSON-encoded.
        backend: The backend kind each actor opens.
        offsets: The graph's row offsets (from the object store).
        indices: The graph's column indices (from the object store).
        weights: The graph's edge weights, or ``None``.
        symmetric: Whether the graph is symmetric (the driver checked it).
    """

    def __init__(
        self,
        spec_json: bytes,
        backend: BackendKind,
        offsets: np.ndarray,
        indices: np.ndarray,
        weights: np.ndarray | None,
        symmetric: bool,
    ) -> None:
        self._spec = msgspec.json.decode(spec_json, type=JobSpec)
        self._kind = backend
        self._arrays = (offsets, indices, weights)
        self._symmetric = symmetric
        self._stack: contextlib.AsyncExitStack | None = None
        self._session: ResidentGraphSession | None = None
        self._name = ("", "")
        self._blocks = 0
        self._telemetry: object = None
        self._starting: anyio.Lock | None = None

    def _graph(self) -> CsrGraph:
        offsets, indices, weights = self._arrays
        return trusted_csr(offsets, indices, weights, symmetric=self._symmetric)

    async def _session_now(self) -> ResidentGraphSession:
        if self._starting is None:
            self._starting = anyio.Lock()
        async with self._starting:
            if self._session is None:
                spec = self._spec
                graph = await anyio.to_thread.run_sync(self._graph)
                batching = spec.batching.session_config()
                stack = contextlib.AsyncExitStack()
                try:
                    backend = await stack.enter_async_context(open_backend(self._kind))
                    self._session = await stack.enter_async_context(
                        resident_graph(backend, graph, batching=batching)
                    )
                except BaseException:
                    await stack.aclose()
                    raise
                self._stack = stack
                self._name = (backend.kind, backend.device_name)
                self._telemetry = backend.telemetry
        return self._session

    async def start(self) -> None:
        """Open the backend and upload the graph now, before the first block."""
        await self._session_now()

    async def run_block(self, request: bytes) -> bytes:
        """Run one block (a msgpack :class:`BlockRequest`); return its result as bytes."""
        session = await self._session_now()
        block = msgspec.msgpack.decode(request, type=BlockRequest)
        result = await execute_block(
            session, self._spec.workload[block.workload], block.sources.array()
        )
        self._blocks += 1
        return encode_result(result)

    async def info(self) -> bytes:
        """A msgpack :class:`WorkerInfo` (starting the session if it was not yet)."""
        await self._session_now()
        snapshot = self._telemetry() if callable(self._telemetry) else None
        telemetry = msgspec.to_builtins(snapshot) if snapshot is not None else {}
        shared = all(
            a is None or (not a.flags.writeable and not a.flags.owndata) for a in self._arrays
        )
        info = WorkerInfo(
            self._name[0], self._name[1], self._blocks, telemetry, graph_loads(), shared
        )
        return msgspec.msgpack.encode(info)

    async def close(self) -> None:
        """Close the session and the backend."""
        stack, self._stack, self._session = self._stack, None, None
        if stack is not None:
            await stack.aclose()
