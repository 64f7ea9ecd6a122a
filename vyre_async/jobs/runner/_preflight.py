"""What a job is checked for before any work starts: ``vyre-async validate`` and the runner.

Short of generating or loading the graph, everything a run would refuse later is
refused here: the output folder (set, and inside the job file's folder unless
``--out`` names it), Parquet output without pyarrow, the graph file (a readable
regular file, its header), listed sources beyond the graph's vertex count (known
from R-MAT's scale or a file's header; an edge list has no header: ``validate``
reads it through for its counts, a run checks its sources once it is loaded),
and the host memory the graph and the job's item bookkeeping need, estimated from
the parameters or the header and compared with ``[limits] max_host_memory_gib``
or what the machine has.

Graph paths are relative to the job file's folder and may leave it (an absolute
path or ``..``: datasets often live elsewhere, and reading one needs no more than
the rights of whoever runs the job). Error messages about a graph file outside the
job's folder quote none of its content; inside it, at most a short excerpt.

A job on ``backend = "cuda"`` is also checked for a GPU first
(:func:`backend_unavailable_reason`): loading the driver and counting devices takes
a fraction of a second, so such a job stops at once instead of after its graph was
built. ``auto`` falls back to the CPU backend and Ray actors find their own GPUs, so
only a local CUDA job is checked.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

import msgspec

from ..._memory import check_host_memory
from ...backends import BackendKind, DeviceSelector
from ...cuda import call, load_driver
from ...errors import ConfigurationError, ValidationError, VyreError
from ...graphs import read_graph_header
from ..graph import graph_path, memory_limit
from ..output import chunk_format_named, output_folder
from ..spec import JobSpec
from ._items import check_sources, check_workloads, total_items

#: Host bytes per item: its committed flag (resume and the producer read it).
ITEM_BYTES = 1
#: Host bytes of the process before any graph or item (interpreter, NumPy, threads).
BASE_BYTES = 256 << 20
#: Host bytes per generated R-MAT edge (its endpoints, then building the CSR graph,
#: symmetrised and deduplicated) and per vertex; measured at scales 16 to 18.
RMAT_BYTES_PER_EDGE, RMAT_BYTES_PER_VERTEX = 40, 28

GraphFileKind = Literal["edge_list", "matrix_market", "npz", "scipy_npz"]
_FILE_KINDS: dict[str, GraphFileKind] = {
    "mtx": "matrix_market",
    "npz": "npz",
    "scipy_npz": "scipy_npz",
}


class JobCheck(msgspec.Struct, frozen=True):
    """What checking a job found.

    Attributes:
        folder: The output folder, or ``None`` when none is set (a run needs ``--out``).
        num_vertices: The graph's vertex count when known without loading it.
        items: Items of the job.
        host_bytes: Estimated host memory of the run at its peak.
    """

    folder: Path | None
    num_vertices: int | None
    items: int
    host_bytes: int


def file_kind(kind: str) -> GraphFileKind:
    """The loader's name for a ``[graph] kind`` of file."""
    return _FILE_KINDS.get(kind, "edge_list")


def check_job(
    spec: JobSpec,
    job_file: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    scan_edge_list: bool = False,
) -> JobCheck:
    """Check everything a run checks before it starts work, without running it (blocking).

    Args:
        spec: The job.
        job_file: The file it came from.
        out: The output folder given on the command line, if any.
        scan_edge_list: Read an edge-list graph through (bounded memory, no graph
            built) for its vertex and edge counts, so its sources and memory are
            checked too (``vyre-async validate`` does; a run loads it instead).

    Returns:
        What was found.

    Raises:
        ConfigurationError: Naming the file, the path inside it and a fix.
    """
    file = Path(job_file)
    chunk_format_named(spec.output.format).check_available(
        f"{file}: $.output.format = {spec.output.format!r}",
        instead='set format = "jsonl" in [output].',
    )
    folder = None
    if out is not None or spec.output.dir is not None:
        folder = output_folder(file, spec.output.dir, out)
    vertices, graph_bytes, graph_text = _graph(spec, file, scan_edge_list)
    items = total_items(spec)
    need = BASE_BYTES + graph_bytes + ITEM_BYTES * items
    check_host_memory(
        need,
        f"{file}: this job ({graph_text}; {items:,} items)",
        fix="use a smaller graph or fewer sources; or, if this machine has the memory, "
        "set [limits] max_host_memory_gib.",
        limit=memory_limit(spec),
        error=ConfigurationError,
    )
    if vertices is not None:
        check_sources(spec, vertices, str(file))
    # An R-MAT graph's weights are known now; a file's once it is loaded.
    weighted = spec.graph.weights is not None if spec.graph.kind == "rmat" else None
    check_workloads(spec, str(file), num_vertices=vertices, weighted=weighted)
    return JobCheck(folder, vertices, items, need)


