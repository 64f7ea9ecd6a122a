"""A job whose graph does not fit one device's budget runs split over its devices and
commits the records of the same job on one device."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from job_files import committed, job_file, rmat_graph
from partition_shapes import split_limit

from vyre_async.backends import CpuBackend
from vyre_async.jobs import JobRunner, load_job
from vyre_async.testing import capture_logs


async def _run(job: Path, out: Path, devices: int | list[int]) -> str:
    """Run ``job`` into ``out`` on the CPU devices ``devices``; its status."""
    spec = await anyio.to_thread.run_sync(load_job, job)
    summary = await JobRunner(spec, job_file=job, out=out, devices=devices).run()
    return summary.status


def _rows(records: Sequence[Any]) -> list[tuple[object, ...]]:
    """Each record's id, kind, source and result columns, by id."""
    return sorted(
        (r.id, r.kind, r.source, getattr(r, "reached", None), getattr(r, "max_level", None))
        for r in records
    )


async def test_a_job_over_one_devices_budget_runs_split_with_the_same_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two CPU devices whose memory holds a part but not a copy: the job's graph is split
    (the log says so) and its BFS, k-hop and reach records equal one device's."""
    graph = rmat_graph()
    budget = split_limit(graph, 2)

    async def scarce(self: CpuBackend) -> int:
        return 2 * budget  # a group of two CPU backends shares it: `budget` each

    job = await job_file(
        tmp_path,
        [
            {"kind": "bfs", "sources": {"random": 100, "seed": 6}},
            {"kind": "khop", "k": 2, "sources": {"random": 40, "seed": 7}},
            {"kind": "reach", "sources": {"random": 40, "seed": 8}},
        ],
    )
    assert await _run(job, tmp_path / "one", 0) == "complete"
    monkeypatch.setattr(CpuBackend, "free_memory", scarce)
    with capture_logs() as logs:
        assert await _run(job, tmp_path / "split", [0, 1]) == "complete"
    placed = [e for e in logs if e["event"] == "graph_placed"]
    assert [e["placement"] for e in placed] == ["partition"]
    split = _rows(await committed(tmp_path / "split"))
    assert split == _rows(await committed(tmp_path / "one"))
    assert len(split) == 180
