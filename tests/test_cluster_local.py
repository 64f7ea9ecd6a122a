"""A Ray job that starts its own local Ray instance (no ``ray_address``, none running)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import ray
from job_files import committed, job_file

from vyre_async.jobs import JobRunner, load_job
from vyre_async.testing import capture_logs


@pytest.fixture
def anyio_backend() -> str:
    """Ray's awaitables are asyncio futures: these tests run on asyncio."""
    return "asyncio"


@pytest.fixture
def no_ray() -> Iterator[None]:
    """No Ray instance in this process before the test, and none left after it."""
    ray.shutdown()
    yield
    ray.shutdown()


@pytest.mark.usefixtures("no_ray")
async def test_a_ray_job_starts_a_local_instance_says_where_its_dashboard_is_and_stops_it(
    tmp_path: Path,
) -> None:
    """Without ray_address the runner starts local Ray, logs the dashboard, and shuts it down."""
    job = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": {"random": 200, "seed": 1}}],
        job={"executor": "ray", "ray_workers": 2},
    )
    spec = await anyio.to_thread.run_sync(load_job, job)
    with capture_logs() as logs, anyio.fail_after(240):
        summary = await JobRunner(spec, job_file=job).run()
    assert summary.status == "complete"
    assert summary.backend == "ray/cpu"
    connected = [e for e in logs if e["event"] == "ray_connected"]
    assert len(connected) == 1
    assert connected[0]["address"] == "a local Ray instance"
    dashboard = connected[0]["dashboard"]
    # Ray starts its dashboard when ray[default] is installed; else the line says so.
    assert dashboard.startswith("http://") or "ray[default]" in dashboard
    assert not ray.is_initialized(), "the runner shuts down the Ray instance it started"
    assert sorted(r.id for r in await committed(tmp_path / "out")) == list(range(200))
