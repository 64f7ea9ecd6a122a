"""The runner in child processes: kill -9 at random moments, SIGTERM drains, resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from job_files import expected_reach, random_sources, rmat_graph, write_job

from vyre_async.jobs import ItemRecord, read_records

CHILD = Path(__file__).with_name("job_child.py")
ITEMS = 1200


def _job(folder: Path) -> Path:
    return write_job(
        folder,
        [{"kind": "reach", "sources": {"random": ITEMS, "seed": 2}}],
        batching={"max_batch": 8},
        output={"commit_items": 24, "commit_interval_s": 0.02},
    )


def _start(job: Path, out: Path, *, resume: bool, delay: float) -> subprocess.Popen[str]:
    env = {**os.environ, "VYRE_TEST_BLOCK_DELAY": str(delay), "PYTHONPATH": _pythonpath()}
    args = [sys.executable, str(CHILD), str(job), str(out)] + (["--resume"] if resume else [])
    return subprocess.Popen(  # noqa: S603 - this repository's own child script
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _pythonpath() -> str:
    root = str(Path(__file__).resolve().parents[1])
    return os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])


def _finish(job: Path, out: Path) -> dict[str, object]:
    child = _start(job, out, resume=(out / "manifest.json").exists(), delay=0.0)
    stdout, stderr = child.communicate(timeout=120)
    assert child.returncode == 0, stderr
    summary: dict[str, object] = json.loads(stdout)
    return summary


def _wait_for_a_commit(out: Path, child: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        manifest = out / "manifest.json"
        if manifest.exists() and json.loads(manifest.read_text())["chunks"]:
            return
        time.sleep(0.01)
    raise AssertionError("the child committed nothing within 60 s")


def _check_exactly_once(records: list[ItemRecord]) -> None:
    """Every item once, each equal to SciPy's reach count from its seeded source."""
    ids = [r.id for r in records]
    assert len(ids) == len(set(ids)), "a record was committed twice"
    assert sorted(ids) == list(range(ITEMS))
    graph = rmat_graph()
    sources = random_sources(ITEMS, 2, graph.num_vertices)
    reach = {s: expected_reach(graph, s) for s in set(sources)}
    for record in records:
        assert record.ok
        assert record.source == sources[record.id]
        assert record.reached == reach[sources[record.id]]


def test_kill_9_at_random_moments_then_resume_commits_every_item_exactly_once(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """SIGKILL four times at random points (any phase), resume: the uninterrupted result set."""
    job = _job(tmp_path)
    reference = tmp_path / "reference"
    child = _start(job, reference, resume=False, delay=0.005)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 0, stderr
    want = sorted(read_records(reference), key=lambda r: r.id)
    _check_exactly_once(want)

    out = tmp_path / "killed"
    for _ in range(4):
        # A kill before the first manifest leaves no job to resume: start it again then.
        child = _start(job, out, resume=(out / "manifest.json").exists(), delay=0.005)
        time.sleep(float(rng.uniform(0.2, 1.5)))  # a random kill point, not a timing check
        child.kill()
        child.communicate(timeout=60)
        records = list(read_records(out)) if (out / "manifest.json").exists() else []
        assert len({r.id for r in records}) == len(records), "duplicates after a kill"
    summary = _finish(job, out)
    assert summary["status"] == "complete"
    got = sorted(read_records(out), key=lambda r: r.id)
    assert [(r.id, r.source, r.reached) for r in got] == [(r.id, r.source, r.reached) for r in want]
    chunks = sorted((out / "chunks").glob("*.jsonl"))
    lines = [line for p in chunks for line in p.read_text().splitlines()]
    assert sorted(json.loads(line)["id"] for line in lines) == list(range(ITEMS))


def test_sigterm_drains_commits_and_exits_143_with_how_to_resume(tmp_path: Path) -> None:
    """First SIGTERM: in-flight work finishes and is committed, exit 143; resume completes."""
    job = _job(tmp_path)
    out = tmp_path / "out"
    child = _start(job, out, resume=False, delay=0.02)
    _wait_for_a_commit(out, child)
    child.send_signal(signal.SIGTERM)
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == 143, stderr
    assert "SIGTERM" in stderr
    assert "finishing in-flight work" in stderr
    summary = json.loads(stdout)
    assert summary["status"] == "interrupted"
    assert "--resume" in summary["message"]
    first = list(read_records(out))
    assert 0 < len(first) < ITEMS
    assert summary["items_committed"] == len(first)
    resumed = _finish(job, out)
    assert resumed["items_skipped"] == len(first)
    _check_exactly_once(list(read_records(out)))


def test_a_second_signal_exits_at_once_and_leaves_committed_output_intact(tmp_path: Path) -> None:
    """SIGINT twice: exit 130 without waiting for the drain; what was committed reads back."""
    job = _job(tmp_path)
    out = tmp_path / "out"
    child = _start(job, out, resume=False, delay=2.0)  # blocks far slower than the test
    _wait_for_a_commit(out, child)
    child.send_signal(signal.SIGINT)
    time.sleep(0.2)  # let the first signal be handled; not a timing check
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=20)
    assert child.returncode == 130, stderr
    assert "exiting now" in stderr
    first = list(read_records(out))
    assert len({r.id for r in first}) == len(first)
    _finish(job, out)
    _check_exactly_once(list(read_records(out)))
