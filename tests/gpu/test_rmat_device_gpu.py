"""The device R-MAT builder on a real GPU, and jobs whose graph it builds."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from job_files import committed, expected_reach, job_file, random_sources
from numpy.testing import assert_array_equal

import vyre_async as va
from vyre_async.algorithms.rmat import rmat_on_device
from vyre_async.graphs import rmat, rmat_params
from vyre_async.jobs import JobRunner, load_job
from vyre_async.jobs.graph import _graph_cache
from vyre_async.testing import capture_logs, gpu_count


def _origins(logs: list[MutableMapping[str, Any]]) -> list[str]:
    return [e["origin"] for e in logs if e["event"] == "graph_ready"]


@pytest.fixture
def graph_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty graph cache of this test's own."""
    folder = tmp_path / "graph-cache"
    monkeypatch.setattr(_graph_cache, "graph_cache_dir", lambda: folder)
    return folder


@pytest.mark.parametrize(
    ("scale", "edge_factor"), [(0, 3), (1, 2), (5, 7), (10, 16), (14, 16), (18, 16), (20, 8)]
)
async def test_device_build_equals_the_host_generator(
    cuda: va.Backend, scale: int, edge_factor: int, rng: np.random.Generator
) -> None:
    """rmat_on_device on the GPU gives rmat()'s offsets and indices, array for array."""
    seed = int(rng.integers(1 << 62))
    graph = await rmat_on_device(cuda, rmat_params(scale, edge_factor, seed))
    want = await anyio.to_thread.run_sync(lambda: rmat(scale, edge_factor, seed))
    assert_array_equal(graph.offsets, want.offsets)
    assert_array_equal(graph.indices, want.indices)


async def test_the_scale_22_job_graph_built_on_the_device_equals_the_host_one(
    cuda: va.Backend,
) -> None:
    """configs/rmat22-bfs-gpu.toml's graph (scale 22, edge factor 16, seed 1): equal arrays."""
    graph = await rmat_on_device(cuda, rmat_params(22, 16, 1))
    want = await anyio.to_thread.run_sync(lambda: rmat(22, 16, 1))
    assert graph.num_edges == want.num_edges
    assert_array_equal(graph.offsets, want.offsets)
    assert_array_equal(graph.indices, want.indices)


@pytest.mark.usefixtures("graph_cache")
async def test_a_cuda_job_builds_its_graph_on_the_device_then_loads_it_from_the_cache(
    tmp_path: Path,
) -> None:
    """Run 1 builds the scale-16 graph on the GPU and caches it; run 2 loads it; equal
    records, and reach counts equal SciPy's on the host generator's graph."""
    items = 2000
    job = await job_file(
        tmp_path,
        [{"kind": "bfs", "sources": {"random": items, "seed": 4}}],
        job={"backend": "cuda"},
        graph={"kind": "rmat", "scale": 16, "edge_factor": 16, "seed": 12},
        batching={"max_batch": 256},
    )
    spec = await anyio.to_thread.run_sync(load_job, job)
    with capture_logs() as logs:
        first = await JobRunner(spec, job_file=job, out=tmp_path / "first").run()
        second = await JobRunner(spec, job_file=job, out=tmp_path / "second").run()
    assert (first.status, second.status) == ("complete", "complete")
    assert _origins(logs) == ["device", "cache"]
    got = sorted((r.id, r.reached) for r in await committed(tmp_path / "first"))
    assert got == sorted((r.id, r.reached) for r in await committed(tmp_path / "second"))
    graph = await anyio.to_thread.run_sync(lambda: rmat(16, 16, 12))
    sources = random_sources(items, 4, graph.num_vertices)
    for item, reached in got[:40]:
        assert reached == expected_reach(graph, sources[item])


@pytest.mark.skipif(gpu_count() < 2, reason="needs at least two GPUs")
@pytest.mark.usefixtures("graph_cache")
async def test_a_two_gpu_job_over_a_device_built_graph_equals_a_one_gpu_job(
    tmp_path: Path,
) -> None:
    """devices='all' (its scale-18 graph built on GPU 0) and device 0 alone (the graph from
    the cache the first run wrote): equal records."""
    job = await job_file(
        tmp_path,
        [{"kind": "bfs", "sources": {"random": 6000, "seed": 8}}],
        job={"backend": "cuda", "devices": "all"},
        graph={"kind": "rmat", "scale": 18, "edge_factor": 16, "seed": 3},
        batching={"max_batch": 512},
    )
    spec = await anyio.to_thread.run_sync(load_job, job)
    both = await JobRunner(spec, job_file=job, out=tmp_path / "both").run()
    one = await JobRunner(spec, job_file=job, out=tmp_path / "one", devices=0).run()
    assert (both.status, one.status) == ("complete", "complete")
    assert " + " in both.device
    got = sorted((r.id, r.source, r.reached) for r in await committed(tmp_path / "both"))
    want = sorted((r.id, r.source, r.reached) for r in await committed(tmp_path / "one"))
    assert got == want
    assert len(got) == 6000
