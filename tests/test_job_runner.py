"""The batch runner on the CPU backend: results against SciPy, faults, folders, resume."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import numpy as np
import pytest
from graph_references import pagerank_float64, scipy_levels
from job_files import (
    committed,
    expected_reach,
    item_array,
    job_file,
    random_sources,
    read_text,
    rmat_graph,
)

import vyre_async as va
from vyre_async.jobs import (
    BlockResult,
    JobRunner,
    WorkloadSection,
    execute_block,
    load_job,
)
from vyre_async.sessions import ResidentGraphSession


async def _runner(job: Path, **options: object) -> JobRunner:
    spec = await anyio.to_thread.run_sync(load_job, job)
    return JobRunner(spec, job_file=job, **options)  # type: ignore[arg-type]


async def test_counts_job_commits_one_record_per_item_equal_to_scipy(tmp_path: Path) -> None:
    """Every random source's reach count equals SciPy's, each id exactly once."""
    job = await job_file(tmp_path, [{"kind": "bfs", "sources": {"random": 150, "seed": 4}}])
    summary = await (await _runner(job)).run()
    graph = rmat_graph()
    sources = random_sources(150, 4, graph.num_vertices)
    records = await committed(tmp_path / "out")
    assert summary.status == "complete"
    assert summary.exit_code == 0
    assert (summary.items_total, summary.items_committed, summary.items_this_run) == (150, 150, 150)
    assert sorted(r.id for r in records) == list(range(150))
    for record in records:
        assert record.ok
        assert (record.kind, record.workload, record.attempts) == ("bfs", 0, 1)
        assert record.batch == (16 if record.id < 144 else 6)  # blocks of max_batch=16
        assert record.array is None
        assert record.source == sources[record.id]
        assert record.reached == expected_reach(graph, sources[record.id])
    chunks = sorted([p async for p in anyio.Path(tmp_path / "out" / "chunks").iterdir()])
    lines = [line for path in chunks for line in (await path.read_text()).splitlines()]
    assert sorted(json.loads(line)["id"] for line in lines) == list(range(150))
    saved = json.loads(await read_text(tmp_path / "out" / "summary.json"))
    assert saved["items_committed"] == 150
    assert saved["telemetry"]["backend"] == "cpu"
    log_text = await read_text(tmp_path / "out" / "log.jsonl")
    log = [json.loads(line) for line in log_text.splitlines()]
    assert {"job_started", "job_finished"} <= {e["event"] for e in log}


async def test_levels_khop_reach_and_pagerank_items_write_arrays_equal_to_references(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """Full levels, k-hop vertex ids, reach counts and PageRank ranks match SciPy/float64."""
    graph = rmat_graph()
    listed = [int(s) for s in rng.integers(0, graph.num_vertices, 20)]
    job = await job_file(
        tmp_path,
        [
            {"kind": "bfs", "sources": listed, "readback": "levels"},
            {"kind": "khop", "k": 2, "sources": listed[:7], "readback": "levels"},
            {"kind": "khop", "k": 1, "sources": listed[:5]},
            {"kind": "reach", "sources": listed[:3]},
            {"kind": "pagerank", "damping": 0.85, "tol": 1e-9, "max_iter": 500},
        ],
    )
    summary = await (await _runner(job)).run()
    assert summary.status == "complete"
    out = tmp_path / "out"
    records = sorted(await committed(out), key=lambda r: r.id)
    assert [r.id for r in records] == list(range(20 + 7 + 5 + 3 + 1))
    for record in records:
        if record.kind == "pagerank":
            assert record.array is not None
            ranks = await item_array(out, record)
            want = pagerank_float64(graph, 0.85)
            np.testing.assert_allclose(ranks, want, rtol=1e-4, atol=1e-7)
            assert record.top_vertex == int(np.argmax(ranks))
            continue
        assert record.source is not None
        dist = scipy_levels(graph, record.source)
        if record.workload == 0:
            assert record.array is not None
            np.testing.assert_array_equal(await item_array(out, record), dist)
            assert record.max_level == int(dist.max())
        elif record.workload == 1:
            assert record.array is not None
            want = np.flatnonzero((dist >= 0) & (dist <= 2))
            np.testing.assert_array_equal(await item_array(out, record), want)
        elif record.workload == 2:
            assert record.reached == expected_reach(graph, record.source, k=1)
        else:
            assert record.reached == expected_reach(graph, record.source)


def _faulty(bad: int, slow: int, oom: int, calls: dict[str, int]) -> va.jobs.BlockExecutor:
    async def execute(
        session: ResidentGraphSession, workload: WorkloadSection, sources: np.ndarray
    ) -> BlockResult:
        calls["blocks"] = calls.get("blocks", 0) + 1
        if bad in sources:
            raise va.ValidationError(f"item with source {bad} is bad", fix="none (a test).")
        if oom in sources:
            calls["oom"] = calls.get("oom", 0) + 1
            raise va.OutOfMemoryError("pretend the device is full", fix="none (a test).")
        if slow in sources:
            await anyio.sleep_forever()
        return await execute_block(session, workload, sources)

    return execute


async def test_failing_timing_out_and_out_of_memory_items_are_recorded_and_the_rest_complete(
    tmp_path: Path,
) -> None:
    """Each fault fails only its item, with its reason; retryable ones are retried."""
    sources = list(range(40))
    job = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": sources}],
        limits={"item_timeout_s": 0.2, "retries": 1, "max_failed_items": 3},
    )
    calls: dict[str, int] = {}
    summary = await (await _runner(job, execute=_faulty(3, 17, 30, calls))).run()
    assert summary.status == "complete"
    assert summary.items_failed == 3
    graph = rmat_graph()
    records = {r.id: r for r in await committed(tmp_path / "out")}
    assert sorted(records) == sources
    failed = {i: r for i, r in records.items() if not r.ok}
    assert sorted(failed) == [3, 17, 30]
    assert failed[3].error_code == va.ValidationError.code
    assert failed[3].attempts == 1, "a validation error is not retried"
    assert failed[17].error is not None
    assert "timed out" in failed[17].error
    assert failed[17].attempts == 2
    assert failed[30].error_code == va.OutOfMemoryError.code
    assert failed[30].attempts == 2
    for i, record in records.items():
        if i not in failed:
            assert record.reached == expected_reach(graph, i)


async def test_a_job_stops_with_exit_1_once_more_items_fail_than_allowed(tmp_path: Path) -> None:
    """max_failed_items=0 and one bad item: the job stops as failed, what ran is committed."""
    job = await job_file(tmp_path, [{"kind": "reach", "sources": list(range(64))}])
    summary = await (await _runner(job, execute=_faulty(5, -1, -1, {}))).run()
    assert summary.status == "failed"
    assert summary.exit_code == 1
    assert "max_failed_items=0" in summary.message
    records = await committed(tmp_path / "out")
    assert len({r.id for r in records}) == len(records)
    assert 5 in {r.id for r in records if not r.ok}


async def test_a_lost_device_is_reopened_and_its_blocks_run_again(tmp_path: Path) -> None:
    """DeviceLostError mid-job: the backend is reopened, every item committed once."""
    lost = {"left": 2}

    async def execute(
        session: ResidentGraphSession, workload: WorkloadSection, sources: np.ndarray
    ) -> BlockResult:
        if 40 in sources and lost["left"]:
            lost["left"] -= 1
            raise va.DeviceLostError("pretend the GPU fell off the bus", fix="none (a test).")
        return await execute_block(session, workload, sources)

    job = await job_file(tmp_path, [{"kind": "reach", "sources": list(range(100))}])
    summary = await (await _runner(job, execute=execute)).run()
    assert summary.status == "complete"
    assert summary.reopens == 2
    graph = rmat_graph()
    records = await committed(tmp_path / "out")
    assert sorted(r.id for r in records) == list(range(100))
    assert all(r.ok and r.reached == expected_reach(graph, r.id) for r in records)


async def test_a_device_lost_more_often_than_allowed_fails_the_job(tmp_path: Path) -> None:
    """After limits.max_reopens reopens the job stops as failed, naming the limit."""

    async def execute(
        session: ResidentGraphSession, workload: WorkloadSection, sources: np.ndarray
    ) -> BlockResult:
        raise va.DeviceLostError("pretend the GPU is gone", fix="none (a test).")

    job = await job_file(
        tmp_path, [{"kind": "reach", "sources": [1, 2]}], limits={"max_reopens": 1}
    )
    summary = await (await _runner(job, execute=execute)).run()
    assert summary.status == "failed"
    assert summary.reopens == 1
    assert "max_reopens=1" in summary.message
    assert await committed(tmp_path / "out") == []


async def test_resume_skips_committed_items_and_never_duplicates_a_record(tmp_path: Path) -> None:
    """A run cancelled part way, then resumed: every item exactly once, equal to SciPy."""
    job = await job_file(tmp_path, [{"kind": "bfs", "sources": {"random": 300, "seed": 9}}])

    scope = anyio.CancelScope()
    calls = {"blocks": 0}

    async def cut_off(
        session: ResidentGraphSession, workload: WorkloadSection, sources: np.ndarray
    ) -> BlockResult:
        # Four workers: the ninth call means at least five blocks finished.
        calls["blocks"] += 1
        if calls["blocks"] == 9:
            scope.cancel()
        return await execute_block(session, workload, sources)

    with scope:
        await (await _runner(job, execute=cut_off)).run()
    first = await committed(tmp_path / "out")
    assert 0 < len(first) < 300, "the first run should have been cut off part way"
    summary = await (await _runner(job, resume=True)).run()
    assert summary.items_skipped == len(first)
    assert summary.items_this_run == 300 - len(first)
    records = await committed(tmp_path / "out")
    assert sorted(r.id for r in records) == list(range(300))
    graph = rmat_graph()
    sources = random_sources(300, 9, graph.num_vertices)
    assert all(r.reached == expected_reach(graph, sources[r.id]) for r in records)
    again = await (await _runner(job, resume=True)).run()
    assert (again.status, again.items_this_run) == ("complete", 0)


async def test_output_folders_that_are_not_this_jobs_are_refused(tmp_path: Path) -> None:
    """Outside the job's folder, absolute, foreign, or holding results without --resume."""
    for where in ("../elsewhere", str(tmp_path / "absolute"), "."):
        job = await job_file(tmp_path, [{"kind": "reach", "sources": [0]}], output={"dir": where})
        with pytest.raises(va.ConfigurationError, match=r"\$\.output\.dir.*Fix:"):
            await (await _runner(job)).run()
    assert not await anyio.Path(tmp_path.parent / "elsewhere").exists()
    job = await job_file(tmp_path, [{"kind": "reach", "sources": [0]}])
    foreign = tmp_path / "mine"
    await anyio.to_thread.run_sync(foreign.mkdir)
    await anyio.to_thread.run_sync((foreign / "notes.txt").write_text, "keep me")
    with pytest.raises(va.ConfigurationError, match=r"notes\.txt.*did not write"):
        await (await _runner(job, out=foreign)).run()
    assert await read_text(foreign / "notes.txt") == "keep me"
    await (await _runner(job)).run()
    with pytest.raises(va.ConfigurationError, match="--resume"):
        await (await _runner(job)).run()
    other = await job_file(tmp_path, [{"kind": "reach", "sources": [1]}])
    with pytest.raises(va.ConfigurationError, match="another graph or other workloads"):
        await (await _runner(other, resume=True)).run()


