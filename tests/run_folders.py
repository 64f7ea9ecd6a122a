"""Output folders for the tests of reading a run (show, export): made once per module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from job_files import write_job

import vyre_async as va
from vyre_async.jobs import BlockResult, JobRunner, WorkloadSection, execute_block, load_job
from vyre_async.sessions import ResidentGraphSession

#: Every kind of item: levels of 30 BFS sources, 2-hop ids of 10, 40 reach counts (one
#: failed: source 7) and one PageRank: 81 items, 41 of them with an array.
MIXED = [
    {"kind": "bfs", "readback": "levels", "sources": {"random": 30, "seed": 3}},
    {"kind": "khop", "k": 2, "readback": "levels", "sources": {"random": 10, "seed": 5}},
    {"kind": "reach", "sources": list(range(40))},
    {"kind": "pagerank"},
]
FAILING_SOURCE = 7


async def _fail_one_source(
    session: ResidentGraphSession, workload: WorkloadSection, sources: np.ndarray
) -> BlockResult:
    if workload.kind == "reach" and FAILING_SOURCE in sources:
        raise va.ValidationError(f"source {FAILING_SOURCE} is refused", fix="none (a test).")
    return await execute_block(session, workload, sources)


def run_mixed(
    folder: Path, tmp_path_factory: pytest.TempPathFactory, chunk_format: str = "jsonl"
) -> Path:
    """MIXED run to completion in ``folder`` (commits of 8 items): its output folder."""
    output: dict[str, Any] = {"commit_items": 8, "commit_interval_s": 60.0}
    if chunk_format != "jsonl":
        output["format"] = chunk_format
    job = write_job(folder, MIXED, output=output, limits={"max_failed_items": 1, "retries": 0})
    with pytest.MonkeyPatch.context() as patch:  # as the autouse fixture does per test
        patch.setenv("VYRE_ASYNC_GRAPH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "gc"))
        runner = JobRunner(load_job(job), job_file=job, execute=_fail_one_source)
        summary = anyio.run(runner.run)
    assert summary.status == "complete", summary.message
    return folder / "out"


def manifest(out: Path) -> dict[str, Any]:
    """The folder's manifest, as plain JSON."""
    data: dict[str, Any] = json.loads((out / "manifest.json").read_text())
    return data


def chunk_lines(out: Path) -> list[dict[str, Any]]:
    """The committed records of a JSON-lines folder in commit order, read with the
    standard json module from the chunks the manifest lists (a reference that shares
    no code with vyre_async's readers)."""
    return [
        json.loads(line)
        for chunk in manifest(out)["chunks"]
        for line in (out / "chunks" / chunk["name"]).read_text().splitlines()
    ]
