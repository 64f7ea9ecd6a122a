"""A running job's figures for Prometheus, and the HTTP endpoint that serves them.

The runner refreshes a :class:`JobMetrics` on the event loop's thread (about once a
second, and when the job ends): items of the job, committed, done and failed,
retries and reopens, and, for a local job, the backend's telemetry and the
session's batcher and session statistics. Readers in any thread (the HTTP server of
``vyre-async run --metrics-port``) see the latest complete set, never a half-made one.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, Literal

import anyio

from ...errors import ConfigurationError
from ...logging import get_logger
from ...telemetry import MetricFamily, prometheus_collector, render_prometheus

_log = get_logger("vyre_async.jobs")

#: Seconds between refreshes while a job runs.
REFRESH_S = 1.0


class JobMetrics:
    """The latest figures of a running job, as Prometheus metric families.

    Pass one to :class:`JobRunner` (``metrics=``); read it from any thread with
    :meth:`families`, :meth:`text` or through :meth:`collector`.

    Args:
        prefix: Metric name prefix.
    """

    def __init__(self, prefix: str = "vyre_async") -> None:
        self.prefix = prefix
        self._families: tuple[MetricFamily, ...] = ()

    def families(self) -> list[MetricFamily]:
        """The families as last refreshed (none before the job started)."""
        return list(self._families)

    def text(self) -> str:
        """The families in the Prometheus text exposition format."""
        return render_prometheus(self._families)

    def collector(self) -> Any:
        """A ``prometheus_client`` collector of these figures.

        Raises:
            ConfigurationError: ``prometheus_client`` is not installed.
        """
        return prometheus_collector(self.families)

    def publish(self, families: list[MetricFamily]) -> None:
        """Replace the figures (the runner calls this on the event loop's thread)."""
        self._families = tuple(families)


def job_families(
    prefix: str,
    job: str,
    *,
    items_total: int,
    items_committed: int,
    items_done: int,
    items_failed: int,
    retries: int,
    reopens: int,
) -> list[MetricFamily]:
    """The job's own figures, labelled with its name."""
    labels = {"job": job}
    figures: list[tuple[str, Literal["counter", "gauge"], str, int]] = [
        ("job_items", "gauge", "Items of the whole job.", items_total),
        (
            "job_items_committed",
            "gauge",
            "Items committed by this run and earlier ones.",
            items_committed,
        ),
        ("job_items_done", "counter", "Items this run finished, failed ones included.", items_done),
        ("job_items_failed", "counter", "Items this run recorded as failed.", items_failed),
        ("job_retries", "counter", "Block retries in this run.", retries),
        ("job_reopens", "counter", "Backends reopened after a lost device in this run.", reopens),
    ]
    return [
        MetricFamily(f"{prefix}_{name}", kind, text, ((labels, value),))
        for name, kind, text, value in figures
    ]


async def refresh_periodically(
    metrics: JobMetrics, snapshot: Callable[[], list[MetricFamily]]
) -> None:
    """Publish ``snapshot()`` now and every :data:`REFRESH_S` seconds until cancelled."""
    while True:
        metrics.publish(snapshot())
        await anyio.sleep(REFRESH_S)


@contextlib.contextmanager
def serve_metrics(metrics: JobMetrics, port: int, host: str = "127.0.0.1") -> Iterator[int]:
    """Serve ``metrics`` at ``http://host:port/metrics`` while the block runs.

    The server (a thread per scrape, answered by ``prometheus_client``'s exposition
    from the latest published figures) has no authentication: it answers ``GET
    /metrics`` with 200 and every other request with 404, and listens on loopback
    unless ``host`` names another address.

    Args:
        metrics: What to serve.
        port: TCP port; 0 picks a free one.
        host: Address to listen on: ``"127.0.0.1"`` (this machine only), an
            interface's address, or ``"0.0.0.0"`` / ``"::"`` for every interface.

    Yields:
        The port the server listens on.

    Raises:
        ConfigurationError: ``prometheus_client`` is missing, or the address or port
            cannot be used.
    """
    if not 0 <= port <= 65535:
        raise ConfigurationError(
            f"metrics cannot be served on port {port}: a TCP port is 0 to 65535",
            fix="pick a free port from 1024 to 65535 with --metrics-port (0 picks one).",
        )
    collector = metrics.collector()  # raises first when prometheus_client is missing
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    # The HTTP server's modules load only for a job that serves its metrics.
    from ._metrics_server import METRICS_PATH, metrics_server

    try:
        server = metrics_server(registry, host, port)
    except OSError as exc:
        raise ConfigurationError(
            f"metrics cannot be served on {host} port {port}: {exc.strerror or exc}",
            fix="pick a free port with --metrics-port (0 picks one), and an address of "
            "this machine with --metrics-host.",
        ) from None
    thread = threading.Thread(target=server.serve_forever, name="vyre-metrics", daemon=True)
    thread.start()
    bound = int(server.server_port)
    _log.info("metrics_serving", url=f"http://{host}:{bound}{METRICS_PATH}")
    try:
        yield bound
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
