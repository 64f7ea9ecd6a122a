"""Jobs on Ray actors: a local Ray instance, two logical GPUs, CPU-backend actors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest
import ray
from job_files import committed, expected_reach, item_array, job_file, random_sources, rmat_graph

import vyre_async as va
from vyre_async.graphs import save_npz
from vyre_async.jobs import JobRunner, load_job
from vyre_async.jobs.graph import graph_loads
from vyre_async.testing import capture_logs


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    """One local Ray instance for the module: 2 CPUs, 2 logical GPUs."""
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()


@pytest.fixture
def anyio_backend() -> str:
    """Ray's awaitables are asyncio futures: these tests run on asyncio."""
    return "asyncio"


def _actor_names(job: str) -> list[str]:
    """Names of the live actors of runs of ``job`` (``vyre-<job>-<run id>-<i>``)."""
    return sorted(n for n in ray.util.list_named_actors() if n.startswith(f"vyre-{job}-"))


async def _folder(path: Path) -> Path:
    await anyio.Path(path).mkdir()
    return path


async def _run(job: Path, out: Path | None = None) -> va.jobs.JobSummary:
    spec = await anyio.to_thread.run_sync(load_job, job)
    return await JobRunner(spec, job_file=job, out=out).run()


@pytest.mark.usefixtures("ray_instance")
async def test_a_ray_job_commits_the_same_result_set_as_a_local_one(tmp_path: Path) -> None:
    """executor='ray' (two actors, one logical GPU each) = the local run, item for item."""
    workload = [
        {"kind": "bfs", "sources": {"random": 400, "seed": 8}},
        {"kind": "khop", "k": 2, "sources": [0, 1, 2, 3], "readback": "levels"},
    ]
    ray_job = await job_file(tmp_path, workload, job={"executor": "ray"})
    summary = await _run(ray_job)
    assert summary.status == "complete"
    assert summary.backend == "ray/cpu"
    assert summary.batches is not None
    assert len(summary.batches["blocks_per_actor"]) == 2
    local_job = tmp_path / "local"
    await anyio.Path(local_job).mkdir()
    local_file = await job_file(local_job, workload)
    await _run(local_file)
    got = await committed(tmp_path / "out")
    want = await committed(local_job / "out")
    key = lambda r: (r.id, r.source, r.reached, r.max_level, r.array is None)  # noqa: E731
    assert sorted(map(key, got)) == sorted(map(key, want))
    local = {r.id: r for r in want}
    for record in got:
        if record.array is not None:
            mine = await item_array(tmp_path / "out", record)
            theirs = await item_array(local_job / "out", local[record.id])
            assert np.array_equal(mine, theirs)
    graph = rmat_graph()
    sources = random_sources(400, 8, graph.num_vertices)
    for record in got:
        if record.workload == 0:
            assert record.reached == expected_reach(graph, sources[record.id])


@pytest.mark.usefixtures("ray_instance")
async def test_killing_an_actor_mid_job_still_commits_every_item_once(tmp_path: Path) -> None:
    """ray.kill of one actor while blocks run: retried elsewhere, full set, no duplicates."""
    items = 6000
    job = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": {"random": items, "seed": 5}}],
        job={"executor": "ray"},
        graph={"scale": 11},
    )
    summary: list[va.jobs.JobSummary] = []

    async def run() -> None:
        summary.append(await _run(job))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        manifest = anyio.Path(tmp_path / "out" / "manifest.json")
        with anyio.fail_after(120):
            # A few commits in, both actors are running blocks. (The manifest is written
            # by the runner's commit thread; there is no event to wait on.)
            while not (  # noqa: ASYNC110
                await manifest.exists()
                and len(json.loads(await manifest.read_text())["chunks"]) >= 3
            ):
                await anyio.sleep(0.01)
        names = await anyio.to_thread.run_sync(_actor_names, "test-job")
        actor = await anyio.to_thread.run_sync(ray.get_actor, names[0])
        await anyio.to_thread.run_sync(lambda: ray.kill(actor, no_restart=False))
    assert summary[0].status == "complete"
    records = await committed(tmp_path / "out")
    ids = [r.id for r in records]
    assert len(ids) == len(set(ids)), "a record was committed twice"
    assert sorted(ids) == list(range(items))
    assert all(r.ok for r in records)
    local = await job_file(
        await _folder(tmp_path / "local"),
        [{"kind": "reach", "sources": {"random": items, "seed": 5}}],
        graph={"scale": 11},
    )
    await _run(local)
    want = await committed(tmp_path / "local" / "out")
    assert sorted((r.id, r.source, r.reached) for r in records) == sorted(
        (r.id, r.source, r.reached) for r in want
    )


