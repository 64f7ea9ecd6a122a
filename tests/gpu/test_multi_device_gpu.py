"""Every GPU of the host: replicated graphs and multi-query jobs (needs two GPUs)."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest
from graph_references import scipy_levels
from job_files import committed, job_file

import vyre_async as va
from vyre_async.backends import DeviceGroup
from vyre_async.jobs import JobRunner, load_job
from vyre_async.testing import gpu_count

pytestmark = pytest.mark.skipif(gpu_count() < 2, reason="needs at least two GPUs")


async def test_batches_run_on_every_gpu_and_equal_scipy(rng: np.random.Generator) -> None:
    """device='all': both GPUs run batches; every row equals SciPy's levels."""
    graph = va.graphs.rmat(14, 16, int(rng.integers(1 << 30)))
    calls = [[int(s) for s in rng.integers(0, graph.num_vertices, 300)] for _ in range(8)]
    rows: dict[int, np.ndarray] = {}
    async with (
        va.open_devices("cuda", devices="all") as group,
        va.resident_graph(group, graph, batching=va.BatchingConfig(max_batch=128)) as session,
    ):
        assert isinstance(group, DeviceGroup)
        assert len(group) >= 2

        async def call(i: int) -> None:
            rows[i] = await session.bfs_many(calls[i], readback="levels")

        async with anyio.create_task_group() as tg:
            for i in range(len(calls)):
                tg.start_soon(call, i)
        launches = [b.telemetry().kernel_launches for b in group.backends]
    assert all(n > 0 for n in launches), f"a GPU did no work: {launches}"
    for i, sources in enumerate(calls):
        for row, source in zip(rows[i][:20], sources[:20], strict=True):
            np.testing.assert_array_equal(row, scipy_levels(graph, source))


async def test_a_multi_query_job_on_two_gpus_equals_one_gpu(tmp_path: Path) -> None:
    """A job with devices='all' commits exactly the records of the same job on one GPU."""
    job = await job_file(
        tmp_path,
        [
            {"kind": "bfs", "sources": {"random": 4000, "seed": 3}},
            {"kind": "khop", "k": 2, "sources": {"random": 500, "seed": 4}},
        ],
        job={"backend": "cuda", "devices": "all"},
        graph={"kind": "rmat", "scale": 16, "edge_factor": 16, "seed": 9},
        batching={"max_batch": 256},
    )
    spec = await anyio.to_thread.run_sync(load_job, job)
    both = await JobRunner(spec, job_file=job).run()
    one = await JobRunner(spec, job_file=job, out=tmp_path / "one", devices=0).run()
    assert (both.status, one.status) == ("complete", "complete")
    assert " + " in both.device
    got = sorted((r.id, r.source, r.reached) for r in await committed(tmp_path / "out"))
    want = sorted((r.id, r.source, r.reached) for r in await committed(tmp_path / "one"))
    assert got == want
    assert len(got) == 4500
