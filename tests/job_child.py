"""A job run in a child process, for the kill and signal tests.

The runner exactly as the CLI sets it up (signals handled), except for these test
hooks, set through the environment so that kills and signals land where the tests
want them whatever the machine's speed:

- ``VYRE_TEST_BLOCK_DELAY``: each block first sleeps this many seconds (cancellable).
- ``VYRE_TEST_STALL_AFTER`` / ``VYRE_TEST_STALL_S``: after that many blocks, each
  block waits this long in a worker thread first, which cancellation cannot stop
  (like a long kernel on the CPU backend).
- ``VYRE_TEST_VERIFY_DELAY``: a resume's check of each committed array sleeps this
  long first; ``verifying`` is printed to standard error before the first one.
- ``VYRE_TEST_SUMMARY_DELAY``: writing the summary sleeps this long first; ``writing
  summary`` is printed to standard error before it.
- ``VYRE_TEST_CPU_FREE_BYTES``: the CPU backends report this much free memory (a group
  of them shares it), so that a job's graph fits no device and is split.

Usage: ``python tests/job_child.py JOB_FILE OUT_DIR [--resume]``; prints the summary
as JSON (also when the runner ends the process itself) and exits with its exit code.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import anyio
import msgspec
import numpy as np

from vyre_async import configure_logging
from vyre_async.backends import CpuBackend
from vyre_async.jobs import (
    BlockResult,
    JobRunner,
    JobSummary,
    WorkloadSection,
    execute_block,
    load_job,
)
from vyre_async.jobs.output import _store as store_module
from vyre_async.jobs.output import _verify as verify_module
from vyre_async.sessions import ResidentGraphSession

DELAY = float(os.environ.get("VYRE_TEST_BLOCK_DELAY", "0.01"))
STALL_AFTER = int(os.environ.get("VYRE_TEST_STALL_AFTER", "-1"))
STALL_S = float(os.environ.get("VYRE_TEST_STALL_S", "0"))
VERIFY_DELAY = float(os.environ.get("VYRE_TEST_VERIFY_DELAY", "0"))
SUMMARY_DELAY = float(os.environ.get("VYRE_TEST_SUMMARY_DELAY", "0"))
CPU_FREE_BYTES = int(os.environ.get("VYRE_TEST_CPU_FREE_BYTES", "0"))
_blocks = {"started": 0}


async def slowed(
    session: ResidentGraphSession, workload: WorkloadSection, sources: np.ndarray
) -> BlockResult:
    """Sleep (or stall in a thread), then run the block as the CLI would."""
    _blocks["started"] += 1
    if 0 <= STALL_AFTER < _blocks["started"]:
        await anyio.to_thread.run_sync(time.sleep, STALL_S)
    await anyio.sleep(DELAY)
    return await execute_block(session, workload, sources)


def _slow_down_verification() -> None:
    verify = verify_module.verify_array
    said = []

    def slow(*args: Any) -> None:
        if not said:
            print("verifying", file=sys.stderr, flush=True)
            said.append(True)
        time.sleep(VERIFY_DELAY)
        verify(*args)

    verify_module.verify_array = slow


def _slow_down_the_summary() -> None:
    write = store_module.ResultStore.write_summary

    def slow(self: store_module.ResultStore, summary: msgspec.Struct) -> None:
        print("writing summary", file=sys.stderr, flush=True)
        time.sleep(SUMMARY_DELAY)
        write(self, summary)

    store_module.ResultStore.write_summary = slow  # type: ignore[method-assign]


def _scarce_cpu_memory() -> None:
    async def free_memory(self: CpuBackend) -> int:
        return CPU_FREE_BYTES

    CpuBackend.free_memory = free_memory  # type: ignore[method-assign]


def _print(summary: JobSummary) -> None:
    print(msgspec.json.encode(summary).decode(), flush=True)


def main() -> int:
    """Run the job; return its exit code."""
    job, out = sys.argv[1], sys.argv[2]
    spec = load_job(job)
    configure_logging(spec.logging.format, level=spec.logging.level)  # as the CLI does
    if VERIFY_DELAY:
        _slow_down_verification()
    if SUMMARY_DELAY:
        _slow_down_the_summary()
    if CPU_FREE_BYTES:
        _scarce_cpu_memory()
    runner = JobRunner(
        spec,
        job_file=job,
        out=out,
        resume="--resume" in sys.argv,
        execute=slowed,
        handle_signals=True,
        report=_print,
    )
    summary = anyio.run(runner.run)
    _print(summary)
    return summary.exit_code


if __name__ == "__main__":
    sys.exit(main())
