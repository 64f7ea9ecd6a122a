"""Prometheus metrics: telemetry, batcher and session figures as metric families.

Families render to the text exposition format without any dependency
(:func:`render_prometheus`); :func:`prometheus_collector` hands them to
``prometheus_client`` (the optional ``metrics`` extra) for its registries and HTTP
server. Times are exported in seconds and counters end in ``_total``, as Prometheus
expects.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import msgspec

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ._snapshot import TelemetrySnapshot

_Kind = Literal["counter", "gauge"]
#: Field -> (metric name after the prefix, kind, help, factor). Times are kept in
#: nanoseconds and exported in seconds, as Prometheus expects; a counter's
#: exposition name ends in ``_total``.
_Table = dict[str, tuple[str, _Kind, str, float]]
_NS = 1e-9

_TELEMETRY: _Table = {
    "dispatches": ("dispatches", "counter", "Kernel dispatches and sequences submitted.", 1),
    "kernel_launches": ("kernel_launches", "counter", "Individual kernel launches.", 1),
    "bytes_uploaded": ("bytes_uploaded", "counter", "Host-to-device bytes.", 1),
    "bytes_downloaded": ("bytes_downloaded", "counter", "Device-to-host bytes.", 1),
    "sync_points": ("sync_points", "counter", "Host waits on device work.", 1),
    "resident_allocations": (
        "resident_allocations",
        "counter",
        "Allocations made for resident memory.",
        1,
    ),
    "resident_buffers_live": (
        "resident_buffers_live",
        "gauge",
        "Resident buffers not yet freed.",
        1,
    ),
    "resident_bytes_live": (
        "resident_bytes_live",
        "gauge",
        "Bytes of resident buffers not yet freed.",
        1,
    ),
    "wall_ns_total": (
        "wall_seconds",
        "counter",
        "Sum of measured dispatches' times from submit to outputs (overlapping ones each "
        "count), seconds.",
        _NS,
    ),
    "device_ns_total": (
        "device_seconds",
        "counter",
        "Sum of measured dispatches' device times (CUDA events; CPU: the references' run "
        "in a worker), seconds.",
        _NS,
    ),
    "enqueue_ns_total": (
        "enqueue_seconds",
        "counter",
        "Sum of measured dispatches' times inside submit, seconds.",
        _NS,
    ),
    "wait_ns_total": (
        "wait_seconds",
        "counter",
        "Sum of the times awaiting tasks waited for measured dispatches, seconds.",
        _NS,
    ),
    "pool_hits": ("pool_hits", "counter", "Device-memory pool cache hits.", 1),
    "pool_misses": ("pool_misses", "counter", "Device-memory pool allocations.", 1),
    "pinned_bytes": ("pinned_bytes", "gauge", "Page-locked host staging bytes held.", 1),
    "streams_cached": ("streams_cached", "gauge", "Idle streams cached.", 1),
    "events_cached": ("events_cached", "gauge", "Idle events cached.", 1),
    "graphs_captured": (
        "graphs_captured",
        "counter",
        "Repeated sequence bodies captured as CUDA graphs.",
        1,
    ),
    "graph_replays": (
        "graph_replays",
        "counter",
        "Submissions that replayed a captured body in one launch.",
        1,
    ),
}

#: A dynamic batcher's figures (``vyre_async.sessions.BatcherStats``).
_BATCHER: _Table = {
    "submitted": ("batcher_submitted", "counter", "Batcher requests past argument checks.", 1),
    "served": ("batcher_served", "counter", "Batcher requests that got their result.", 1),
    "failed": ("batcher_failed", "counter", "Batcher requests that raised an error.", 1),
    "rejected": ("batcher_rejected", "counter", "Batcher requests refused for room.", 1),
    "timed_out": ("batcher_timed_out", "counter", "Batcher requests that timed out.", 1),
    "cancelled": ("batcher_cancelled", "counter", "Batcher requests cancelled.", 1),
    "queued": ("batcher_queued", "gauge", "Requests in the batcher's queue now.", 1),
    "in_flight": ("batcher_in_flight", "gauge", "Batches running now.", 1),
    "batches": ("batcher_batches", "counter", "Batches finished.", 1),
    "batches_failed": ("batcher_batches_failed", "counter", "Batches that failed.", 1),
    "lanes_mean": ("batcher_lanes_mean", "gauge", "Mean lanes (queries) per batch.", 1),
    "lanes_max": ("batcher_lanes_max", "gauge", "Most lanes any batch used.", 1),
    "queue_wait_p50_s": (
        "batcher_queue_wait_p50_seconds",
        "gauge",
        "Median queue wait of recent requests, seconds.",
        1,
    ),
    "queue_wait_p95_s": (
        "batcher_queue_wait_p95_seconds",
        "gauge",
        "95th percentile queue wait of recent requests, seconds.",
        1,
    ),
}

#: A resident-graph session's figures (``vyre_async.sessions.SessionStats``).
_SESSION: _Table = {
    "graph_bytes_uploaded": (
        "session_graph_bytes_uploaded",
        "counter",
        "Bytes the graph's upload moved to the devices.",
        1,
    ),
    "graph_allocations": (
        "session_graph_allocations",
        "counter",
        "Device allocations of the graph's upload.",
        1,
    ),
    "runs": ("session_runs", "counter", "Analyses run on the resident graph.", 1),
    "uploads_avoided": ("session_uploads_avoided", "counter", "Graph uploads runs avoided.", 1),
    "bytes_not_reuploaded": (
        "session_bytes_not_reuploaded",
        "counter",
        "Graph bytes runs did not upload again.",
        1,
    ),
    "allocations_avoided": (
        "session_allocations_avoided",
        "counter",
        "Scratch buffer sets reused instead of allocated.",
        1,
    ),
    "bytes_uploaded_by_runs": (
        "session_bytes_uploaded_by_runs",
        "counter",
        "Bytes the runs themselves uploaded.",
        1,
    ),
    "host_syncs": ("session_host_syncs", "counter", "Host synchronisations of all runs.", 1),
    "levels": ("session_levels", "counter", "Levels or iterations the runs ran.", 1),
    "host_syncs_per_run": ("session_host_syncs_per_run", "gauge", "Host syncs per run.", 1),
    "host_syncs_per_level": ("session_host_syncs_per_level", "gauge", "Host syncs per level.", 1),
    "kernel_launches": ("session_kernel_launches", "counter", "Kernel launches of all runs.", 1),
    "wall_ns": (
        "session_wall_seconds",
        "counter",
        "Sum of runs' times as their callers saw them (overlapping runs each count), seconds.",
        _NS,
    ),
    "device_ns": ("session_device_seconds", "counter", "Sum of runs' device times, seconds.", _NS),
    "host_overhead_ns_per_level": (
        "session_host_overhead_seconds_per_level",
        "gauge",
        "Runs' wall time less device time, per level, seconds.",
        _NS,
    ),
    "devices": ("session_devices", "gauge", "Devices holding a replica of the graph.", 1),
    "devices_lost": ("session_devices_lost", "counter", "Devices taken out after a loss.", 1),
}


class MetricFamily(NamedTuple):
    """One metric with its samples, ready for Prometheus.

    Attributes:
        name: Full name without a counter's ``_total`` (``vyre_async_wall_seconds``).
        kind: ``"counter"`` or ``"gauge"``.
        help: One line describing it.
        samples: ``(labels, value)`` pairs.
    """

    name: str
    kind: _Kind
    help: str
    samples: tuple[tuple[dict[str, str], float], ...]


def _families_of(
    table: _Table, source: object, prefix: str, labels: dict[str, str]
) -> list[MetricFamily]:
    return [
        MetricFamily(
            f"{prefix}_{name}",
            kind,
            text,
            ((labels, getattr(source, field) * factor if factor != 1 else getattr(source, field)),),
        )
        for field, (name, kind, text, factor) in table.items()
    ]


def telemetry_families(
    snapshot: TelemetrySnapshot,
    *,
    batches: msgspec.Struct | None = None,
    session: msgspec.Struct | None = None,
    prefix: str = "vyre_async",
) -> list[MetricFamily]:
    """A backend's telemetry, and optionally a session's figures, as metric families.

    Args:
        snapshot: The backend's telemetry snapshot.
        batches: A session's batcher statistics (``session.batch_stats()``).
        session: A session's statistics (``session.stats()``).
        prefix: Metric name prefix.

    Returns:
        The families, each sample labelled with the backend and device.
    """
    labels = {"backend": snapshot.backend, "device": snapshot.device}
    families = _families_of(_TELEMETRY, snapshot, prefix, labels)
    if batches is not None:
        families += _families_of(_BATCHER, batches, prefix, labels)
    if session is not None:
        families += _families_of(_SESSION, session, prefix, labels)
    return families


def _label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _sample_value(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render_prometheus(families: Iterable[MetricFamily]) -> str:
    """Metric families in the Prometheus text exposition format (version 0.0.4).

    Returns:
        The exposition text, ending with a newline (empty for no families).
    """
    lines: list[str] = []
    for family in families:
        metric = family.name + ("_total" if family.kind == "counter" else "")
        text = family.help.replace("\\", "\\\\").replace("\n", "\\n")
        lines.append(f"# HELP {metric} {text}")
        lines.append(f"# TYPE {metric} {family.kind}")
        for labels, value in family.samples:
            pairs = ",".join(f'{key}="{_label_value(val)}"' for key, val in labels.items())
            lines.append(
                f"{metric}{{{pairs}}} {_sample_value(value)}"
                if pairs
                else f"{metric} {_sample_value(value)}"
            )
    return "\n".join(lines) + "\n" if lines else ""


def to_prometheus_text(
    snapshot: TelemetrySnapshot,
    *,
    batches: msgspec.Struct | None = None,
    session: msgspec.Struct | None = None,
    prefix: str = "vyre_async",
) -> str:
    """Render a snapshot (and a session's figures) in the Prometheus text format.

    Times are in seconds (``vyre_async_wall_seconds_total``); counters end in
    ``_total``; every sample carries ``backend`` and ``device`` labels.

    Args:
        snapshot: The backend's telemetry snapshot.
        batches: A session's batcher statistics (``session.batch_stats()``), exported
            as ``<prefix>_batcher_*``.
        session: A session's statistics (``session.stats()``), exported as
            ``<prefix>_session_*``.
        prefix: Metric name prefix.

    Returns:
        The exposition text, ending with a newline.
    """
    return render_prometheus(
        telemetry_families(snapshot, batches=batches, session=session, prefix=prefix)
    )


def prometheus_collector(families: Callable[[], Iterable[MetricFamily]]) -> Any:
    """A ``prometheus_client`` collector that reports ``families()`` at each scrape.

    ``prometheus_client`` is an optional dependency (the ``metrics`` extra) and is
    imported only here. Register the collector with a registry
    (``prometheus_client.REGISTRY.register(collector)``); ``families`` is called in
    the scraping thread, so it must be safe to call from any thread.

    Args:
        families: Returns the metric families as they are now.

    Returns:
        The collector.

    Raises:
        ConfigurationError: ``prometheus_client`` is not installed.
    """
    try:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
    except ImportError:
        raise ConfigurationError(
            "the Prometheus collector needs the prometheus_client package, which is not installed",
            fix="pip install 'vyre-async[metrics]' (or prometheus-client>=0.20).",
        ) from None

    class TelemetryCollector:
        def collect(self) -> Iterator[Any]:
            for family in families():
                names = sorted({key for labels, _ in family.samples for key in labels})
                made: Any = (
                    CounterMetricFamily(family.name, family.help, labels=names)
                    if family.kind == "counter"
                    else GaugeMetricFamily(family.name, family.help, labels=names)
                )
                for labels, value in family.samples:
                    made.add_metric([labels.get(name, "") for name in names], value)
                yield made

    return TelemetryCollector()
