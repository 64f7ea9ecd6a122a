"""Telemetry: live counters, frozen snapshots, and the same figures as Prometheus metrics.

A backend counts what it does (dispatches, launches, bytes, syncs, time) in
:class:`TelemetryCounters`; ``backend.telemetry()`` returns a frozen
:class:`TelemetrySnapshot`. :func:`to_prometheus_text` renders one in the text
exposition format, and :func:`prometheus_collector` serves live figures to a
``prometheus_client`` registry. A :class:`StartupTimeline` records when each stage of
a start-up ended (a job's: from the process's start to its first commit).
"""

from ._prometheus import MetricFamily as MetricFamily
from ._prometheus import prometheus_collector as prometheus_collector
from ._prometheus import render_prometheus as render_prometheus
from ._prometheus import telemetry_families as telemetry_families
from ._prometheus import to_prometheus_text as to_prometheus_text
from ._snapshot import Activity as Activity
from ._snapshot import TelemetryCounters as TelemetryCounters
from ._snapshot import TelemetrySnapshot as TelemetrySnapshot
from ._startup import StartupStage as StartupStage
from ._startup import StartupTimeline as StartupTimeline
from ._startup import process_started_at as process_started_at
from ._startup import recording_startup as recording_startup
from ._startup import startup_stage as startup_stage

__all__ = [
    "Activity",
    "MetricFamily",
    "StartupStage",
    "StartupTimeline",
    "TelemetryCounters",
    "TelemetrySnapshot",
    "process_started_at",
    "prometheus_collector",
    "recording_startup",
    "render_prometheus",
    "startup_stage",
    "telemetry_families",
    "to_prometheus_text",
]
