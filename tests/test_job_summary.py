"""How a run's end is told: status, exit code and message from what was committed."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Literal

import pytest

from vyre_async.jobs.runner._summary import how_it_ended

CHUNKS = Path("out") / "chunks"


@pytest.mark.parametrize(
    ("committed", "stopped", "signum", "status", "code", "says"),
    [
        (5, None, None, "complete", 0, f"5 items (1 failed) committed to {CHUNKS}"),
        (3, None, None, "failed", 1, "only 3 of 5 items were committed"),
        (3, "interrupted", signal.SIGTERM, "interrupted", 143, "3 of 5 items committed"),
        (3, "interrupted", None, "interrupted", 130, "resume with --resume"),
        # The signal came after the last commit: nothing is left to resume.
        (5, "interrupted", signal.SIGINT, "complete", 0, "5 items (1 failed)"),
        (5, "failed", None, "failed", 1, "job stopped: too many failures"),
    ],
)
def test_a_run_ends_with_the_status_and_code_of_what_it_committed(
    committed: int,
    stopped: Literal["interrupted", "failed"] | None,
    signum: int | None,
    status: str,
    code: int,
    says: str,
) -> None:
    message = "too many failures" if stopped == "failed" else "interrupted by SIGTERM"
    got = how_it_ended(
        committed=committed,
        total=5,
        failed=1,
        stopped=stopped,
        stop_message=message,
        signum=signum,
        chunks=CHUNKS,
    )
    assert got[0] == status
    assert got[1] == code
    assert says in got[2]
