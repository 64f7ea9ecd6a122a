"""Evidence that a resident session avoids work, measured from telemetry deltas."""

from __future__ import annotations

import msgspec

from ..telemetry import Activity


class SessionStats(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a resident-graph session did and avoided, from the backend's counters.

    Every field is a difference of the backend's counters (a telemetry snapshot
    around the upload, :meth:`~vyre_async.Backend.activity` around each run), not a
    constant: a session that re-uploaded or synced per level
    would show it here.

    Attributes:
        graph_bytes_uploaded: Bytes the upload of the graph moved to the devices (one
            copy per device).
        graph_allocations: Device allocations the upload made (one slab per device).
        runs: Analyses run on the resident graph.
        uploads_avoided: Graph uploads the runs did not need (one per run).
        bytes_not_reuploaded: One copy of the graph's bytes times ``runs``.
        allocations_avoided: Scratch buffer sets reused instead of allocated again.
        bytes_uploaded_by_runs: Bytes the runs themselves uploaded: small state, and
            on each device's first PageRank its shares order (4 bytes per vertex).
        host_syncs: Host synchronisations of all runs.
        levels: BFS levels (or PageRank iterations) all runs executed on the device.
        host_syncs_per_run: ``host_syncs / runs``.
        host_syncs_per_level: ``host_syncs / levels``: below 1 means the host did not
            wait for every level.
        kernel_launches: Kernel launches of all runs.
        wall_ns: Sum of the runs' times from start to result, as their callers saw
            them; runs that overlap each count their whole time.
        device_ns: Sum of the runs' device times (timing events around each batch on
            CUDA; the references' run in a worker thread on the CPU backend), at
            most ``wall_ns``.
        host_overhead_ns_per_level: ``(wall_ns - device_ns) / levels``: what the host
            adds per level (submission, waits, readback of the result, and for
            overlapping runs the time one waited for another).
        devices: Devices holding a replica of the graph.
        devices_lost: Devices taken out after a device-lost error.
    """

    graph_bytes_uploaded: int
    graph_allocations: int
    runs: int
    uploads_avoided: int
    bytes_not_reuploaded: int
    allocations_avoided: int
    bytes_uploaded_by_runs: int
    host_syncs: int
    levels: int
    host_syncs_per_run: float
    host_syncs_per_level: float
    kernel_launches: int
    wall_ns: int
    device_ns: int
    host_overhead_ns_per_level: float
    devices: int = 1
    devices_lost: int = 0


class RunCounters:
    """Totals the session accumulates from per-run telemetry deltas."""

    def __init__(self) -> None:
        self.runs = 0
        self.levels = 0
        self.host_syncs = 0
        self.bytes_uploaded = 0
        self.kernel_launches = 0
        self.scratch_reused = 0
        self.wall_ns = 0
        self.device_ns = 0

    def add_run(
        self,
        before: Activity,
        after: Activity,
        levels: int,
        wall_ns: int,
        device_ns: int,
    ) -> None:
        """Record one run from the activity counters read just before and after it.

        Runs that overlap in time share the backend's counters; each then also counts
        the others' activity in its window, so totals are exact for sequential runs
        and an upper bound for concurrent ones.
        """
        self.runs += 1
        self.levels += levels
        self.host_syncs += after.sync_points - before.sync_points
        self.bytes_uploaded += after.bytes_uploaded - before.bytes_uploaded
        self.kernel_launches += after.kernel_launches - before.kernel_launches
        self.wall_ns += wall_ns
        self.device_ns += device_ns

    def stats(
        self,
        graph_bytes: int,
        graph_allocations: int,
        *,
        copy_bytes: int | None = None,
        devices: int = 1,
        devices_lost: int = 0,
    ) -> SessionStats:
        """Freeze the totals (``copy_bytes``: one device's copy, default ``graph_bytes``)."""
        one_copy = graph_bytes if copy_bytes is None else copy_bytes
        return SessionStats(
            graph_bytes_uploaded=graph_bytes,
            graph_allocations=graph_allocations,
            runs=self.runs,
            uploads_avoided=self.runs,
            bytes_not_reuploaded=one_copy * self.runs,
            allocations_avoided=self.scratch_reused,
            bytes_uploaded_by_runs=self.bytes_uploaded,
            host_syncs=self.host_syncs,
            levels=self.levels,
            host_syncs_per_run=self.host_syncs / self.runs if self.runs else 0.0,
            host_syncs_per_level=self.host_syncs / self.levels if self.levels else 0.0,
            kernel_launches=self.kernel_launches,
            wall_ns=self.wall_ns,
            device_ns=self.device_ns,
            host_overhead_ns_per_level=(
                (self.wall_ns - self.device_ns) / self.levels if self.levels else 0.0
            ),
            devices=devices,
            devices_lost=devices_lost,
        )
