"""Live counters and the frozen snapshots taken of them.

Counters are plain integers updated on the event-loop thread (or under the backend's
own lock); a snapshot copies them into a frozen msgspec struct, so it is cheap to
take, safe to keep and encodes to JSON without help.
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec

__all__ = ["Activity", "TelemetryCounters", "TelemetrySnapshot"]


class Activity(NamedTuple):
    """The activity counters a run's statistics are deltas of, read in one step.

    :meth:`Backend.activity` returns these without building a full
    :class:`TelemetrySnapshot` (which also gathers the memory-pool gauges): a
    resident traversal takes one before and one after each run, and on an H200 host
    the two snapshots were about 16 µs of a 7-level traversal's ~110 µs of host time.
    """

    sync_points: int
    kernel_launches: int
    bytes_uploaded: int


class TelemetrySnapshot(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Counters of one backend at one moment.

    Attributes:
        backend: ``"cuda"`` or ``"cpu"``.
        device: Human name of the device.
        dispatches: Kernel dispatches and sequences submitted.
        kernel_launches: Individual kernel launches (fixpoint iterations and sequence
            steps each count).
        bytes_uploaded: Host-to-device bytes.
        bytes_downloaded: Device-to-host bytes.
        sync_points: Times the host waited for the device (one per awaited dispatch,
            read, or sequence, however many launches it held).
        resident_allocations: Allocations made for resident memory (``upload``,
            ``alloc``, and one per ``upload_group``).
        resident_buffers_live: Resident buffers allocated and not yet freed.
        resident_bytes_live: Their bytes.
        wall_ns_total: Sum, over the work whose time is measured, of each piece's
            time from the start of its submit to its outputs in host arrays: pending
            dispatches awaited (``submit``; on the CPU backend every awaited
            dispatch), prepared sequences' ``run`` and the session traversals built
            on them. On the CUDA backend a plain ``await dispatch(...)`` reads no
            clock, so it adds nothing here (it counts in ``dispatches``). Work in
            flight together each counts its whole time, so this grows up to as many
            times faster than the clock as pieces are in flight.
        device_ns_total: Sum of the measured work's device times: on CUDA the time
            between timing events around the work on its stream (where timing was
            asked for); on the CPU backend the time the kernels' references ran in a
            worker thread, not the time the work waited for a worker. It is at most
            the elapsed time times the streams (CUDA) or worker threads (CPU).
        enqueue_ns_total: Sum of the measured work's time inside ``submit``.
        wait_ns_total: Sum of the time awaiting tasks waited for the measured work
            (the copy of its outputs included): at most the elapsed time times the
            tasks awaiting at once.
        pool_hits: Device-memory pool requests served from the cache (CUDA).
        pool_misses: Device-memory pool requests that allocated (CUDA).
        pinned_bytes: Page-locked host staging bytes held (CUDA).
        streams_cached: Idle streams kept for reuse (CUDA).
        events_cached: Idle events kept for reuse (CUDA).
        graphs_captured: Repeated sequence bodies captured as CUDA graphs (CUDA).
        graph_replays: Submissions that replayed a captured body with one launch (CUDA).
    """

    backend: str
    device: str
    dispatches: int = 0
    kernel_launches: int = 0
    bytes_uploaded: int = 0
    bytes_downloaded: int = 0
    sync_points: int = 0
    resident_allocations: int = 0
    resident_buffers_live: int = 0
    resident_bytes_live: int = 0
    wall_ns_total: int = 0
    device_ns_total: int = 0
    enqueue_ns_total: int = 0
    wait_ns_total: int = 0
    pool_hits: int = 0
    pool_misses: int = 0
    pinned_bytes: int = 0
    streams_cached: int = 0
    events_cached: int = 0
    graphs_captured: int = 0
    graph_replays: int = 0


class TelemetryCounters:
    """Mutable counters behind :meth:`Backend.telemetry`.

    Resident-buffer gauges are not reset by :meth:`reset`: they describe memory that
    is still held, not activity since the last reset.
    """

    _RESETTABLE = (
        "dispatches",
        "kernel_launches",
        "bytes_uploaded",
        "bytes_downloaded",
        "sync_points",
        "resident_allocations",
        "wall_ns_total",
        "device_ns_total",
        "enqueue_ns_total",
        "wait_ns_total",
        "pool_hits",
        "pool_misses",
    )

    def __init__(self) -> None:
        #: Awaited dispatches of one launch and nothing else: each counts as a
        #: dispatch, a kernel launch and a sync point. The hot path updates this one
        #: counter instead of those three; reads add it to them.
        self.awaited_launches = 0
        self.dispatches = 0
        self.kernel_launches = 0
        self.bytes_uploaded = 0
        self.bytes_downloaded = 0
        self.sync_points = 0
        self.resident_allocations = 0
        self.resident_buffers_live = 0
        self.resident_bytes_live = 0
        self.wall_ns_total = 0
        self.device_ns_total = 0
        self.enqueue_ns_total = 0
        self.wait_ns_total = 0
        self.pool_hits = 0
        self.pool_misses = 0

    def reset(self) -> None:
        """Zero the activity counters (gauges of live memory are kept)."""
        for name in self._RESETTABLE:
            setattr(self, name, 0)
        self.awaited_launches = 0

    def activity(self) -> Activity:
        """The counters :class:`Activity` holds, as they are now."""
        awaited = self.awaited_launches
        return Activity(
            self.sync_points + awaited, self.kernel_launches + awaited, self.bytes_uploaded
        )

    def snapshot(self, *, backend: str, device: str, **gauges: int) -> TelemetrySnapshot:
        """Freeze the counters, plus backend-specific gauges (pinned bytes, caches)."""
        fields = {name: getattr(self, name) for name in self._RESETTABLE}
        for name in ("dispatches", "kernel_launches", "sync_points"):
            fields[name] += self.awaited_launches
        fields["resident_buffers_live"] = self.resident_buffers_live
        fields["resident_bytes_live"] = self.resident_bytes_live
        fields.update(gauges)
        return TelemetrySnapshot(backend=backend, device=device, **fields)
