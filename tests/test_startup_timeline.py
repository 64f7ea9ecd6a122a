"""The start-up timeline: stages marked once, as offsets from the process's start."""

from __future__ import annotations

import subprocess
import sys
import time

import anyio
import pytest

from vyre_async.telemetry import (
    StartupStage,
    StartupTimeline,
    process_started_at,
    recording_startup,
    startup_stage,
)

_CHILD = (
    "import time; first = time.monotonic()\n"
    "from vyre_async.telemetry import process_started_at\n"
    "print(repr(first), repr(process_started_at()))\n"
)


def test_the_process_start_is_when_the_interpreter_was_spawned() -> None:
    """A child's process start lies between its parent's spawn and the child's first line
    (within one clock tick of ``/proc``, which counts in ticks)."""
    before = time.monotonic()
    out = subprocess.run(  # noqa: S603 - this interpreter on a fixed snippet
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True
    ).stdout
    first, started = (float(v) for v in out.split())
    tick = 1 / 100  # SC_CLK_TCK is 100 on Linux
    assert before - tick - 0.005 <= started <= first


def test_a_timeline_from_the_process_start_begins_with_it() -> None:
    """Without an origin, offsets count from the process's start, marked at 0."""
    timeline = StartupTimeline()
    assert timeline.stages == [StartupStage("process_started", 0.0)]
    assert timeline.origin == pytest.approx(process_started_at(), abs=0.02)


def test_each_stage_is_an_offset_from_the_origin_with_its_duration() -> None:
    """``at_s`` is the mark's time less the origin, ``took_s`` the time since ``began``."""
    origin = time.monotonic() - 5.0
    timeline = StartupTimeline(origin)
    began = time.monotonic() - 1.5
    before = time.monotonic()
    timeline.mark("graph_ready", began=began, origin_of="cache")
    after = time.monotonic()
    (stage,) = timeline.stages
    assert before - origin <= stage.at_s <= after - origin
    assert before - began <= stage.took_s <= after - began  # type: ignore[operator]
    assert stage.fields == {"origin_of": "cache"}


def test_a_stage_is_marked_once_per_device() -> None:
    """The first mark of a stage (per device) stays; later ones are dropped."""
    timeline = StartupTimeline(time.monotonic())
    for device in ("gpu0", "gpu1", "gpu0"):
        timeline.mark("device_context", device=device, n=device)
    timeline.mark("first_block_done")
    timeline.mark("first_block_done", later=True)
    got = [(s.stage, s.device, s.fields) for s in timeline.stages]
    assert got == [
        ("device_context", "gpu0", {"n": "gpu0"}),
        ("device_context", "gpu1", {"n": "gpu1"}),
        ("first_block_done", None, {}),
    ]


def test_a_listener_hears_the_stages_before_it_and_after_it() -> None:
    """Listening replays what was marked, then passes on each new stage until closed."""
    timeline = StartupTimeline(time.monotonic())
    timeline.mark("imported")
    heard: list[str] = []
    timeline.listen(lambda stage: heard.append(stage.stage))
    timeline.mark("job_checked")
    timeline.close()
    timeline.mark("first_chunk_committed")
    assert heard == ["imported", "job_checked"]
    assert [s.stage for s in timeline.stages] == ["imported", "job_checked"]


def test_marks_outside_a_recording_go_nowhere() -> None:
    """``startup_stage`` marks the recording timeline only, inside its block."""
    timeline = StartupTimeline(time.monotonic())
    startup_stage("before")
    with recording_startup(timeline):
        startup_stage("inside", device="gpu0")
    startup_stage("after")
    assert [(s.stage, s.device) for s in timeline.stages] == [("inside", "gpu0")]


async def test_tasks_and_worker_threads_mark_the_recording_timeline() -> None:
    """A recording reaches the tasks and the worker threads started inside it."""
    timeline = StartupTimeline(time.monotonic())
    with recording_startup(timeline):
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, lambda: startup_stage("in_thread"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(_mark_in_task)
    assert sorted(s.stage for s in timeline.stages) == ["in_task", "in_thread"]


async def _mark_in_task() -> None:
    startup_stage("in_task")
