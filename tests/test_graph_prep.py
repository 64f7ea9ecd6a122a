"""A job's graph, prepared once by the driver: the R-MAT graph cache and where graphs come from."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from job_files import committed, job_file
from numpy.testing import assert_array_equal

import vyre_async as va
from vyre_async.graphs import rmat, rmat_params
from vyre_async.jobs import JobRunner, load_job
from vyre_async.jobs.graph import (
    _graph_cache,
    _graph_prep,
    graph_loads,
    job_fingerprint,
    prepare_job_graph,
)
from vyre_async.jobs.graph._graph_cache import load_cached_rmat, rmat_cache_path, save_cached_rmat
from vyre_async.testing import capture_logs, gpu_unavailable_reason

WORKLOAD = [{"kind": "bfs", "sources": {"random": 120, "seed": 3}}]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty graph cache of this test's own, caching R-MAT graphs of every scale."""
    folder = tmp_path / "graph-cache"
    monkeypatch.setattr(_graph_cache, "graph_cache_dir", lambda: folder)
    monkeypatch.setattr(_graph_prep, "CACHE_MIN_SCALE", 1)
    return folder


def _events(logs: list[MutableMapping[str, Any]], name: str) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if e["event"] == name]


async def _run(job: Path, out: Path) -> va.jobs.JobSummary:
    spec = await anyio.to_thread.run_sync(load_job, job)
    return await JobRunner(spec, job_file=job, out=out).run()


async def test_a_second_run_loads_the_graph_the_first_run_cached(
    tmp_path: Path, cache: Path
) -> None:
    """Run 1 generates on the host and caches; run 2 loads the entry; equal records."""
    job = await job_file(tmp_path, WORKLOAD)
    with capture_logs() as logs:
        first = await _run(job, tmp_path / "first")
        second = await _run(job, tmp_path / "second")
    assert (first.status, second.status) == ("complete", "complete")
    ready = _events(logs, "graph_ready")
    assert [e["origin"] for e in ready] == ["host", "cache"]
    assert ready[0]["edges"] == ready[1]["edges"]
    entries = [p.name async for p in anyio.Path(cache).iterdir()]
    assert entries == [rmat_cache_path(rmat_params(8, 8, 5)).name]
    got = sorted((r.id, r.reached) for r in await committed(tmp_path / "second"))
    want = sorted((r.id, r.reached) for r in await committed(tmp_path / "first"))
    assert got == want


def test_a_cached_entry_gives_the_generated_arrays(cache: Path, rng: np.random.Generator) -> None:
    """save then load: the arrays rmat() made, offsets dtype kept, symmetric."""
    params = rmat_params(int(rng.integers(1, 12)), 4, int(rng.integers(1 << 40)))
    graph = rmat(params.scale, params.edge_factor, params.seed)
    assert save_cached_rmat(params, graph) == rmat_cache_path(params)
    loaded = load_cached_rmat(params)
    assert loaded is not None
    assert_array_equal(loaded.offsets, graph.offsets)
    assert_array_equal(loaded.indices, graph.indices)
    assert loaded.offsets.dtype == graph.offsets.dtype
    assert loaded.symmetric
    assert [p.name for p in cache.iterdir()] == [rmat_cache_path(params).name]  # no temp left


