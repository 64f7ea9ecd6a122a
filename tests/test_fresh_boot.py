"""A freshly booted machine (monotonic clocks near zero) and mock clocks: the job paths."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import trio.testing
from job_files import committed, expected_reach, job_file, rmat_graph

from vyre_async.jobs import ItemRecord, JobRunner, OutputSection, load_job
from vyre_async.jobs.runner._committer import Committer
from vyre_async.jobs.runner._progress import Progress
from vyre_async.testing import capture_logs

#: Seconds since the faked boot when a test starts.
UPTIME_S = 0.5


@pytest.fixture
def fresh_boot(monkeypatch: pytest.MonkeyPatch) -> None:
    """``time.monotonic`` and ``time.perf_counter`` read as on a machine up for 0.5 s.

    Both are shifted by the same offset, so they still advance in real time; asyncio's
    loop clock (monotonic) and trio's (perf_counter) move with them.
    """
    for name in ("monotonic", "perf_counter"):
        real: Callable[[], float] = getattr(time, name)
        offset = real() - UPTIME_S
        monkeypatch.setattr(time, name, lambda real=real, offset=offset: real() - offset)
    assert time.monotonic() < 1.0


@pytest.mark.usefixtures("fresh_boot")
def test_progress_shows_its_first_line_right_after_boot() -> None:
    """Uptime below the interval: the first add still logs a job_progress line."""
    with capture_logs() as logs:
        progress = Progress(total=10, skipped=0, stream=None, interval=5.0)
        progress.add(4, 1)
        progress.add(1, 0)  # within the interval: not shown
    events = [e for e in logs if e["event"] == "job_progress"]
    assert [(e["items_done"], e["items_failed"]) for e in events] == [(4, 1)]


@pytest.mark.usefixtures("fresh_boot")
async def test_a_whole_job_runs_and_reports_progress_right_after_boot(tmp_path: Path) -> None:
    """A job on a fresh boot: every item once (SciPy's counts), progress logged from the start."""
    job = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": list(range(0, 256, 5))}],
        logging={"progress_interval_s": 3600.0},
    )
    spec = await anyio.to_thread.run_sync(load_job, job)
    with capture_logs() as logs:
        summary = await JobRunner(spec, job_file=job).run()
    assert summary.status == "complete"
    assert 0 < summary.seconds < 600
    progress = [e for e in logs if e["event"] == "job_progress"]
    # Blocks of 16 items: the first line comes with the first block, not only at the end.
    assert progress[0]["items_done"] < summary.items_total, "no progress line after boot"
    records = await committed(tmp_path / "out")
    graph = rmat_graph()
    assert sorted((r.id, r.reached) for r in records) == [
        (i, expected_reach(graph, s)) for i, s in enumerate(range(0, 256, 5))
    ]


class _Store:
    """Just what the committer uses of a ResultStore: counts commits."""

    class manifest:  # noqa: N801 - mirrors the attribute the committer reads
        failed = 0
        chunks = ()

    has_staged = False  # no full-result arrays

    def __init__(self) -> None:
        self.chunks: list[int] = []
        self.committed = anyio.Event()

    def cut(self) -> None:
        """The chunk has no array file."""

    def write_chunk(self, seq: int, records: list[ItemRecord], failed: int, arrays: None) -> int:
        return len(records)

    def list_chunk(self, written: int) -> None:
        self.chunks.append(written)
        self.committed.set()  # on the loop thread: see _inline_threads


async def _inline_threads(func: Any, *args: Any, **kwargs: Any) -> Any:
    """``anyio.to_thread.run_sync`` run on the loop thread: on a mock clock that
    jumps whenever every task waits, a real thread's start-up (tens of ms on a busy
    machine) would let the clock jump past the deadlines under test."""
    await anyio.lowlevel.checkpoint()
    return func(*args)


@pytest.mark.parametrize(
    "anyio_backend", [("trio", {"clock": trio.testing.MockClock(autojump_threshold=0.05)})]
)
async def test_the_commit_interval_runs_on_the_loop_clock(
    anyio_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On trio's mock clock a one-hour commit interval passes in no real time."""
    del anyio_backend
    monkeypatch.setattr(anyio.to_thread, "run_sync", _inline_threads)
    interval = 3600.0
    store = _Store()
    output = OutputSection(commit_items=1000, commit_interval_s=interval)
    progress = Progress(total=10, skipped=0, stream=None, interval=interval)
    committer = Committer(store, output, progress, lambda failed: None)  # type: ignore[arg-type]
    send, receive = anyio.create_memory_object_stream[tuple[list[ItemRecord], int]](4)
    started = anyio.current_time()
    async with anyio.create_task_group() as tg:
        tg.start_soon(committer.run, receive)
        async with send:
            await send.send(([ItemRecord(0, 0, "reach")], 0))
            with anyio.fail_after(1.5 * interval):  # loop time: one interval, not two
                await store.committed.wait()
            assert store.chunks == [1]
            assert interval <= anyio.current_time() - started < 1.5 * interval
