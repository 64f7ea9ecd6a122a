"""Preparing a local job's graph while its devices are checked and opened.

Checking a CUDA job's devices loads and initialises the driver (``cuInit``: about a
second on a host of several GPUs), and reading a cached R-MAT graph or a graph file
takes about as long; neither needs the other. So the runner starts the graph's
preparation as soon as the job file is checked (its host memory among it), and the
graph is read while the driver initialises. Generating a graph (seconds of host or
device work) waits until the devices passed their check, so a refused job generates
nothing and writes nothing to the graph cache; a refused job cancels the preparation
(a read under way ends in its thread first).
"""

from __future__ import annotations

from pathlib import Path

import anyio
from anyio.abc import TaskStatus

from ...backends import BackendKind, DeviceSelector
from ...graphs import CsrGraph
from ..graph import prepare_job_graph
from ..spec import JobSpec

__all__ = ["GraphStart"]


class GraphStart:
    """A job's graph being prepared in the background, for the run to take.

    :meth:`run` prepares it, then waits for the graph cache's write (a generated graph's)
    to end; :meth:`cancel` (or cancelling the task) stops both.

    Args:
        spec: The job.
        job_file: Its file (relative graph paths start at its folder).
        backend: The backend kind the job runs on.
        devices: The job's devices.
        may_generate: Set once the job's devices passed their check.
    """

    def __init__(
        self,
        spec: JobSpec,
        job_file: Path,
        backend: BackendKind,
        devices: DeviceSelector,
        may_generate: anyio.Event,
    ) -> None:
        self._spec = spec
        self._job_file = job_file
        self._backend: BackendKind = backend
        self._devices = devices
        self._may_generate = may_generate
        self._ready = anyio.Event()
        self._graph: CsrGraph | None = None
        self._error: Exception | None = None
        self._scope = anyio.CancelScope()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Prepare the graph, then wait for the cache write it started (if any)."""
        task_status.started()
        with self._scope:
            async with anyio.create_task_group() as background:
                try:
                    self._graph = await prepare_job_graph(
                        self._spec,
                        self._job_file,
                        self._backend,
                        self._devices,
                        background,
                        may_generate=self._may_generate,
                    )
                except Exception as exc:  # the run that takes the graph raises it
                    self._error = exc
                finally:
                    self._ready.set()

    def cancel(self) -> None:
        """Stop preparing the graph (a run that needs none: its job is complete)."""
        self._scope.cancel()

    async def take(self) -> CsrGraph:
        """The graph, once prepared.

        Raises:
            VyreError: Preparing it failed (what the preparation raised).
        """
        await self._ready.wait()
        if self._error is not None:
            raise self._error
        if self._graph is None:
            raise RuntimeError("the graph's preparation was cancelled")  # pragma: no cover
        return self._graph
