"""The server's figures for ``GET /metrics``, in the Prometheus text format.

The server counts its requests by graph, kind and status, and keeps histograms of
their latency and of its own time per request (everything but the query: routing,
the token check, decoding, validation and encoding). Each scrape adds the graphs'
batcher and session figures (queue depth, queue wait, lanes per batch, rejections,
time-outs; :func:`vyre_async.telemetry.telemetry_families`, labelled with the graph)
and each device's telemetry. No dependency: the text is written here and by
:func:`vyre_async.telemetry.render_prometheus`.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Sequence

from ..telemetry import MetricFamily, render_prometheus, telemetry_families
from ._host import GraphHost

PREFIX = "vyre_async"
#: Upper bounds (seconds) of the latency buckets: 50 us to 30 s.
LATENCY_BUCKETS = (
    5e-5,
    1e-4,
    2.5e-4,
    5e-4,
    1e-3,
    2.5e-3,
    5e-3,
    1e-2,
    2.5e-2,
    5e-2,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
#: Upper bounds (seconds) of the server's own time per request: 5 us to 25 ms.
OVERHEAD_BUCKETS = (5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 2.5e-2)

Labels = tuple[tuple[str, str], ...]


class Histogram:
    """A Prometheus histogram: counts per bucket, the sum and the count, per label set.

    Args:
        name: Its name (``_bucket``, ``_sum`` and ``_count`` are added).
        help: One line describing it.
        buckets: Ascending upper bounds; ``+Inf`` is added.
    """

    def __init__(self, name: str, help: str, buckets: Sequence[float]) -> None:
        self.name = name
        self.help = help
        self.buckets = tuple(buckets)
        self._counts: dict[Labels, list[int]] = {}
        self._sums: dict[Labels, float] = defaultdict(float)

    def observe(self, labels: Labels, value: float) -> None:
        """Count one observation of ``value`` under ``labels``."""
        counts = self._counts.get(labels)
        if counts is None:
            counts = self._counts[labels] = [0] * (len(self.buckets) + 1)
        counts[bisect.bisect_left(self.buckets, value)] += 1
        self._sums[labels] += value

    def lines(self) -> list[str]:
        """The exposition lines (none before the first observation)."""
        if not self._counts:
            return []
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        for labels, counts in sorted(self._counts.items()):
            pairs = [f'{key}="{_escaped(value)}"' for key, value in labels]
            cumulative = 0
            for bound, count in zip((*self.buckets, None), counts, strict=True):
                cumulative += count
                le = "+Inf" if bound is None else repr(bound)
                bucket = ",".join([*pairs, f'le="{le}"'])
                lines.append(f"{self.name}_bucket{{{bucket}}} {cumulative}")
            joined = ",".join(pairs)
            lines.append(f"{self.name}_sum{{{joined}}} {self._sums[labels]!r}")
            lines.append(f"{self.name}_count{{{joined}}} {cumulative}")
        return lines


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class ServeMetrics:
    """What the server counts per request, and the scrape's text."""

    def __init__(self) -> None:
        self._requests: dict[tuple[str, str, int], int] = defaultdict(int)
        self._queries: dict[tuple[str, str], int] = defaultdict(int)
        self._rejections: dict[tuple[str, str], int] = defaultdict(int)
        self.latency = Histogram(
            f"{PREFIX}_serve_request_seconds",
            "Query requests' time in the server, from routing to the encoded answer, seconds.",
            LATENCY_BUCKETS,
        )
        self.overhead = Histogram(
            f"{PREFIX}_serve_overhead_seconds",
            "The server's own time per query request (all but the query: token, decoding, "
            "validation, encoding), seconds.",
            OVERHEAD_BUCKETS,
        )

    def record(
        self,
        graph: str,
        kind: str,
        status: int,
        seconds: float,
        *,
        query_seconds: float | None = None,
        queries: int = 0,
    ) -> None:
        """Count one query request (``query_seconds``: time in the session, when it ran)."""
        self._requests[graph, kind, status] += 1
        labels = (("graph", graph), ("kind", kind))
        self.latency.observe(labels, seconds)
        if query_seconds is not None:
            self.overhead.observe(labels, max(seconds - query_seconds, 0.0))
        if queries:
            self._queries[graph, kind] += queries

    def reject(self, graph: str, reason: str) -> None:
        """Count one refused query request (``reason``: ``queue_full``, ``not_ready``...)."""
        self._rejections[graph, reason] += 1

    def text(self, host: GraphHost) -> str:
        """Everything, in the text exposition format."""
        families = [
            _counter(
                "serve_requests",
                "Query requests answered, by graph, kind and HTTP status.",
                (
                    ({"graph": g, "kind": k, "status": str(s)}, n)
                    for (g, k, s), n in sorted(self._requests.items())
                ),
            ),
            _counter(
                "serve_queries",
                "Queries answered (a batch request counts each of its sources).",
                (({"graph": g, "kind": k}, n) for (g, k), n in sorted(self._queries.items())),
            ),
            _counter(
                "serve_rejections",
                "Query requests refused before they ran: queue_full (429), not_ready, "
                "draining (503), timeout (504).",
                (({"graph": g, "reason": r}, n) for (g, r), n in sorted(self._rejections.items())),
            ),
            *_graph_families(host),
            *_device_families(host),
        ]
        text = render_prometheus(f for f in families if f.samples)
        histograms = [*self.latency.lines(), *self.overhead.lines()]
        return text + ("\n".join(histograms) + "\n" if histograms else "")


def _counter(name: str, help: str, samples: Iterable[tuple[dict[str, str], float]]) -> MetricFamily:
    return MetricFamily(f"{PREFIX}_{name}", "counter", help, tuple(samples))


def _graph_families(host: GraphHost) -> list[MetricFamily]:
    """Each graph's state, and its session's and batcher's figures labelled with it."""
    ready: list[tuple[dict[str, str], float]] = []
    merged: dict[str, MetricFamily] = {}
    group = host.group
    device_names = (
        set() if group is None else {f.name for f in telemetry_families(group.telemetry())}
    )
    for graph in host.graphs.values():
        labels = {"graph": graph.name}
        current = graph.current
        ready.append((labels, 1 if current is not None and graph.state == "ready" else 0))
        if current is None or group is None:
            continue
        session = current.session
        for family in telemetry_families(
            group.telemetry(),
            batches=session.batch_stats(),
            session=session.stats(),
            prefix=PREFIX,
        ):
            if family.name in device_names:
                continue
            samples = tuple((labels, value) for _, value in family.samples)
            known = merged.get(family.name)
            merged[family.name] = (
                family._replace(samples=samples)
                if known is None
                else known._replace(samples=known.samples + samples)
            )
    state = MetricFamily(
        f"{PREFIX}_serve_graph_ready", "gauge", "1 while the graph answers queries.", tuple(ready)
    )
    return [state, *merged.values()]


def _device_families(host: GraphHost) -> list[MetricFamily]:
    """Each device's telemetry, labelled with its place in the group."""
    group = host.group
    if group is None:
        return []
    merged: dict[str, MetricFamily] = {}
    for index, backend in enumerate(group.backends):
        for family in telemetry_families(backend.telemetry(), prefix=PREFIX):
            samples = tuple(({**labels, "index": str(index)}, v) for labels, v in family.samples)
            known = merged.get(family.name)
            merged[family.name] = (
                family._replace(samples=samples)
                if known is None
                else known._replace(samples=known.samples + samples)
            )
    return list(merged.values())