@pytest.mark.parametrize("where", ["indices", "checksum", "truncated"])
def test_a_damaged_entry_is_reported_and_not_used(cache: Path, where: str) -> None:
    """A flipped byte in the arrays or the checksum, or a cut file: a warning and a miss."""
    params = rmat_params(9, 8, 2)
    path = save_cached_rmat(params, rmat(9, 8, 2))
    assert path is not None
    data = bytearray(path.read_bytes())
    if where == "truncated":
        del data[len(data) // 2 :]
    else:
        # The member's bytes are stored as written: find them and flip one.
        with np.load(path) as archive:
            member = archive[where].tobytes()
        at = bytes(data).index(member) + len(member) // 2
        data[at] ^= 0x40
    path.write_bytes(bytes(data))
    with capture_logs() as logs:
        assert load_cached_rmat(params) is None
    [warning] = _events(logs, "graph_cache_damaged")
    assert warning["path"] == str(path)


def test_an_entry_whose_array_header_claims_more_than_its_member_is_refused(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry whose indices header claims 2**40 items (its member holds far fewer) is
    a miss, refused before anything that size is allocated."""
    params = rmat_params(9, 8, 3)
    path = save_cached_rmat(params, rmat(9, 8, 3))
    assert path is not None
    data = bytearray(path.read_bytes())
    with np.load(path) as archive:
        count = archive["indices"].size
    old = f"'shape': ({count},)".encode()
    at = bytes(data).index(old)
    end = bytes(data).index(b"\n", at)  # the header's padding spaces end there
    segment = bytes(data[at:end])
    claimed = segment.replace(old, f"'shape': ({1 << 40},)".encode())
    assert claimed[len(segment) :].strip() == b""  # only padding is given up
    data[at:end] = claimed[: len(segment)]
    path.write_bytes(bytes(data))
    allocated: list[int] = []
    real_empty = np.empty

    def watched_empty(shape: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        allocated.append(int(np.prod(shape, dtype=np.int64)))
        return real_empty(shape, *args, **kwargs)

    monkeypatch.setattr(np, "empty", watched_empty)
    with capture_logs() as logs:
        assert load_cached_rmat(params) is None
    assert _events(logs, "graph_cache_damaged")
    assert all(n < 1 << 40 for n in allocated)


def test_an_entry_written_for_other_parameters_is_not_used(cache: Path) -> None:
    """An intact entry copied under another graph's name is refused (its params differ)."""
    ours, other = rmat_params(7, 4, 1), rmat_params(7, 4, 2)
    source = save_cached_rmat(other, rmat(7, 4, 2))
    assert source is not None
    rmat_cache_path(ours).write_bytes(source.read_bytes())
    with capture_logs() as logs:
        assert load_cached_rmat(ours) is None
    assert "other parameters" in _events(logs, "graph_cache_damaged")[0]["reason"]


async def test_a_damaged_entry_is_regenerated_and_replaced(tmp_path: Path, cache: Path) -> None:
    """A job over a damaged entry generates the graph again and rewrites the entry whole."""
    params = rmat_params(8, 8, 5)
    path = await anyio.to_thread.run_sync(save_cached_rmat, params, rmat(8, 8, 5))
    assert path is not None
    await anyio.Path(path).write_bytes(b"PK\x03\x04 not an archive")
    job = await job_file(tmp_path, WORKLOAD)
    with capture_logs() as logs:
        summary = await _run(job, tmp_path / "out")
    assert summary.status == "complete"
    assert [e["origin"] for e in _events(logs, "graph_ready")] == ["host"]
    assert _events(logs, "graph_cache_damaged")
    repaired = await anyio.to_thread.run_sync(load_cached_rmat, params)
    assert repaired is not None
    assert_array_equal(repaired.indices, rmat(8, 8, 5).indices)


async def test_an_unwritable_cache_does_not_stop_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache folder that cannot be made: a warning with a fix, and the job completes."""
    blocker = tmp_path / "a-file"
    await anyio.Path(blocker).write_text("")
    monkeypatch.setattr(_graph_cache, "graph_cache_dir", lambda: blocker / "graphs")
    monkeypatch.setattr(_graph_prep, "CACHE_MIN_SCALE", 1)
    job = await job_file(tmp_path, WORKLOAD)
    with capture_logs() as logs:
        summary = await _run(job, tmp_path / "out")
    assert summary.status == "complete"
    [warning] = _events(logs, "graph_cache_write_failed")
    assert "VYRE_ASYNC_CACHE_DIR" in warning["fix"]


async def test_small_graphs_are_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below CACHE_MIN_SCALE the graph is generated every time and nothing is written."""
    folder = tmp_path / "graph-cache"
    monkeypatch.setattr(_graph_cache, "graph_cache_dir", lambda: folder)
    job = await job_file(tmp_path, WORKLOAD)
    with capture_logs() as logs:
        await _run(job, tmp_path / "out")
    assert [e["origin"] for e in _events(logs, "graph_ready")] == ["host"]
    assert not await anyio.Path(folder).exists()


async def test_a_file_graph_is_read_once_by_the_driver(tmp_path: Path) -> None:
    """A job over an .npz file calls the graph loader once and reports origin 'file'."""
    await anyio.to_thread.run_sync(va.graphs.save_npz, rmat(8, 8, 5), tmp_path / "g.npz")
    job = await job_file(tmp_path, WORKLOAD, graph={"kind": "npz", "path": "g.npz"})
    loads = graph_loads()
    with capture_logs() as logs:
        summary = await _run(job, tmp_path / "out")
    assert summary.status == "complete"
    assert graph_loads() == loads + 1
    assert [e["origin"] for e in _events(logs, "graph_ready")] == ["file"]


def test_the_fingerprint_of_an_rmat_job_names_the_generator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another generator version gives another fingerprint, so a resume cannot mix graphs."""
    from job_files import write_job

    job = write_job(tmp_path, WORKLOAD)
    spec = load_job(job)
    before = job_fingerprint(spec, job)
    monkeypatch.setattr(va.graphs.RmatParams, "generator_version", 999)
    assert job_fingerprint(spec, job) != before


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="a GPU answers here: it builds there")
async def test_without_a_gpu_a_cuda_job_generates_on_the_host_and_says_why(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """backend='cuda' with no GPU: the device build fails, is logged, and the host builds."""
    monkeypatch.setattr(_graph_prep, "DEVICE_MIN_SCALE", 1)
    spec = await anyio.to_thread.run_sync(load_job, await job_file(tmp_path, WORKLOAD))
    with capture_logs() as logs:
        async with anyio.create_task_group() as background:
            graph = await prepare_job_graph(spec, tmp_path / "job.json", "cuda", 0, background)
    assert_array_equal(graph.indices, rmat(8, 8, 5).indices)
    assert [e["origin"] for e in _events(logs, "graph_ready")] == ["host"]
    assert _events(logs, "graph_device_build_failed")
