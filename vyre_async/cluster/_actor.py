"""The body of one Ray actor: a backend with the job's graph resident on it.

Ray makes it an actor (``ray.remote(GraphWorker)``) with one GPU (``num_gpus=1``:
Ray sets ``CUDA_VISIBLE_DEVICES``, so the actor's device is ordinal 0). The graph is
loaded and uploaded on the first block, not in ``__init__``: an actor that Ray
restarts after it died runs ``__init__`` again and then loads the graph again the
same way. Requests and replies are msgspec bytes (see :mod:`._wire`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import msgspec

from ..backends import BackendKind, open_backend
from ..jobs._execute import execute_block
from ..jobs._graph_source import load_job_graph
from ..jobs._spec import JobSpec
from ..sessions import BatchingConfig, ResidentGraphSession
from ._wire import BlockRequest, encode_result


class WorkerInfo(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What an actor reports about itself."""

    backend: str
    device: str
    blocks: int
    telemetry: dict[str, object]


class GraphWorker:
    """One actor's state: the job, its backend and its resident graph session.

    Args:
        spec_json: The job spec, JSON-encoded.
        job_file: The job file (relative graph paths start at its folder).
        backend: The backend kind each actor opens.
    """

    def __init__(self, spec_json: bytes, job_file: str, backend: BackendKind) -> None:
        self._spec = msgspec.json.decode(spec_json, type=JobSpec)
        self._job_file = Path(job_file)
        self._kind = backend
        self._stack: contextlib.AsyncExitStack | None = None
        self._session: ResidentGraphSession | None = None
        self._name = ("", "")
        self._blocks = 0
        self._telemetry: object = None
        self._starting: anyio.Lock | None = None

    async def _session_now(self) -> ResidentGraphSession:
        if self._starting is None:
            self._starting = anyio.Lock()
        async with self._starting:
            if self._session is None:
                spec = self._spec
                graph = await anyio.to_thread.run_sync(load_job_graph, spec, self._job_file)
                batching = BatchingConfig(
                    max_batch=spec.batching.max_batch,
                    max_delay=spec.batching.max_delay_ms / 1000,
                )
                stack = contextlib.AsyncExitStack()
                backend = await stack.enter_async_context(open_backend(self._kind))
                self._session = await stack.enter_async_context(
                    backend.resident_graph(graph, batching=batching)
                )
                self._stack = stack
                self._name = (backend.kind, backend.device_name)
                self._telemetry = backend.telemetry
        return self._session

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
        info = WorkerInfo(self._name[0], self._name[1], self._blocks, telemetry)
        return msgspec.msgpack.encode(info)

    async def close(self) -> None:
        """Close the session and the backend."""
        stack, self._stack, self._session = self._stack, None, None
        if stack is not None:
            await stack.aclose()
