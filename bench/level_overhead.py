"""Where the host time of one resident traversal goes (issue 4 (b)), on one GPU.

For ``session.reach_count`` on the R-MAT graph of bench/resident.py this records,
per run: the wall time, the device time (timing events), the time spent inside
``_enqueue_steps`` (the Python enqueue of a sequence's waits, start event, prefix,
body and end event, which every submission runs), the moment its completion was
finished (``CompletionWatcher._finish``, by the waiting task or the watcher), and
when the traversal returned. From those:

- ``before_submit_us``: call to the enqueue (session layers, checks, reservation);
- ``submit_us``: inside ``_enqueue_steps`` (the device starts at its first event);
- ``detect_us``: enqueue return to completion finished, minus the device time (how
  late the end was noticed, plus launch latency; negative when the device started
  well before the enqueue returned);
- ``resume_us``: completion finished to the traversal returning (state copy,
  session bookkeeping).

Each variant of the watcher's waiting policy runs on the same sources; one cProfile
of a variant shows the Python functions that cost the most.

Usage: ``python bench/level_overhead.py --scale 22 --out out.json [--quick]``
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import gc
import io
import json
import pstats
import statistics
import time
from typing import Any

import anyio
import numpy as np

import vyre_async as va
from vyre_async.graphs import rmat

RUNS = 24


def _session(backend: Any, graph: Any) -> Any:
    """A resident session; a tree from before ``va.resident_graph`` (run for comparison
    with PYTHONPATH pointing at it) makes it with ``backend.resident_graph``."""
    factory = getattr(va, "resident_graph", None)
    return factory(backend, graph) if factory is not None else backend.resident_graph(graph)


async def measure(session: Any, backend: Any, sources: list[int]) -> dict[str, float]:
    """Median phases of ``reach_count`` over ``sources``."""
    watcher = backend._watcher
    finished: list[float] = []
    submitted: list[tuple[float, float]] = []
    original_finish = watcher._finish
    original_submit = backend._enqueue_steps

    def stamped_finish(watch: Any, error: Any) -> None:
        original_finish(watch, error)
        finished.append(time.perf_counter())

    def stamped_submit(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        pending = original_submit(*args, **kwargs)
        submitted.append((t0, time.perf_counter()))
        return pending

    watcher._finish = stamped_finish
    backend._enqueue_steps = stamped_submit
    rows = []
    try:
        for source in sources:
            finished.clear()
            submitted.clear()
            before = session.stats()
            t0 = time.perf_counter()
            await session.reach_count(source)
            t1 = time.perf_counter()
            after = session.stats()
            device = (after.device_ns - before.device_ns) / 1e9
            levels = after.levels - before.levels
            (s0, s1), done = submitted[-1], finished[-1]
            rows.append(
                {
                    "wall_us": (t1 - t0) * 1e6,
                    "device_us": device * 1e6,
                    "levels": levels,
                    "submissions": len(submitted),
                    "before_submit_us": (s0 - t0) * 1e6,
                    "submit_us": (s1 - s0) * 1e6,
                    "detect_us": (done - s1 - device) * 1e6,
                    "resume_us": (t1 - done) * 1e6,
                    "overhead_us_per_level": (t1 - t0 - device) / levels * 1e6,
                }
            )
    finally:
        del watcher._finish
        del backend._enqueue_steps
    return {key: statistics.median(r[key] for r in rows) for key in rows[0]}


def time_calls(obj: Any, names: list[str], totals: dict[str, float], prefix: str) -> None:
    """Wrap ``obj``'s methods ``names`` (on the instance) to add their wall time to ``totals``.

    A name the tree under test does not have (the trees compared name their parts
    differently) is left out of the breakdown.
    """
    for name in names:
        method = getattr(obj, name, None)
        if method is None:
            continue

        def timed(*args: Any, _m: Any = method, _n: str = prefix + name, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return _m(*args, **kwargs)
            finally:
                totals[_n] = totals.get(_n, 0.0) + time.perf_counter() - t0

        setattr(obj, name, timed)


def time_driver_calls(device: Any, totals: dict[str, float]) -> None:
    """Wrap ``device.call`` to add each driver function's wall time to ``totals``."""
    call = device.call

    def timed(fn: Any, *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return call(fn, *args)
        finally:
            name = "driver." + getattr(fn, "__name__", repr(fn))
            totals[name] = totals.get(name, 0.0) + time.perf_counter() - t0

    device.call = timed


async def submit_breakdown(session: Any, backend: Any, sources: list[int]) -> dict[str, float]:
    """Microseconds per traversal inside the enqueue path, by method and driver call."""
    totals: dict[str, float] = {}
    time_calls(
        backend,
        [
            "_plan_of",
            "_new_completion",
            "_enqueue_steps",
            "_enqueue_reads",
            "_launch_steps",
            "_read_block",
            "_release_read_block",
            "_stream",
            "_stream_op",
            "activity",
        ],
        totals,
        "backend.",
    )
    time_calls(backend._registry, ["reserve"], totals, "registry.")
    time_calls(backend._graphs, ["launch"], totals, "graphs.")
    time_calls(backend._pinned, ["acquire"], totals, "pinned.")
    time_calls(
        backend._events,
        ["acquire_timing_pair", "acquire", "release_timing_pair", "release"],
        totals,
        "events.",
    )
    time_calls(backend._watcher, ["_finish", "check_accepting"], totals, "watcher.")
    time_driver_calls(backend._cuda(), totals)
    for s in sources:
        await session.reach_count(s)
    return {k: v / len(sources) * 1e6 for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}


async def quick(session: Any, backend: Any, sources: list[int]) -> dict[str, Any]:
    """The default policy after a warm-up, and where the whole traversal's time goes.

    For A/B runs of two trees in one call: 72 warm-up traversals (the first few dozen
    of a process run slower), then the phases over the sources three times, then a
    cProfile of every function a traversal runs, by own time.
    """
    out: dict[str, Any] = {}
    for s in sources * 3:
        await session.reach_count(s)
    out["default_warm"] = await measure(session, backend, sources * 3)
    profile = cProfile.Profile()
    profile.enable()
    for s in sources * 4:
        await session.reach_count(s)
    profile.disable()
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text).sort_stats("tottime")
    stats.print_stats(45)
    out["profile_tottime"] = text.getvalue()
    return out


