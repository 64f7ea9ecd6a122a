"""Executors: where a job's blocks run, found by the name in ``[job] executor``.

``"local"`` (a resident-graph session in this process) is built in. Others live in
layers above jobs and register themselves when their module is imported: the
runner imports that module by name (:data:`PROVIDERS`) the first time the executor
is asked for, so jobs never imports them, and an optional extra (Ray) is imported
only by a job that uses it.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

import anyio

from ...backends import BackendKind, DeviceSelector
from ...errors import ConfigurationError
from ...graphs import CsrGraph
from ..spec import JobSpec
from ._device_start import DeviceStart, job_kernels
from ._execute import BlockExecutor, reads_counts
from ._targets import BlockTarget, local_target

#: Executors defined above jobs: name -> the module that registers it when imported.
PROVIDERS: dict[str, str] = {"ray": "vyre_async.cluster"}


class Executor(Protocol):
    """Opens what a job's blocks run on, for one run and then one generation at a time."""

    def connect(self, spec: JobSpec, *, graph_key: str) -> AbstractAsyncContextManager[Any]:
        """What lasts the whole run (a cluster connection; nothing for local work).

        Entered before the job's graph is prepared, so a slow connection (or the
        local devices' opening) overlaps it. ``spec``'s ``[job]`` names the backend and
        devices the run uses (the command line's choice where it made one);
        ``graph_key`` identifies the job's graph (:func:`~vyre_async.jobs.graph.
        graph_fingerprint`), so a cluster that kept it from an earlier job can start
        from its copy before this driver has prepared its own.
        """
        ...

    def target(
        self,
        connection: Any,
        spec: JobSpec,
        *,
        backend: BackendKind,
        devices: DeviceSelector,
        graph: CsrGraph,
        execute: BlockExecutor,
    ) -> AbstractAsyncContextManager[BlockTarget]:
        """A target for one generation (until the job ends or a device is lost).

        Args:
            connection: What :meth:`connect` yielded.
            spec: The job.
            backend: The backend kind to open.
            devices: The devices to open (local work).
            graph: The job's graph, prepared once.
            execute: Runs a block on a session (local work; tests inject faults).
        """
        ...


class LocalExecutor:
    """Blocks run on a resident-graph session over this process's devices."""

    @asynccontextmanager
    async def connect(self, spec: JobSpec, *, graph_key: str) -> AsyncIterator[DeviceStart]:
        """Open the job's devices, with its workloads' kernels, in the background
        (``graph_key`` is not needed: the graph comes from this process)."""
        start = DeviceStart(
            spec.job.backend,
            spec.job.devices,
            job_kernels(spec),
            memory_limit=spec.limits.device_memory_limit,
        )
        async with anyio.create_task_group() as tg:
            await tg.start(start.run)
            try:
                yield start
            finally:
                tg.cancel_scope.cancel()  # devices still opening, or held and never taken

    def target(
        self,
        connection: Any,
        spec: JobSpec,
        *,
        backend: BackendKind,
        devices: DeviceSelector,
        graph: CsrGraph,
        execute: BlockExecutor,
    ) -> AbstractAsyncContextManager[BlockTarget]:
        """A session batching as ``[batching]`` says, on the devices ``connection``
        opened for the first target, on devices opened anew for a later one."""
        counts_only = all(reads_counts(workload) for workload in spec.workload)
        return local_target(
            backend,
            devices,
            graph,
            spec.batching.session_config(),
            execute,
            blocks_per_slot=1 if counts_only else 2,
            start=connection,
            memory_limit=spec.limits.device_memory_limit,
        )


_EXECUTORS: dict[str, Executor] = {"local": LocalExecutor()}


def register_executor(name: str, executor: Executor) -> None:
    """Make ``executor`` the one ``[job] executor = name`` runs on (replacing any)."""
    _EXECUTORS[name] = executor


def executor_for(name: str) -> Executor:
    """The executor registered under ``name``, importing its provider first if needed.

    Raises:
        ConfigurationError: No executor has that name.
    """
    if name not in _EXECUTORS and name in PROVIDERS:
        importlib.import_module(PROVIDERS[name])
    executor = _EXECUTORS.get(name)
    if executor is None:
        known = sorted({*_EXECUTORS, *PROVIDERS})
        raise ConfigurationError(
            f"no executor is named {name!r}; known: {', '.join(known)}",
            fix="set [job] executor to one of those.",
        )
    return executor
