"""A job's graph: generated or loaded as its file says, and what identifies it.

The driver loads it once (see :mod:`._graph_prep`); Ray actors get it through the
object store and never call :func:`load_job_graph`, which counts its calls so that a
test can check exactly that.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import msgspec

from ..._memory import GIB
from ...errors import ConfigurationError
from ...graphs import (
    CsrGraph,
    RmatParams,
    load_edge_list,
    load_matrix_market,
    load_npz,
    rmat,
)
from ..spec import GraphSection, JobSpec
from ._graph_digest import graph_file_sha256
from ._graph_files import load_scipy_npz_graph, load_table_graph

_loads = 0
_loads_lock = threading.Lock()


def graph_loads() -> int:
    """Graphs :func:`load_job_graph` (or :func:`load_section_graph`) loaded or
    generated in this process so far."""
    return _loads


def job_fingerprint(spec: JobSpec, job_file: Path) -> str:
    """Hash of what determines a job's results: its graph (the file's content, for a
    graph read from a file) and workloads (blocking).

    The graph file's SHA-256 comes from the graph cache while the file's size and
    times are those it was hashed at; otherwise the file is read once more (see
    :mod:`._graph_digest`).

    Raises:
        ConfigurationError: The graph file cannot be read.
    """
    digest = hashlib.sha256(msgspec.json.encode([spec.graph, spec.workload]))
    if spec.graph.kind == "rmat":  # another generator draws another graph from one seed
        digest.update(f"rmat-generator:{RmatParams.generator_version}".encode())
    if spec.graph.path is not None:
        digest.update(f"graph-sha256:{_file_sha256(spec, job_file)}".encode())
    return digest.hexdigest()


def graph_fingerprint(spec: JobSpec, job_file: Path) -> str:
    """Hash of what determines a job's graph: its ``[graph]`` section, the R-MAT
    generator's version, and for a graph read from a file the file's content.

    Jobs of one graph share it whatever their workloads, so a cluster can keep one
    copy of the graph for all of them. The file's SHA-256 comes from the graph cache
    as for :func:`job_fingerprint`.

    Raises:
        ConfigurationError: The graph file cannot be read.
    """
    digest = hashlib.sha256(b"graph:" + msgspec.json.encode(spec.graph))
    if spec.graph.kind == "rmat":
        digest.update(f"rmat-generator:{RmatParams.generator_version}".encode())
    if spec.graph.path is not None:
        digest.update(f"graph-sha256:{_file_sha256(spec, job_file)}".encode())
    return digest.hexdigest()


def _file_sha256(spec: JobSpec, job_file: Path) -> str:
    path = job_file.parent / str(spec.graph.path)
    try:
        return graph_file_sha256(path)
    except OSError as exc:
        raise ConfigurationError(
            f"{job_file}: $.graph.path: {path} cannot be read ({exc.strerror or exc})",
            fix="check the path; it is relative to the job file's folder.",
        ) from None


def graph_path(spec: JobSpec, job_file: Path) -> tuple[Path, bool] | None:
    """The graph file (relative paths start at the job file's folder) and whether it
    lies inside that folder; ``None`` for a generated graph."""
    return section_path(spec.graph, job_file)


def section_path(section: GraphSection, config_file: Path) -> tuple[Path, bool] | None:
    """A ``[graph]`` section's file (relative paths start at the config file's folder)
    and whether it lies inside that folder; ``None`` for a generated graph."""
    if section.path is None:
        return None
    base = config_file.resolve().parent
    path = base / section.path
    try:
        inside = path.resolve().is_relative_to(base)
    except (OSError, RuntimeError):  # a symlink loop: not readable anyway
        inside = False
    return path, inside


def memory_limit(spec: JobSpec) -> int | None:
    """``[limits] max_host_memory_gib`` in bytes, or ``None`` (what the machine has)."""
    gib = spec.limits.max_host_memory_gib
    return None if gib is None else int(gib * GIB)


def load_job_graph(spec: JobSpec, job_file: Path) -> CsrGraph:
    """The job's graph: generated, or read from the file its path names (blocking)."""
    return load_section_graph(spec.graph, job_file, f"{job_file}: $.graph", memory_limit(spec))


def load_section_graph(
    graph: GraphSection, config_file: Path, where: str, limit: int | None
) -> CsrGraph:
    """A ``[graph]`` section's graph: generated, or read from the file its path names,
    relative to ``config_file``'s folder (blocking).

    Args:
        graph: The section.
        config_file: The file that holds it.
        where: The section's place, for messages (``"job.toml: $.graph"``).
        limit: Host bytes the graph may need (``None``: what the machine has).
    """
    global _loads
    with _loads_lock:  # it runs in worker threads
        _loads += 1
    if graph.kind == "rmat":
        if graph.scale is None:  # the spec's rules make this unreachable
            raise ConfigurationError(f"{where}.scale is missing", fix="set scale.")
        return rmat(graph.scale, graph.edge_factor, graph.seed, weights=graph.weights)
    found = section_path(graph, config_file)
    if found is None:
        raise ConfigurationError(f"{where}.path is missing", fix="set path.")
    # Files outside the config's folder are read, but errors quote none of their lines.
    path, inside = found
    if graph.kind == "mtx":
        return load_matrix_market(
            path, symmetric=graph.symmetric, memory_limit=limit, quote_lines=inside
        )
    if graph.kind == "npz":
        return load_npz(path, memory_limit=limit, quote_lines=inside)
    if graph.kind == "scipy_npz":
        return load_scipy_npz_graph(path, graph, where, memory_limit=limit, quote_lines=inside)
    if graph.kind == "table":
        return load_table_graph(path, graph, where)
    return load_edge_list(path, symmetric=graph.symmetric, memory_limit=limit, quote_lines=inside)