async def main_async(scale: int, quick_only: bool = False) -> dict[str, Any]:
    """Every variant on one backend and one session."""
    graph = rmat(scale, 16, seed=1)
    rng = np.random.default_rng(2)
    candidates = np.flatnonzero(np.diff(graph.offsets) > 0)
    sources = [int(s) for s in rng.choice(candidates, RUNS, replace=False)]
    out: dict[str, Any] = {}
    async with va.open_backend("cuda") as backend, _session(backend, graph) as session:
        info = backend.device_info
        out["device"] = {"name": info.name, "driver_version": info.driver_version}
        out["date"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        if quick_only:
            out.update(await quick(session, backend, sources))
            return out
        for s in sources[:4]:
            await session.reach_count(s)
        watcher = backend._watcher
        spin = watcher._backoff.spin_s
        out["default"] = await measure(session, backend, sources)
        watcher._backoff.spin_s = 5e-3
        out["spin_5ms"] = await measure(session, backend, sources)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(4):
            for s in sources:
                await session.reach_count(s)
        profile.disable()
        watcher._backoff.spin_s = spin
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("cumtime").print_stats("vyre_async", 40)
        out["profile_spin_5ms"] = text.getvalue()
        t0 = time.perf_counter()
        for _ in range(8):
            await session.bfs(sources[0])
        out["bfs_wall_us"] = (time.perf_counter() - t0) / 8 * 1e6
        import cupy as cp

        a = cp.ones(1 << 26, cp.float32)
        for _ in range(8):
            a.copy()
        cp.cuda.Device().synchronize()
        out["default_after_cupy"] = await measure(session, backend, sources)
        for s in sources[:16]:  # bench/resident.py runs these BFS before its traversals
            await session.bfs(s)
        out["default_after_bfs_readbacks"] = await measure(session, backend, sources)
        gc.collect()
        gc.disable()
        try:
            out["default_gc_off"] = await measure(session, backend, sources)
        finally:
            gc.enable()
        watcher._backoff.spin_s = 5e-3
        out["submit_breakdown_us"] = await submit_breakdown(session, backend, sources)
    return out


def main() -> None:
    """Run and print."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=int, default=22)
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true", help="warm phases and a profile only")
    args = parser.parse_args()
    out = anyio.run(main_async, args.scale, args.quick)
    for key in ("profile_spin_5ms", "profile_tottime"):
        if key in out:
            print(out.pop(key))
    print(json.dumps(out, indent=2))
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
