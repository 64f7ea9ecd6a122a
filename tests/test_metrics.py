"""Prometheus metrics: seconds, batcher and session figures, the collector, --metrics-port."""

from __future__ import annotations

import functools
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import msgspec
import numpy as np
import pytest
from job_files import job_file, rmat_graph, write_job
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import vyre_async as va
from vyre_async import cli
from vyre_async.batching import BatcherStats
from vyre_async.jobs import BlockResult, JobMetrics, JobRunner, WorkloadSection, load_job
from vyre_async.sessions import ResidentGraphSession, SessionStats
from vyre_async.telemetry import (
    TelemetrySnapshot,
    prometheus_collector,
    telemetry_families,
    to_prometheus_text,
)


def _samples(text: str) -> dict[str, float]:
    """Sample name -> value, parsed by prometheus_client's own parser."""
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_times_are_exported_in_seconds() -> None:
    """wall/device/enqueue/wait nanoseconds come out as *_seconds_total, divided by 1e9."""
    snapshot = TelemetrySnapshot(
        backend="cpu",
        device="cpu: test",
        wall_ns_total=1_500_000_000,
        device_ns_total=250_000_000,
        enqueue_ns_total=3_000,
        wait_ns_total=7,
    )
    text = to_prometheus_text(snapshot)
    assert "_ns" not in text
    samples = _samples(text)
    assert samples["vyre_async_wall_seconds_total"] == 1.5
    assert samples["vyre_async_device_seconds_total"] == 0.25
    assert samples["vyre_async_enqueue_seconds_total"] == pytest.approx(3e-6)
    assert samples["vyre_async_wait_seconds_total"] == pytest.approx(7e-9)
    assert "# TYPE vyre_async_wall_seconds_total counter" in text


async def _session_figures() -> tuple[TelemetrySnapshot, BatcherStats, SessionStats]:
    graph = rmat_graph()
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph, batching=va.BatchingConfig(max_batch=8)) as session,
    ):
        async with anyio.create_task_group() as tg:
            for source in range(12):
                tg.start_soon(session.bfs, source)
        await session.pagerank()
        stats = session.batch_stats()
        assert stats is not None
        return backend.telemetry(), stats, session.stats()


async def test_batcher_and_session_figures_are_exported_field_by_field() -> None:
    """Every BatcherStats and SessionStats field appears, with the session's own values."""
    snapshot, batches, session = await _session_figures()
    samples = _samples(to_prometheus_text(snapshot, batches=batches, session=session))
    assert batches.submitted == 12
    assert samples["vyre_async_batcher_submitted_total"] == 12
    assert samples["vyre_async_batcher_served_total"] == batches.served
    assert samples["vyre_async_batcher_batches_total"] == batches.batches
    assert samples["vyre_async_batcher_lanes_max"] == batches.lanes_max
    assert samples["vyre_async_session_runs_total"] == session.runs
    assert samples["vyre_async_session_wall_seconds_total"] == pytest.approx(session.wall_ns / 1e9)
    assert samples["vyre_async_dispatches_total"] == snapshot.dispatches
    for struct, prefix in ((batches, "batcher"), (session, "session")):
        exported = [set(s.split("_")) for s in samples if s.startswith(f"vyre_async_{prefix}_")]
        for field in msgspec.structs.fields(struct):
            words = set(field.name.split("_")) - {"ns", "s"}  # units become seconds
            assert any(words <= name for name in exported), field.name


async def test_the_collector_reports_what_the_text_renders() -> None:
    """A prometheus_client registry scraping the collector gives the same samples."""
    snapshot, batches, session = await _session_figures()
    families = telemetry_families(snapshot, batches=batches, session=session)
    registry = CollectorRegistry(auto_describe=True)
    registry.register(prometheus_collector(lambda: families))
    scraped = _samples(generate_latest(registry).decode())
    rendered = _samples(to_prometheus_text(snapshot, batches=batches, session=session))
    assert scraped == rendered
    assert len(rendered) == len(families)