async def test_listed_sources_outside_the_graph_are_refused_naming_the_path(
    tmp_path: Path,
) -> None:
    """A listed source beyond the graph: ConfigurationError naming $.workload[0].sources[1]."""
    job = await job_file(tmp_path, [{"kind": "bfs", "sources": [0, 10**6]}])
    with pytest.raises(va.ConfigurationError, match=r"\$\.workload\[0\]\.sources\[1\].*Fix:"):
        await (await _runner(job)).run()


async def test_a_runner_runs_once(tmp_path: Path) -> None:
    """A second run() of the same runner raises LifecycleError."""
    job = await job_file(tmp_path, [{"kind": "reach", "sources": [0]}])
    runner = await _runner(job)
    await runner.run()
    with pytest.raises(va.LifecycleError, match="Fix:"):
        await runner.run()


async def test_a_job_on_several_devices_commits_the_same_records_as_on_one(
    tmp_path: Path,
) -> None:
    """devices=[0, 1] (two CPU devices): the same result set as one device, each id once."""
    job = await job_file(
        tmp_path, [{"kind": "bfs", "sources": {"random": 200, "seed": 6}}], job={"devices": [0, 1]}
    )
    summary = await (await _runner(job)).run()
    assert summary.status == "complete"
    assert " + " in summary.device
    one = await (await _runner(job, out=tmp_path / "one", devices=0)).run()
    assert one.status == "complete"
    many = sorted((r.id, r.source, r.reached) for r in await committed(tmp_path / "out"))
    single = sorted((r.id, r.source, r.reached) for r in await committed(tmp_path / "one"))
    assert many == single
    assert [i for i, _, _ in many] == list(range(200))