@pytest.mark.usefixtures("ray_instance")
async def test_two_concurrent_runs_of_one_job_on_one_instance_do_not_collide(
    tmp_path: Path,
) -> None:
    """Two runs of one job at once on one Ray instance: distinct actors, equal full results."""
    items = 1500
    job = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": {"random": items, "seed": 6}}],
        job={"executor": "ray", "ray_workers": 1},
        graph={"scale": 10},
    )
    spec = await anyio.to_thread.run_sync(load_job, job)
    summaries: dict[str, va.jobs.JobSummary] = {}

    async def run(name: str) -> None:
        summaries[name] = await JobRunner(spec, job_file=job, out=tmp_path / name).run()

    with capture_logs() as logs, anyio.fail_after(240):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "first")
            tg.start_soon(run, "second")
    assert [s.status for s in summaries.values()] == ["complete", "complete"]
    events = [e for e in logs if e["event"] in ("ray_actors_started", "job_finished")]
    started = [e for e in events if e["event"] == "ray_actors_started"]
    # Both runs had their actors up before either finished: they did run side by side.
    assert [e["event"] for e in events[:2]] == ["ray_actors_started"] * 2
    assert started[0]["run"] != started[1]["run"]
    first, second = await committed(tmp_path / "first"), await committed(tmp_path / "second")
    assert sorted((r.id, r.reached) for r in first) == sorted((r.id, r.reached) for r in second)
    assert sorted(r.id for r in first) == list(range(items))


@pytest.mark.usefixtures("ray_instance")
async def test_actors_get_the_graph_from_the_object_store_not_the_loader(tmp_path: Path) -> None:
    """A file graph is loaded once, by the driver; actors call no loader and hold shared views."""
    graph = rmat_graph()
    await anyio.to_thread.run_sync(save_npz, graph, tmp_path / "graph.npz")
    workload = [{"kind": "bfs", "sources": {"random": 300, "seed": 2}}]
    job = await job_file(
        tmp_path, workload, job={"executor": "ray"}, graph={"kind": "npz", "path": "graph.npz"}
    )
    loads = graph_loads()
    with anyio.fail_after(180):
        summary = await _run(job)
    assert summary.status == "complete"
    assert graph_loads() == loads + 1, "the driver loads the graph file exactly once"
    assert summary.batches is not None
    assert summary.batches["graph_loads_per_actor"] == [0, 0]
    assert summary.batches["graph_shared_per_actor"] == [True, True]
    assert sum(summary.batches["blocks_per_actor"]) > 0
    sources = random_sources(300, 2, graph.num_vertices)
    for record in await committed(tmp_path / "out"):
        assert record.reached == expected_reach(graph, sources[record.id])


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_a_ray_job_under_trio_is_refused_with_a_fix(tmp_path: Path) -> None:
    """Under trio, executor='ray' raises ConfigurationError saying asyncio only."""
    job = await job_file(tmp_path, [{"kind": "reach", "sources": [0]}], job={"executor": "ray"})
    with pytest.raises(va.ConfigurationError, match=r"asyncio only.*Fix:"):
        await _run(job)
