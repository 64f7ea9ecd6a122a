"""Job files for the runner's tests: written as JSON, with SciPy's answers beside them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from graph_references import scipy_levels

import vyre_async as va

#: A small R-MAT graph; ``rmat_graph()`` regenerates it exactly for the references.
RMAT = {"kind": "rmat", "scale": 8, "edge_factor": 8, "seed": 5}


def rmat_graph() -> va.graphs.CsrGraph:
    """The graph RMAT describes."""
    return va.graphs.rmat(RMAT["scale"], RMAT["edge_factor"], RMAT["seed"])


def write_job(folder: Path, workload: list[dict[str, Any]], **sections: Any) -> Path:
    """A job file ``folder/job.json`` over RMAT with output ``out/``; sections override."""
    data: dict[str, Any] = {
        "job": {"name": "test-job", "backend": "cpu"},
        "graph": RMAT,
        "workload": workload,
        "output": {"dir": "out", "commit_items": 16, "commit_interval_s": 0.05},
        "batching": {"max_batch": 16},
        "limits": {"retry_backoff_s": 0.001},
    }
    for name, value in sections.items():
        data[name] = {**data.get(name, {}), **value}
    path = folder / "job.json"
    path.write_text(json.dumps(data))
    return path


def expected_reach(graph: va.graphs.CsrGraph, source: int, k: int | None = None) -> int:
    """SciPy's count of vertices within ``k`` hops (all reachable ones for ``None``)."""
    levels = scipy_levels(graph, source)
    if k is not None:
        levels = np.where(levels <= k, levels, -1)
    return int((levels >= 0).sum())


def random_sources(count: int, seed: int, num_vertices: int) -> list[int]:
    """The sources a job's ``{random = count, seed = seed}`` draws (count <= 65536)."""
    return np.random.default_rng(seed).integers(0, num_vertices, count).tolist()


async def job_file(folder: Path, workload: list[dict[str, Any]], **sections: Any) -> Path:
    """:func:`write_job` off the event loop (async tests must not block it)."""
    return await anyio.to_thread.run_sync(lambda: write_job(folder, workload, **sections))


async def committed(folder: Path) -> list[va.jobs.ItemRecord]:
    """The committed records of an output folder, read off the event loop."""
    return await anyio.to_thread.run_sync(lambda: list(va.jobs.read_records(folder)))


async def item_array(folder: Path, record: va.jobs.ItemRecord) -> np.ndarray:
    """A committed record's full-result array, read off the event loop."""
    assert record.array is not None, f"item {record.id} has no array"
    array = record.array
    return await anyio.to_thread.run_sync(lambda: va.jobs.read_item_array(folder, array, record.id))


async def read_text(path: Path) -> str:
    """A text file, read off the event loop."""
    return await anyio.to_thread.run_sync(path.read_text)
