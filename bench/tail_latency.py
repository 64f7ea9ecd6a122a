"""What the end of a resident traversal costs, piece by piece, on one GPU (issue 4 (b)).

Host overhead per level counts the host time before a traversal's first GPU command
and after its last one. This measures the pieces of the second part separately:

- ``gpu_tail_us``: device time from the end timing event through the 32-byte state
  copy to the completion event (timing events on both sides), against the same two
  events with nothing between them;
- ``spin_detect_us``: host time from recording an event behind a copy, spinning on
  ``cuEventQuery`` in a plain loop, to seeing it done (no event loop involved);
- ``loop_period_us``: the completion watcher's poll period while it spins on
  unfinished work (``cuEventQuery`` calls per second of waiting);
- ``pre_event_us`` / ``post_event_us`` of ``reach_count``: host time from the call to
  the ``cuEventRecord`` of the start event, and from the completion event being seen
  by the watcher to the caller having its answer.

Usage: ``python bench/tail_latency.py --out out.json``
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time
from typing import Any

import anyio
import numpy as np

import vyre_async as va
from vyre_async.graphs import rmat

ROUNDS = 200


def _median_us(values: list[float]) -> float:
    return statistics.median(values) * 1e6


def gpu_tail(backend: Any) -> dict[str, float]:
    """Device time of the state copy between two timing events, and of nothing."""
    device = backend._cuda()
    driver = device.driver
    stream = backend._streams[0]
    start, end = backend._events.acquire_timing_pair()
    state = backend._memory.acquire(256)
    pinned = backend._pinned.acquire(256)
    copy_us, empty_us = [], []
    try:
        for _ in range(ROUNDS):
            for target, with_copy in ((copy_us, True), (empty_us, False)):
                device.call(driver.cuEventRecord, start, stream)
                if with_copy:
                    device.call(driver.cuMemcpyDtoHAsync, pinned.ptr, state.ptr, 32, stream)
                device.call(driver.cuEventRecord, end, stream)
                device.call(driver.cuEventSynchronize, end)
                target.append(float(device.call(driver.cuEventElapsedTime, start, end)) * 1e3)
    finally:
        backend._events.release_timing_pair((start, end))
        backend._memory.release(state)
        backend._pinned.release(pinned)
    return {
        "gpu_tail_copy_us": statistics.median(copy_us[10:]),
        "gpu_tail_empty_us": statistics.median(empty_us[10:]),
    }


def spin_detect(backend: Any) -> dict[str, float]:
    """Host time to see an event done, spinning on cuEventQuery, behind a copy or not."""
    device = backend._cuda()
    driver = device.driver
    stream = backend._streams[0]
    event = backend._events.acquire()
    state = backend._memory.acquire(256)
    pinned = backend._pinned.acquire(256)
    with_copy, without = [], []
    try:
        for _ in range(ROUNDS):
            for target, copy in ((with_copy, True), (without, False)):
                t0 = time.perf_counter()
                if copy:
                    device.call(driver.cuMemcpyDtoHAsync, pinned.ptr, state.ptr, 32, stream)
                device.call(driver.cuEventRecord, event, stream)
                while int(driver.cuEventQuery(event)[0]) != 0:
                    pass
                target.append(time.perf_counter() - t0)
    finally:
        backend._events.release(event)
        backend._memory.release(state)
        backend._pinned.release(pinned)
    return {
        "spin_detect_copy_us": _median_us(with_copy[10:]),
        "spin_detect_record_only_us": _median_us(without[10:]),
    }


async def traversal_edges(session: Any, backend: Any, sources: list[int]) -> dict[str, float]:
    """Host time before the start event and after the watcher saw the end, per traversal."""
    device = backend._cuda()
    watcher = backend._watcher
    original_call, original_finish = device.call, watcher._finish
    marks: dict[str, float] = {}

    def call(fn: Any, *args: Any) -> Any:
        if "start" not in marks and getattr(fn, "__name__", "") == "cuEventRecord":
            marks["start"] = time.perf_counter()
        return original_call(fn, *args)

    def finish(watch: Any, error: Any) -> None:
        marks["seen"] = time.perf_counter()
        original_finish(watch, error)

    device.call, watcher._finish = call, finish
    pre, post, polls, waits = [], [], [], []
    try:
        for s in sources:
            marks.clear()
            queries = watcher.queries
            t0 = time.perf_counter()
            await session.reach_count(s)
            t1 = time.perf_counter()
            pre.append(marks["start"] - t0)
            post.append(t1 - marks["seen"])
            polls.append(watcher.queries - queries)
            waits.append(marks["seen"] - marks["start"])
    finally:
        del device.call, watcher._finish
    return {
        "pre_event_us": _median_us(pre),
        "post_event_seen_us": _median_us(post),
        "loop_period_us": statistics.median(w / p for w, p in zip(waits, polls, strict=True)) * 1e6,
    }


async def main_async(scale: int) -> dict[str, Any]:
    """Every measurement on one backend."""
    graph = rmat(scale, 16, seed=1)
    rng = np.random.default_rng(2)
    candidates = np.flatnonzero(np.diff(graph.offsets) > 0)
    sources = [int(s) for s in rng.choice(candidates, 24, replace=False)]
    out: dict[str, Any] = {}
    async with va.open_backend("cuda") as backend, va.resident_graph(backend, graph) as session:
        info = backend.device_info
        out["device"] = {"name": info.name, "driver_version": info.driver_version}
        out["date"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        for s in sources * 3:
            await session.reach_count(s)
        out.update(gpu_tail(backend))
        out.update(spin_detect(backend))
        out.update(await traversal_edges(session, backend, sources * 3))
    return out


def main() -> None:
    """Run and print."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=int, default=22)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = anyio.run(main_async, args.scale)
    print(json.dumps(out, indent=2))
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
