"""What a run of a job reports: printed at its end and written to ``summary.json``."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any, Literal

import msgspec

from ._signals import exit_code

#: Exit codes of a run: success, a failed job; signals: see _signals.
EXIT_OK, EXIT_FAILED = 0, 1

#: How a run ended.
Status = Literal["complete", "interrupted", "failed"]


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
        seconds: Wall seconds of this run, from its start (before the backend
            opens and the graph is prepared) to its summary (monotonic clock).
        items_per_s: ``items_this_run / seconds``.
        telemetry: The last backend's telemetry snapshot.
        batches: The last session's batcher statistics.
    """

    job: str
    status: Status
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


def how_it_ended(
    *,
    committed: int,
    total: int,
    failed: int,
    stopped: Literal["interrupted", "failed"] | None,
    stop_message: str,
    signum: int | None,
    chunks: Path,
) -> tuple[Status, int, str]:
    """The status, exit code and one-line message of a run that has finished its work.

    Args:
        committed: Items committed in the folder, by every run so far.
        total: Items of the whole job.
        failed: Failed items among the committed ones.
        stopped: Why the run stopped admitting work early, if it did.
        stop_message: What stopped it.
        signum: The signal that interrupted it, if one did.
        chunks: The folder the records are committed to.
    """
    complete = committed == total
    if stopped == "interrupted" and not complete:
        return (
            "interrupted",
            exit_code(signum or signal.SIGINT),
            f"{stop_message}: {committed} of {total} items committed; resume with --resume",
        )
    if stopped == "failed":
        return "failed", EXIT_FAILED, f"job stopped: {stop_message}"
    if not complete:  # every block was run, yet not every item committed
        return (
            "failed",
            EXIT_FAILED,
            f"only {committed} of {total} items were committed; "
            "resume with --resume to run the rest",
        )
    return "complete", EXIT_OK, f"{committed} items ({failed} failed) committed to {chunks}"