def test_the_collector_without_prometheus_client_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No prometheus_client: ConfigurationError whose fix names the metrics extra."""
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    monkeypatch.setitem(sys.modules, "prometheus_client.core", None)
    with pytest.raises(va.ConfigurationError) as info:
        prometheus_collector(list)
    assert "vyre-async[metrics]" in info.value.fix
    with pytest.raises(va.ConfigurationError):
        JobMetrics().collector()


async def test_a_runner_publishes_its_figures_to_job_metrics(tmp_path: Path) -> None:
    """After a run its JobMetrics hold the job's items and the session's figures."""
    job = await job_file(tmp_path, [{"kind": "reach", "sources": list(range(20))}])
    spec = await anyio.to_thread.run_sync(load_job, job)
    metrics = JobMetrics()
    assert metrics.text() == ""
    summary = await JobRunner(spec, job_file=job, metrics=metrics).run()
    samples = _samples(metrics.text())
    assert summary.status == "complete"
    assert samples["vyre_async_job_items"] == 20
    assert samples["vyre_async_job_items_committed"] == 20
    assert samples["vyre_async_job_items_done_total"] == 20
    assert samples["vyre_async_job_items_failed_total"] == 0
    assert samples["vyre_async_batcher_submitted_total"] == summary.batches["submitted"]  # type: ignore[index]
    assert samples["vyre_async_dispatches_total"] > 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_run_serves_metrics_on_its_port_while_the_job_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`vyre-async run --metrics-port N`: a scrape mid-run shows the job and its batcher."""
    entered, release = threading.Event(), threading.Event()

    async def held_execute(
        session: ResidentGraphSession, workload: WorkloadSection, sources: np.ndarray
    ) -> BlockResult:
        entered.set()
        await anyio.to_thread.run_sync(release.wait, 30.0)
        return await va.jobs.execute_block(session, workload, sources)

    monkeypatch.setattr(cli, "JobRunner", functools.partial(JobRunner, execute=held_execute))
    port = _free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    scraped: dict[str, float] = {}

    def scrape_while_held() -> None:
        try:
            if not entered.wait(30.0):
                return
            deadline = time.monotonic() + 10.0  # refreshes come about once a second
            while time.monotonic() < deadline:
                with urllib.request.urlopen(url, timeout=5.0) as answer:
                    samples = _samples(answer.read().decode())
                if "vyre_async_batcher_submitted_total" in samples:  # the session is open
                    scraped.update(samples)
                    return
                time.sleep(0.05)
        finally:
            release.set()

    scraper = threading.Thread(target=scrape_while_held)
    scraper.start()
    job = write_job(tmp_path, [{"kind": "reach", "sources": list(range(40))}])
    argv = ["run", str(job), "--metrics-port", str(port), "--metrics-host", "127.0.0.1"]
    try:
        code = cli.main(argv)
    finally:
        release.set()
        scraper.join(30.0)
    assert code == 0
    assert scraped["vyre_async_job_items"] == 40
    assert scraped["vyre_async_job_items_committed"] < 40  # scraped while it ran
    assert "vyre_async_batcher_submitted_total" in scraped  # the session's figures too
    assert "complete" in capsys.readouterr().out
    with pytest.raises(urllib.error.URLError):  # the server is gone once the job ended
        urllib.request.urlopen(url, timeout=2.0)


def _request(url: str, method: str = "GET") -> tuple[int, bytes]:
    """The HTTP status a request gets (an error status included) and the body."""
    request = urllib.request.Request(url, method=method)  # noqa: S310 - a local http URL
    try:
        with urllib.request.urlopen(request, timeout=5.0) as answer:  # noqa: S310
            return int(answer.status), answer.read()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read()


def test_the_metrics_server_answers_get_metrics_and_404_to_everything_else() -> None:
    """GET /metrics is a scrape; other paths (/, /favicon.ico, /metricsx) and methods: 404."""
    metrics = JobMetrics()
    metrics.publish(telemetry_families(TelemetrySnapshot(backend="cpu", device="cpu: t")))
    with va.jobs.serve_metrics(metrics, 0) as port:
        base = f"http://127.0.0.1:{port}"
        status, body = _request(f"{base}/metrics")
        assert status == 200
        assert "vyre_async_dispatches_total" in _samples(body.decode())
        assert _request(f"{base}/metrics?name[]=vyre_async_dispatches_total")[0] == 200
        for path in ("/", "/favicon.ico", "/metricsx", "/metrics/", "/other"):
            status, body = _request(base + path)
            assert status == 404, path
            assert b"vyre_async" not in body
        for method in ("POST", "PUT", "DELETE", "OPTIONS"):
            assert _request(f"{base}/metrics", method)[0] == 404, method


def test_run_serves_metrics_on_loopback_unless_given_a_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --metrics-port N` without --metrics-host listens on 127.0.0.1; the flag overrides."""
    hosts: list[str] = []
    serve = va.jobs.serve_metrics

    def recording(metrics: JobMetrics, port: int, host: str) -> object:
        hosts.append(host)
        return serve(metrics, port, host)

    monkeypatch.setattr(cli, "serve_metrics", recording)
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1]}])
    assert cli.main(["run", str(job), "--out", str(tmp_path / "a"), "--metrics-port", "0"]) == 0
    argv = ["run", str(job), "--out", str(tmp_path / "b"), "--metrics-port", "0"]
    assert cli.main([*argv, "--metrics-host", "localhost"]) == 0
    assert hosts == ["127.0.0.1", "localhost"]


@pytest.mark.parametrize("port", [-1, 65536, 70000])
def test_serve_metrics_refuses_a_port_out_of_range_with_a_fix(port: int) -> None:
    """A port outside 0-65535 is a ConfigurationError naming the range, not an OverflowError."""
    with (
        pytest.raises(va.ConfigurationError, match=r"0 to 65535.*Fix: "),
        va.jobs.serve_metrics(JobMetrics(), port),
    ):
        pass
