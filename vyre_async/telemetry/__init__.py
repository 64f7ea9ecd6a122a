"""Telemetry: live counters, frozen snapshots, and the same figures as Prometheus metrics.

A backend counts what it does (dispatches, launches, bytes, syncs, time) in
:class:`TelemetryCounters`; ``backend.telemetry()`` returns a frozen
:class:`TelemetrySnapshot`. :func:`to_prometheus_text` renders one in the text
exposition format, and :func:`prometheus_collector` serves live figures to a
``prometheus_client`` registry.
"""

from ._prometheus import MetricFamily as MetricFamily
from ._prometheus import prometheus_collector as prometheus_collector
from ._prometheus import render_prometheus as render_prometheus
from ._prometheus import telemetry_families as telemetry_families
from ._prometheus import to_prometheus_text as to_prometheus_text
from ._snapshot import Activity as Activity
from ._snapshot import TelemetryCounters as TelemetryCounters
from ._snapshot import TelemetrySnapshot as TelemetrySnapshot

__all__ = [
    "Activity",
    "MetricFamily",
    "TelemetryCounters",
    "TelemetrySnapshot",
    "prometheus_collector",
    "render_prometheus",
    "telemetry_families",
    "to_prometheus_text",
]
