"""Jobs on Ray actors on the GPUs of this host (needs Ray and two GPUs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest
from job_files import committed, expected_reach, job_file, random_sources

import vyre_async as va
from vyre_async.jobs import JobRunner, load_job
from vyre_async.testing import capture_logs, gpu_count

ray = pytest.importorskip("ray")


pytestmark = pytest.mark.skipif(gpu_count() < 2, reason="needs at least two GPUs")


@pytest.fixture(scope="module")
def ray_with_gpus() -> Iterator[None]:
    """A local Ray instance with this host's GPUs."""
    ray.init(num_gpus=gpu_count(), include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()


@pytest.fixture
def anyio_backend() -> str:
    """Ray's awaitables are asyncio futures: these tests run on asyncio."""
    return "asyncio"


@pytest.mark.usefixtures("ray_with_gpus")
async def test_a_cuda_job_on_one_actor_per_gpu_equals_scipy_and_reuses_the_stored_graph(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """One CUDA actor per GPU, each running blocks; every count equals SciPy's; a second
    job of the graph starts from the cluster's store."""
    seed = int(rng.integers(1 << 30))
    graph_section = {"kind": "rmat", "scale": 14, "edge_factor": 16, "seed": seed}
    graph = va.graphs.rmat(14, 16, seed)
    for run in ("first", "second"):
        folder = tmp_path / run
        await anyio.Path(folder).mkdir()
        job = await job_file(
            folder,
            [{"kind": "reach", "sources": {"random": 3000, "seed": 7}}],
            job={"name": "gpu-ray", "backend": "cuda", "executor": "ray", "devices": 0},
            graph=graph_section,
            batching={"max_batch": 256},
        )
        spec = await anyio.to_thread.run_sync(load_job, job)
        with capture_logs() as logs, anyio.fail_after(300):
            summary = await JobRunner(spec, job_file=job).run()
        assert summary.status == "complete"
        assert summary.backend == "ray/cuda"
        assert summary.batches is not None
        blocks = summary.batches["blocks_per_actor"]
        assert len(blocks) == gpu_count()
        assert all(n > 0 for n in blocks), f"an actor ran no block: {blocks}"
        origin = [e["origin"] for e in logs if e["event"] == "ray_graph"]
        assert origin == (["driver"] if run == "first" else ["cluster"])
        sources = random_sources(3000, 7, graph.num_vertices)
        records = await committed(folder / "out")
        assert sorted(r.id for r in records) == list(range(3000))
        for record in records[::37]:
            assert record.reached == expected_reach(graph, sources[record.id])
