"""A job's graph, prepared once by the driver: from the cache, the device, the host or a file.

An R-MAT graph is looked up in the graph cache first (:mod:`._graph_cache`). On a
miss it is generated: on a CUDA device when the job runs on one (the host spends its
time sorting 10**8 keys; the device builder keeps them on the GPU), else on the host,
then stored in the cache in the background while the job goes on. Any other graph is
read from its file. Local devices get the result from host memory and Ray actors
through Ray's object store; nothing downstream loads or generates the graph again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import anyio
import anyio.abc

from ...algorithms.rmat import MAX_DEVICE_RMAT_KEYS, rmat_on_device
from ...backends import BackendKind, DeviceSelector, open_backend
from ...errors import VyreError
from ...graphs import CsrGraph, RmatParams, rmat, rmat_params, with_uniform_weights
from ...logging import get_logger
from ...telemetry import startup_stage
from ..spec import GraphSection, JobSpec
from ._graph_cache import load_cached_rmat, save_cached_rmat
from ._graph_source import load_section_graph, memory_limit

_log = get_logger("vyre_async.jobs")

#: R-MAT graphs from this scale on are cached (smaller ones generate faster than they load)
#: and generated on the device when the job runs on CUDA (opening a device costs more).
CACHE_MIN_SCALE = 16
DEVICE_MIN_SCALE = 16

GraphOrigin = Literal["file", "cache", "device", "host"]


async def prepare_job_graph(
    spec: JobSpec,
    job_file: Path,
    backend: BackendKind,
    devices: DeviceSelector,
    background: anyio.abc.TaskGroup,
    *,
    may_generate: anyio.Event | None = None,
) -> CsrGraph:
    """The job's graph, prepared once; see the module docstring.

    Args:
        spec: The job.
        job_file: Its file (relative graph paths start at its folder).
        backend: The backend kind the job runs on (``"cpu"`` never opens a device here).
        devices: The job's devices; a device build runs on the first of them.
        background: Where the cache write runs while the job goes on.
        may_generate: Set when the graph may be generated (reading it from the cache
            or its file starts at once); ``None``: at once.

    Raises:
        ConfigurationError: The graph file cannot be read.
        ValidationError: The graph file or the R-MAT parameters are invalid.
    """
    return await prepare_graph(
        spec.graph,
        job_file,
        f"{job_file}: $.graph",
        backend,
        devices,
        background,
        memory_limit=memory_limit(spec),
        may_generate=may_generate,
    )


async def prepare_graph(
    section: GraphSection,
    config_file: Path,
    where: str,
    backend: BackendKind,
    devices: DeviceSelector,
    background: anyio.abc.TaskGroup,
    *,
    memory_limit: int | None = None,
    may_generate: anyio.Event | None = None,
) -> CsrGraph:
    """A ``[graph]`` section's graph, prepared as a job's is (see the module docstring).

    Args:
        section: The section (of a job file, or of another config file).
        config_file: The file that holds it (relative graph paths start at its folder).
        where: The section's place, for messages (``"serve.toml: $.graphs[0].graph"``).
        backend: The backend kind the graph will be used on (``"cpu"`` never opens a
            device here).
        devices: The devices it will be used on; a device build runs on the first.
        background: Where the cache write runs meanwhile.
        memory_limit: Host bytes a graph read from a file may need (``None``: what the
            machine has).
        may_generate: Set when the graph may be generated: a job reads its graph while
            its devices are checked, and generates one (seconds of host or device
            work) only once they passed; ``None``: at once.

    Raises:
        ConfigurationError: The graph file cannot be read.
        ValidationError: The graph file or the R-MAT parameters are invalid.
    """
    started = time.perf_counter()
    began = time.monotonic()  # the start-up timeline's clock
    origin: GraphOrigin = "file"
    if section.kind != "rmat" or section.scale is None:
        graph = await anyio.to_thread.run_sync(
            load_section_graph, section, config_file, where, memory_limit
        )
    else:
        params = rmat_params(section.scale, section.edge_factor, section.seed)
        cached = None
        if params.scale >= CACHE_MIN_SCALE:
            cached = await anyio.to_thread.run_sync(load_cached_rmat, params)
        if cached is not None:
            graph, origin = cached, "cache"
        else:
            if may_generate is not None:
                await may_generate.wait()
            graph, origin = await _generate(params, backend, devices)
            if params.scale >= CACHE_MIN_SCALE:
                background.start_soon(_store, params, graph)
        if section.weights == "uniform":  # a function of the edges: the cache keeps none
            graph = await anyio.to_thread.run_sync(with_uniform_weights, graph, params.seed)
    _log.info(
        "graph_ready",
        origin=origin,
        seconds=round(time.perf_counter() - started, 3),
        vertices=graph.num_vertices,
        edges=graph.num_edges,
    )
    startup_stage("graph_ready", began=began, origin=origin)
    return graph


async def _generate(
    params: RmatParams, backend: BackendKind, devices: DeviceSelector
) -> tuple[CsrGraph, GraphOrigin]:
    if (
        backend != "cpu"
        and params.scale >= DEVICE_MIN_SCALE
        and 2 * params.num_edges <= MAX_DEVICE_RMAT_KEYS
    ):
        try:
            async with open_backend(backend, device=_first_device(devices)) as device:
                if device.kind == "cuda":
                    return await rmat_on_device(device, params), "device"
        except VyreError as exc:
            _log.warning(
                "graph_device_build_failed",
                error=str(exc),
                action="generating on the host instead",
            )
    p = params
    graph = await anyio.to_thread.run_sync(
        lambda: rmat(p.scale, p.edge_factor, p.seed, a=p.a, b=p.b, c=p.c)
    )
    return graph, "host"


async def _store(params: RmatParams, graph: CsrGraph) -> None:
    # A thread that has started writing finishes (then the entry is whole or absent).
    await anyio.to_thread.run_sync(save_cached_rmat, params, graph)


def _first_device(devices: DeviceSelector) -> int:
    if isinstance(devices, int):
        return devices
    if isinstance(devices, Sequence) and not isinstance(devices, str) and devices:
        return int(devices[0])
    return 0
