"""A job run in a child process, for the kill and signal tests.

The runner exactly as the CLI sets it up (signals handled), except that each block
first sleeps ``VYRE_TEST_BLOCK_DELAY`` seconds, so that kills and signals land while
items are in flight whatever the machine's speed.

Usage: ``python tests/job_child.py JOB_FILE OUT_DIR [--resume]``; prints the summary
as JSON and exits with its exit code.
"""

from __future__ import annotations

import os
import sys

import anyio
import msgspec
import numpy as np

from vyre_async import configure_logging
from vyre_async.jobs import BlockResult, JobRunner, WorkloadSection, execute_block, load_job
from vyre_async.sessions import ResidentGraphSession

DELAY = float(os.environ.get("VYRE_TEST_BLOCK_DELAY", "0.01"))


async def slowed(
    session: ResidentGraphSession, workload: WorkloadSection, sources: np.ndarray
) -> BlockResult:
    """Sleep, then run the block as the CLI would."""
    await anyio.sleep(DELAY)
    return await execute_block(session, workload, sources)


def main() -> int:
    """Run the job; return its exit code."""
    job, out = sys.argv[1], sys.argv[2]
    spec = load_job(job)
    configure_logging(spec.logging.format, level=spec.logging.level)  # as the CLI does
    runner = JobRunner(
        spec,
        job_file=job,
        out=out,
        resume="--resume" in sys.argv,
        execute=slowed,
        handle_signals=True,
    )
    summary = anyio.run(runner.run)
    print(msgspec.json.encode(summary).decode(), flush=True)
    return summary.exit_code


if __name__ == "__main__":
    sys.exit(main())
