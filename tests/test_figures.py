"""The figures the project prints, each checked against a clock read around the work.

Bounds hold on any machine, however slow or loaded: a sum of device times cannot
exceed the elapsed time times the workers that ran at once, a wait cannot exceed the
time around it. They fail only when a figure counts time it should not.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import anyio
import numpy as np
from graph_references import GRAPH_SHAPES, scipy_levels
from job_files import committed, job_file

import vyre_async as va
from vyre_async.jobs import JobMetrics, JobRunner, load_job
from vyre_async.jobs.runner._progress import Progress
from vyre_async.kernels import axpy
from vyre_async.testing import capture_logs

#: Worker threads of the CPU backends below: the most dispatches that run at once.
WORKERS = 2


def _vectors(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {
        "x": rng.standard_normal(n).astype(np.float32),
        "y": rng.standard_normal(n).astype(np.float32),
    }


async def test_cpu_device_time_of_concurrent_dispatches_fits_elapsed_time_times_workers(
    rng: np.random.Generator,
) -> None:
    """device_ns_total counts references running, not dispatches waiting for a worker."""
    inputs = _vectors(rng, 4096)
    async with va.open_backend("cpu", cpu_workers=WORKERS) as backend:
        start = time.perf_counter_ns()
        pendings = [backend.submit(axpy, inputs, a=float(i)) for i in range(300)]
        outputs = [await pending for pending in pendings]
        elapsed = time.perf_counter_ns() - start
        telemetry = backend.telemetry()
    assert telemetry.device_ns_total > 0
    assert telemetry.device_ns_total <= elapsed * WORKERS
    np.testing.assert_allclose(
        outputs[7]["y"], 7.0 * inputs["x"].astype(np.float64) + inputs["y"], rtol=1e-5
    )


async def test_wall_wait_and_enqueue_totals_of_dispatches_one_at_a_time_fit_elapsed_time(
    rng: np.random.Generator,
) -> None:
    """Awaited one after another, the dispatches' summed times fit in the time around them."""
    inputs = _vectors(rng, 4096)
    async with va.open_backend("cpu", cpu_workers=WORKERS) as backend:
        start = time.perf_counter_ns()
        for i in range(50):
            await backend.submit(axpy, inputs, a=float(i)).timed()
        elapsed = time.perf_counter_ns() - start
        telemetry = backend.telemetry()
    assert telemetry.sync_points == 50
    assert 0 < telemetry.wall_ns_total <= elapsed
    assert telemetry.enqueue_ns_total + telemetry.wait_ns_total <= telemetry.wall_ns_total
    assert telemetry.device_ns_total <= telemetry.wall_ns_total


async def test_each_dispatch_time_holds_its_enqueue_wait_and_device_times(
    rng: np.random.Generator,
) -> None:
    """A dispatch's enqueue and wait times, and its device time, lie within its wall time."""
    inputs = _vectors(rng, 4096)
    async with va.open_backend("cpu", cpu_workers=WORKERS) as backend:
        pendings = [backend.submit(axpy, inputs, a=1.0) for _ in range(100)]
        timings = [(await pending.timed()).timing for pending in pendings]
    for timing in timings:
        assert timing.device_ns is not None
        assert timing.enqueue_ns + timing.wait_ns <= timing.wall_ns
        assert 0 < timing.device_ns <= timing.wall_ns


async def test_session_device_time_of_concurrent_queries_fits_elapsed_time_times_workers(
    rng: np.random.Generator,
) -> None:
    """SessionStats.device_ns of concurrent traversals counts their kernels, not their queue."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 40)]
    levels: dict[int, np.ndarray] = {}
    async with (
        va.open_backend("cpu", cpu_workers=1) as backend,
        va.resident_graph(backend, graph) as session,
    ):

        async def query(i: int) -> None:
            levels[i] = await session.bfs(sources[i])

        start = time.perf_counter_ns()
        async with anyio.create_task_group() as tg:
            for i in range(len(sources)):
                tg.start_soon(query, i)
        elapsed = time.perf_counter_ns() - start
        stats = session.stats()
    assert stats.runs == len(sources)
    assert 0 < stats.device_ns <= elapsed  # one worker: one reference at a time
    assert stats.device_ns <= stats.wall_ns
    assert stats.host_overhead_ns_per_level >= 0
    np.testing.assert_array_equal(levels[3], scipy_levels(graph, sources[3]))


async def test_batch_stats_queue_waits_fit_the_loop_time_around_them(
    rng: np.random.Generator,
) -> None:
    """BatcherStats' queue waits lie within the loop time the queries took; lanes add up."""
    graph = GRAPH_SHAPES["rmat_skewed"](rng)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 200)]
    config = va.BatchingConfig(max_batch=32)
    async with (
        va.open_backend("cpu", cpu_workers=WORKERS) as backend,
        va.resident_graph(backend, graph, batching=config) as session,
    ):
        start = anyio.current_time()
        async with anyio.create_task_group() as tg:
            for source in sources:
                tg.start_soon(session.reach_count, source)
        elapsed = anyio.current_time() - start
        stats = session.batch_stats()
    assert stats is not None
    assert stats.served == len(sources)
    assert 0 <= stats.queue_wait_p50_s <= stats.queue_wait_p95_s <= elapsed
    assert math.isclose(stats.lanes_mean * stats.batches, len(sources))
    assert stats.lanes_max <= 32


