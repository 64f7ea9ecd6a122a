"""The CUDA context warm-up a job runs while it is checked (simulated driver, no GPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import numpy as np
import pytest
from job_files import committed, expected_reach, job_file, random_sources, rmat_graph

from vyre_async.jobs import JobRunner, load_job
from vyre_async.jobs.runner import BlockResult
from vyre_async.jobs.runner._warmup import ContextWarmup

sys.path.insert(0, str(Path(__file__).parent))
import cuda_sim


class Contexts:
    """Counts primary-context retains and releases of the simulated driver."""

    def __init__(self, sim: cuda_sim.SimulatedDriver, monkeypatch: pytest.MonkeyPatch) -> None:
        self.retained = 0
        self.released = 0
        retain, release = sim.cuDevicePrimaryCtxRetain, sim.cuDevicePrimaryCtxRelease

        def counting_retain(device: int) -> object:
            self.retained += 1
            return retain(device)

        def counting_release(device: int) -> object:
            self.released += 1
            return release(device)

        monkeypatch.setattr(sim, "cuDevicePrimaryCtxRetain", counting_retain)
        monkeypatch.setattr(sim, "cuDevicePrimaryCtxRelease", counting_release)


def test_the_warmup_retains_each_context_and_lets_go_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each ordinal's primary context is retained once and released once."""
    sim = cuda_sim.install(monkeypatch)
    contexts = Contexts(sim, monkeypatch)
    for devices in ("all", 0, [0]):
        warmup = ContextWarmup.start("cuda", devices, "local")
        assert warmup is not None
        warmup.release()
    assert contexts.retained == contexts.released == 3


def test_a_warmup_that_fails_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ordinal the driver refuses ends the warm-up quietly; what it did retain is
    released (the backend's own open reports the error)."""
    sim = cuda_sim.install(monkeypatch)
    contexts = Contexts(sim, monkeypatch)
    get = sim.cuDeviceGet
    monkeypatch.setattr(sim, "cuDeviceGet", lambda o: get(o) if o == 0 else (101, None))
    warmup = ContextWarmup.start("cuda", [0, 5], "local")
    assert warmup is not None
    warmup.release()
    assert contexts.retained == contexts.released == 1


def test_only_local_cuda_jobs_warm_up() -> None:
    """CPU and automatic backends, and Ray jobs, start no warm-up."""
    assert ContextWarmup.start("cpu", 0, "local") is None
    assert ContextWarmup.start("auto", 0, "local") is None
    assert ContextWarmup.start("cuda", 0, "ray") is None


async def test_a_cuda_job_lets_go_of_its_warm_contexts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CUDA job on the simulated driver (its blocks computed by SciPy: the simulator
    runs no traversal kernels) retains and releases every context it made, warm-up
    included, and commits every record."""
    sim = cuda_sim.install(monkeypatch)
    contexts = Contexts(sim, monkeypatch)
    graph = rmat_graph()
    sources = random_sources(40, 7, graph.num_vertices)

    async def by_scipy(session: object, workload: object, block: np.ndarray) -> BlockResult:
        return BlockResult(np.array([expected_reach(graph, int(s)) for s in block]))

    path = await job_file(
        tmp_path, [{"kind": "reach", "sources": sources}], job={"backend": "cuda"}
    )
    spec = await anyio.to_thread.run_sync(load_job, path)
    summary = await JobRunner(spec, job_file=path, execute=by_scipy).run()
    assert summary.status == "complete", summary.message
    assert contexts.retained >= 2  # the warm-up's and the backend's own
    assert contexts.retained == contexts.released
    records = sorted(await committed(tmp_path / "out"), key=lambda r: r.id)
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in sources]
