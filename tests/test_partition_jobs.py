"""A job whose graph does not fit one device's budget runs split over its devices,
commits the records of the same job on one device, and resumes after kill -9."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from job_files import committed, job_file, rmat_graph, write_job
from partition_shapes import split_limit

from vyre_async.backends import CpuBackend
from vyre_async.errors import OutOfMemoryError
from vyre_async.jobs import JobRunner, load_job, read_records
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


async def test_a_jobs_device_memory_limit_splits_its_graph_or_refuses_it(tmp_path: Path) -> None:
    """[limits] max_device_memory_gib is each device's budget: below a copy's size the
    job's graph is split (the records equal one device's); below a part's, refused."""
    graph = rmat_graph()
    gib = split_limit(graph, 2) / (1 << 30)
    workload = [{"kind": "bfs", "sources": {"random": 60, "seed": 9}}]
    for name in "abc":
        await anyio.Path(tmp_path / name).mkdir()
    job = await job_file(tmp_path / "a", workload)
    assert await _run(job, tmp_path / "one", 0) == "complete"
    limited = await job_file(tmp_path / "b", workload, limits={"max_device_memory_gib": gib})
    with capture_logs() as logs:
        assert await _run(limited, tmp_path / "split", [0, 1]) == "complete"
    placed = [e for e in logs if e["event"] == "graph_placed"]
    assert [e["placement"] for e in placed] == ["partition"]
    assert _rows(await committed(tmp_path / "split")) == _rows(await committed(tmp_path / "one"))
    tiny = await job_file(tmp_path / "c", workload, limits={"max_device_memory_gib": gib / 8})
    with pytest.raises(OutOfMemoryError, match=r"Fix: "):
        await _run(tiny, tmp_path / "refused", [0, 1])


CHILD = Path(__file__).with_name("job_child.py")
KILL_ITEMS = 600


def _start(job: Path, out: Path, *, resume: bool, **env: str) -> subprocess.Popen[str]:
    """job_child.py on ``job`` into ``out``, with these environment variables."""
    root = str(Path(__file__).resolve().parents[1])
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
        **env,
    }
    args = [sys.executable, str(CHILD), str(job), str(out)] + (["--resume"] if resume else [])
    return subprocess.Popen(  # noqa: S603 - this repository's own child script
        args, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for_a_commit(out: Path, child: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        manifest = out / "manifest.json"
        if manifest.exists() and json.loads(manifest.read_text())["chunks"]:
            return
        time.sleep(0.01)
    raise AssertionError("the child committed nothing within 60 s")


def test_a_split_job_killed_with_9_resumes_to_a_replicated_runs_records(
    tmp_path: Path,
) -> None:
    """A job split over two CPU devices, SIGKILLed after its first commit, then resumed
    (split again): every item once, the records of the same job replicated."""
    job = write_job(
        tmp_path,
        [{"kind": "reach", "sources": {"random": KILL_ITEMS, "seed": 3}}],
        job={"devices": [0, 1]},
        output={"commit_items": 24, "commit_interval_s": 0.02},
    )
    replicated = _start(job, tmp_path / "replicated", resume=False)
    _, stderr = replicated.communicate(timeout=120)
    assert replicated.returncode == 0, stderr
    scarce = {
        "VYRE_TEST_CPU_FREE_BYTES": str(2 * split_limit(rmat_graph(), 2)),
        "VYRE_TEST_BLOCK_DELAY": "0.01",
    }
    out = tmp_path / "split"
    child = _start(job, out, resume=False, **scarce)
    _wait_for_a_commit(out, child)
    child.kill()
    child.communicate(timeout=60)
    resumed = _start(job, out, resume=True, **scarce)
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    assert json.loads(stdout.splitlines()[-1])["status"] == "complete"
    assert "graph_placed" in stderr
    assert "partition" in stderr
    got = sorted((r.id, r.source, r.reached) for r in read_records(out))
    want = sorted((r.id, r.source, r.reached) for r in read_records(tmp_path / "replicated"))
    assert got == want
    assert [i for i, _, _ in got] == list(range(KILL_ITEMS))
