"""Jobs on Ray actors: a local Ray instance, two logical GPUs, CPU-backend actors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest
import ray
from job_files import committed, expected_reach, job_file, load_npy, random_sources, rmat_graph

import vyre_async as va
from vyre_async.jobs import JobRunner, load_job


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
    arrays = {r.id: r.array for r in want if r.array is not None}
    for record in got:
        if record.array is not None:
            mine = await load_npy(tmp_path / "out" / record.array)
            theirs = await load_npy(local_job / "out" / arrays[record.id])
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
        actor = await anyio.to_thread.run_sync(ray.get_actor, "vyre-test-job-worker-0")
        await anyio.to_thread.run_sync(lambda: ray.kill(actor, no_restart=False))
    assert summary[0].status == "complete"
    records = await committed(tmp_path / "out")
    ids = [r.id for r in records]
    assert len(ids) == len(set(ids)), "a record was committed twice"
    assert sorted(ids) == list(range(items))
    assert all(r.ok for r in records)


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_a_ray_job_under_trio_is_refused_with_a_fix(tmp_path: Path) -> None:
    """Under trio, executor='ray' raises ConfigurationError saying asyncio only."""
    job = await job_file(tmp_path, [{"kind": "reach", "sources": [0]}], job={"executor": "ray"})
    with pytest.raises(va.ConfigurationError, match=r"asyncio only.*Fix:"):
        await _run(job)
