"""`vyre_async.jobs.run(path)`: a job file run in one synchronous call."""

from __future__ import annotations

from pathlib import Path

import pytest
from job_files import expected_reach, rmat_graph, write_job

import vyre_async as va
from vyre_async.jobs import read_records

SOURCES = [0, 3, 9, 27, 81]


def test_run_returns_the_summary_of_a_complete_job(tmp_path: Path) -> None:
    """run(job): status complete, every item committed, SciPy's reach counts on disk."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": SOURCES}])
    summary = va.jobs.run(job)
    assert isinstance(summary, va.jobs.JobSummary)
    assert (summary.status, summary.exit_code) == ("complete", 0)
    assert (summary.items_total, summary.items_committed, summary.items_failed) == (5, 5, 0)
    assert summary.output == str((tmp_path / "out").resolve())
    graph = rmat_graph()
    reached = {r.source: r.reached for r in read_records(tmp_path / "out")}
    assert reached == {s: expected_reach(graph, s) for s in SOURCES}


def test_run_writes_to_out_and_resume_continues_there(tmp_path: Path) -> None:
    """out= replaces [output] dir; resume=True continues that folder's job (all 5 were
    committed, so none runs again)."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": SOURCES}])
    folder = tmp_path / "elsewhere"
    first = va.jobs.run(job, out=folder)
    assert first.output == str(folder.resolve())
    assert not (tmp_path / "out").exists()
    again = va.jobs.run(job, out=folder, resume=True)
    assert (again.status, again.items_this_run, again.items_skipped) == ("complete", 0, 5)
    assert sorted(r.source for r in read_records(folder)) == SOURCES


def test_run_draws_progress_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing on standard error by default; progress=True draws the bar there."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": SOURCES}])
    va.jobs.run(job, out=tmp_path / "a")
    assert capsys.readouterr().err == ""
    va.jobs.run(job, out=tmp_path / "b", progress=True)
    assert "5/5" in capsys.readouterr().err


def test_run_refuses_a_bad_job_file_with_its_path_and_a_fix(tmp_path: Path) -> None:
    """A wrong field: ConfigurationError naming $.workload[0].sources, no folder made."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": "all"}])
    with pytest.raises(va.ConfigurationError, match=r"\$\.workload\[0\]\.sources") as info:
        va.jobs.run(job)
    assert "Fix:" in str(info.value)
    assert not (tmp_path / "out").exists()


async def test_run_inside_an_event_loop_says_to_await_the_runner(tmp_path: Path) -> None:
    """Called where an event loop runs (asyncio or trio): LifecycleError whose fix names
    JobRunner and a worker thread; nothing is read or made."""
    job = tmp_path / "job.json"  # never read: the loop is found first
    with pytest.raises(va.LifecycleError, match="starts its own event loop") as info:
        va.jobs.run(job)
    assert "Fix: in async code, await JobRunner(load_job(path), job_file=path).run()" in str(
        info.value
    )
    assert "anyio.to_thread.run_sync" in str(info.value)