def _graph(spec: JobSpec, job_file: Path, scan: bool) -> tuple[int | None, int, str]:
    """``(vertices or None, estimated bytes, description)`` of the job's graph."""
    graph = spec.graph
    if graph.kind == "rmat" and graph.scale is not None:
        vertices = 1 << graph.scale
        edges = graph.edge_factor * vertices
        need = RMAT_BYTES_PER_EDGE * edges + RMAT_BYTES_PER_VERTEX * vertices
        return vertices, need, f"an R-MAT graph of {vertices:,} vertices and {edges:,} edges"
    where = graph_path(spec, job_file)
    if where is None:  # the spec's rules make this unreachable
        raise ConfigurationError(f"{job_file}: $.graph.path is missing", fix="set path.")
    path, inside = where
    if graph.kind == "table":
        # No header reader for tables: the file must be there; a run reads it whole.
        fix = "point path at the graph file (relative to the job file's folder)."
        try:
            found = path.stat()
        except OSError as exc:
            raise ConfigurationError(
                f"{job_file}: $.graph.path: {path} cannot be read ({exc.strerror})", fix=fix
            ) from None
        if not stat.S_ISREG(found.st_mode):
            raise ConfigurationError(f"{job_file}: $.graph.path: {path} is not a file", fix=fix)
        return None, found.st_size, f"the {graph.kind} graph {path} ({found.st_size:,} bytes)"
    try:
        header = read_graph_header(
            path,
            file_kind(graph.kind),
            symmetric=graph.symmetric,
            scan_edge_list=scan,
            quote_lines=inside,
        )
    except ValidationError as exc:
        raise ConfigurationError(f"{job_file}: $.graph.path: {exc.what}", fix=exc.fix) from None
    if header.num_vertices is None:
        return None, 0, f"the edge list {path} ({header.file_bytes:,} bytes)"
    return (
        header.num_vertices,
        header.nbytes or 0,
        f"the graph {path} of {header.num_vertices:,} vertices and {header.num_edges:,} edges",
    )


def backend_unavailable_reason(
    kind: BackendKind, devices: DeviceSelector, executor: str = "local"
) -> str | None:
    """Why a job on backend ``kind`` and ``devices`` cannot start here, or ``None``.

    Loads the CUDA driver and counts its devices, making no context; this blocks
    (run it in a worker thread from async code).

    Args:
        kind: The backend the job asks for.
        devices: An ordinal, ``"all"`` or a list of ordinals.
        executor: ``"local"`` or ``"ray"`` (Ray jobs are not checked here).

    Returns:
        The driver's reason (no library, no device, an ordinal beyond the count), or
        ``None`` when the job can start.
    """
    if kind != "cuda" or executor != "local":
        return None
    try:
        count = int(call(load_driver().cuDeviceGetCount))
    except VyreError as exc:
        return exc.what
    if count == 0:
        return "the CUDA driver loaded but reports 0 devices"
    wanted = [] if devices == "all" else [devices] if isinstance(devices, int) else list(devices)
    beyond = [ordinal for ordinal in wanted if ordinal >= count]
    if beyond:
        return f"device {beyond[0]} was asked for and the CUDA driver reports {count} device(s)"
    return None
