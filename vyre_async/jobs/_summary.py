"""What a run of a job reports: printed at its end and written to ``summary.json``."""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class JobSummary(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a run did; printed at the end and written to ``<out>/summary.json``.

    Attributes:
        job: The job's name.
        status: ``"complete"``, ``"interrupted"`` (a signal) or ``"failed"``.
        exit_code: 0, 1 (failed), 130 (SIGINT) or 143 (SIGTERM).
        message: One line saying how the run ended.
        output: The output folder.
        job_file: The job file, as an absolute path.
        version: The vyre_async version that ran it.
        started_at: When the run started (UTC, ISO 8601).
        backend: Backend kind the items ran on.
        device: Its device name.
        items_total: Items of the whole job.
        items_committed: Items committed in the folder, by every run so far.
        items_this_run: Items this run committed.
        items_skipped: Items earlier runs had committed (``--resume``).
        items_failed: Failed items committed in the folder.
        retries: Retries this run made.
        reopens: Times this run reopened a lost device.
        seconds: Wall seconds of this run.
        items_per_s: Items this run committed per second.
        telemetry: The last backend's telemetry snapshot.
        batches: The last session's batcher statistics.
    """

    job: str
    status: Literal["complete", "interrupted", "failed"]
    exit_code: int
    message: str
    output: str
    job_file: str
    version: str
    started_at: str
    backend: str
    device: str
    items_total: int
    items_committed: int
    items_this_run: int
    items_skipped: int
    items_failed: int
    retries: int
    reopens: int
    seconds: float
    items_per_s: float
    telemetry: dict[str, Any] | None
    batches: dict[str, Any] | None
