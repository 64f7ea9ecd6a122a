"""A job's graph: generated or loaded as its file says, and what identifies it.

The runner loads it once in the driver; Ray actors load it again the same way.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from ..errors import ConfigurationError
from ..graphs import CsrGraph, load_edge_list, load_matrix_market, load_npz, rmat
from ._preflight import graph_path, memory_limit
from ._spec import JobSpec


def job_fingerprint(spec: JobSpec, job_file: Path) -> str:
    """Hash of what determines a job's results: its graph (and file) and workloads."""
    digest = hashlib.sha256(msgspec.json.encode([spec.graph, spec.workload]))
    if spec.graph.path is not None:
        path = job_file.parent / spec.graph.path
        try:
            stat = path.stat()
        except OSError as exc:
            raise ConfigurationError(
                f"{job_file}: $.graph.path: {path} cannot be read ({exc.strerror or exc})",
                fix="check the path; it is relative to the job file's folder.",
            ) from None
        digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


def load_job_graph(spec: JobSpec, job_file: Path) -> CsrGraph:
    """The job's graph: generated, or read from the file its path names (blocking)."""
    graph = spec.graph
    if graph.kind == "rmat":
        if graph.scale is None:  # the spec's rules make this unreachable
            raise ConfigurationError(f"{job_file}: $.graph.scale is missing", fix="set scale.")
        return rmat(graph.scale, graph.edge_factor, graph.seed)
    where = graph_path(spec, job_file)
    if where is None:
        raise ConfigurationError(f"{job_file}: $.graph.path is missing", fix="set path.")
    # Files outside the job's folder are read, but errors quote none of their lines.
    path, inside = where
    limit = memory_limit(spec)
    if graph.kind == "mtx":
        return load_matrix_market(
            path, symmetric=graph.symmetric, memory_limit=limit, quote_lines=inside
        )
    if graph.kind == "npz":
        return load_npz(path, memory_limit=limit, quote_lines=inside)
    return load_edge_list(path, symmetric=graph.symmetric, memory_limit=limit, quote_lines=inside)