async def test_a_jobs_summary_figures_fit_the_time_the_run_took(tmp_path: Path) -> None:
    """summary.seconds, items_per_s, its telemetry and batch figures and run_ms fit a clock."""
    job = await job_file(tmp_path, [{"kind": "bfs", "sources": {"random": 120, "seed": 3}}])
    spec = await anyio.to_thread.run_sync(load_job, job)
    runner = JobRunner(spec, job_file=job)
    started, loop_started = time.monotonic(), anyio.current_time()
    summary = await runner.run()
    elapsed, loop_elapsed = time.monotonic() - started, anyio.current_time() - loop_started
    assert summary.status == "complete"
    assert 0 < summary.seconds <= elapsed + 0.0005  # the summary rounds to the millisecond
    # items_per_s is worked out from the unrounded seconds, then rounded to 0.1 item/s.
    done, seconds = summary.items_this_run, summary.seconds
    assert done / (seconds + 0.0005) - 0.05 <= summary.items_per_s
    assert summary.items_per_s <= done / max(seconds - 0.0005, 1e-9) + 0.05
    assert summary.telemetry is not None
    assert summary.batches is not None
    cores = os.cpu_count() or 1
    assert summary.telemetry["device_ns_total"] <= elapsed * 1e9 * cores
    assert summary.batches["queue_wait_p95_s"] <= loop_elapsed
    records = await committed(tmp_path / "out")
    assert 0 < max(r.run_ms for r in records) <= summary.seconds * 1000 + 0.5  # both rounded


async def test_a_jobs_prometheus_seconds_are_its_nanoseconds_and_fit_the_run(
    tmp_path: Path,
) -> None:
    """Served seconds equal the summary's nanoseconds / 1e9 and fit the run's time."""
    job = await job_file(tmp_path, [{"kind": "reach", "sources": list(range(60))}])
    spec = await anyio.to_thread.run_sync(load_job, job)
    metrics = JobMetrics()
    started = time.monotonic()
    summary = await JobRunner(spec, job_file=job, metrics=metrics).run()
    elapsed = time.monotonic() - started
    samples = {
        line.split("{")[0]: float(line.rsplit(" ", 1)[1])
        for line in metrics.text().splitlines()
        if not line.startswith("#")
    }
    assert summary.telemetry is not None
    for name in ("device", "wall", "wait", "enqueue"):
        served = samples[f"vyre_async_{name}_seconds_total"]
        assert math.isclose(served, summary.telemetry[f"{name}_ns_total"] * 1e-9, rel_tol=1e-9)
    cores = os.cpu_count() or 1
    assert samples["vyre_async_device_seconds_total"] <= elapsed * cores
    assert samples["vyre_async_session_device_seconds_total"] <= elapsed * cores
    assert samples["vyre_async_job_items_done_total"] == summary.items_this_run


def test_progress_rate_and_eta_are_items_over_the_time_since_progress_began() -> None:
    """The logged rate is items over the time since progress began; ETA is items left over it."""
    with capture_logs() as logs:
        before = time.monotonic()
        progress = Progress(total=1000, skipped=100, stream=None, interval=3600.0)
        after_start = time.monotonic()
        progress.add(250, 0)
        progress.add(150, 3)
        inner_end = time.monotonic()
        progress.close()  # always logs the final numbers
        outer_end = time.monotonic()
    last = [e for e in logs if e["event"] == "job_progress"][-1]
    slowest = 400 / (outer_end - before)
    fastest = 400 / max(inner_end - after_start, 1e-9)
    assert last["items_done"] == 500
    assert slowest - 0.05 <= last["items_per_s"] <= fastest + 0.05  # logged to 0.1 item/s
    assert 500 / fastest - 0.05 <= last["eta_s"] <= 500 / slowest + 0.05
