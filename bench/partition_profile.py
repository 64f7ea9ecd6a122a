"""Where the time of a split ``bfs_many`` goes: every phase of every level, on every device,
against one device holding the whole graph.

R-MAT scale 24 (edge factor 16, symmetric, built on the device, the sources of
bench/partition.py), 1,024 sources (reach counts) in one pass:

- **pipelined**: ``session.bfs_many`` as the benchmark times it (median over rounds), on
  one device and on the split; and the split traversal run directly with a timestamp
  before each host batch (one batch a level where a slot is 1 GiB), for each direction
  rule (``auto``, ``bottom_up``, ``top_down``);
- **stepped**: the same traversal with every kernel launched alone on each device and
  timed by its timing events (device ns), every group of peer copies enqueued alone and
  timed from the host (all buffers settled first, ``perf_counter`` to the last copy's
  end; bytes recorded), and each level's direction and frontier statistics read back;
  one device's traversal stepped the same way (``msbfs_expand``, ``msbfs_expand_hubs``,
  ``msbfs_advance`` per level). Both check their counts against the sessions';
- **stepped top-down**: the same with every level top-down;
- **copies alone**: one frontier slot one way, and both ways at once;
- **single BFS**: ``session.bfs`` walls on both (median of 5 sources), and the one of
  most out-edges as a one-lane split traversal, pipelined and stepped.

The summary sums each phase over the levels; "pipelined minus stepped" is what overlap
wins (negative: host waits and ordering cost more than the phases alone).

Usage: ``python bench/partition_profile.py --out profile.json [--devices 0,1]
[--scale 24] [--rounds 3] [--quick]`` (``--quick``: two CPU backends, a tiny graph: it
checks the script, not the GPU).
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import platform
import statistics
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import numpy as np
from device_record import environment
from partition import MANY, PASS_BUDGET, SEED, SINGLES, build_graph, split_budget

import vyre_async as va
from vyre_async.algorithms import msbfs as ms
from vyre_async.algorithms.msbfs import (
    MSBFS_LANES_PER_WORD,
    MSBFS_STATE_WORDS,
    MSBFS_UNLIMITED,
    PartedTraversal,
    allocate_parted_scratch,
    parted_steps,
)
from vyre_async.backends import Backend, PreparedSequence, ReadRange, ResidentBuffer, SequenceStep

#: State words and statistics (see vyre_async/algorithms/msbfs/_part_layout.py); the
#: statistics' length is read from the stats_out buffer.
PSTATE_DONE, PSTATE_DIRECTION, PSTATE_LEVEL = 1, 6, 0
STAT_NAMES = ("frontier", "frontier_edges", "unexplored_edges", "discovered")
DIRECTIONS = {0: "top_down", 1: "bottom_up"}
#: One device's state words (see vyre_async/algorithms/msbfs/_layout.py).
STATE_DONE, STATE_LEVEL, STATE_REACHED = 1, 0, 10


def _ms(ns: float) -> float:
    return ns / 1e6


async def _run_step(seq: PreparedSequence, scalars: Mapping[str, Any] | None = None) -> int:
    _, device_ns = await seq.run(0, scalars=scalars)
    return int(device_ns)


# ------------------------------------------------------------------------ one device
async def profile_one(
    backend: Backend, graph: Mapping[str, ResidentBuffer], n: int, sources: np.ndarray
) -> dict[str, Any]:
    """One device's traversal from ``sources`` (counts), each kernel launched alone."""
    words = -(-len(sources) // MSBFS_LANES_PER_WORD)
    lanes = MSBFS_LANES_PER_WORD * words
    owned: list[ResidentBuffer] = []

    async def alloc(count: int, dtype: type[np.generic]) -> ResidentBuffer:
        buffer = await backend.alloc(max(count, 1) * np.dtype(dtype).itemsize, dtype)
        owned.append(buffer)
        return buffer

    try:
        src = await alloc(lanes, np.int32)
        visited = await alloc(n * words, np.uint64)
        a = await alloc(n * words, np.uint64)
        b = await alloc(n * words, np.uint64)
        state = await alloc(MSBFS_STATE_WORDS, np.int32)
        counts = await alloc(lanes, np.int32)
        lane_sources = np.full(lanes, -1, np.int32)
        lane_sources[: len(sources)] = sources
        await backend.write(src, lane_sources)
        init = backend.prepare_repeated(
            [
                SequenceStep(
                    ms.msbfs_init,
                    {
                        "offsets": graph["offsets"],
                        "sources": src,
                        "visited": visited,
                        "frontier": a,
                        "next": b,
                        "state": state,
                    },
                    {"max_level": MSBFS_UNLIMITED},
                )
            ],
            [],
        )

        def level(frontier: ResidentBuffer, nxt: ResidentBuffer) -> list[PreparedSequence]:
            pull = {
                "in_offsets": graph["in_offsets"],
                "in_indices": graph["in_indices"],
                "frontier": frontier,
                "next": nxt,
                "visited": visited,
                "state": state,
            }
            return [
                backend.prepare_repeated([SequenceStep(ms.msbfs_expand, pull)], []),
                backend.prepare_repeated([SequenceStep(ms.msbfs_expand_hubs, pull)], []),
                backend.prepare_repeated([SequenceStep(ms.msbfs_advance, {"state": state})], []),
            ]

        levels_ab = (level(a, b), level(b, a))
        count = backend.prepare_repeated(
            [
                SequenceStep(
                    ms.msbfs_count,
                    {
                        "offsets": graph["offsets"],
                        "sources": src,
                        "visited": visited,
                        "counts": counts,
                    },
                )
            ],
            [],
            reads=[ReadRange(counts)],
        )
        t0 = time.perf_counter()
        init_ns = await _run_step(init)
        rows: list[dict[str, Any]] = []
        reached = 0
        while True:
            seqs = levels_ab[len(rows) % 2]
            names = ("expand", "expand_hubs", "advance")
            row: dict[str, Any] = {"level": len(rows)}
            for name, seq in zip(names, seqs, strict=True):
                row[f"{name}_ms"] = _ms(await _run_step(seq))
            words_now = await backend.read(state)
            total = int(words_now[STATE_REACHED : STATE_REACHED + 2].view(np.uint64)[0])
            row["discovered"] = total - reached
            reached = total
            rows.append(row)
            if words_now[STATE_DONE]:
                break
        (got,), count_ns = await count.run(0)
        wall = time.perf_counter() - t0
    finally:
        with anyio.CancelScope(shield=True):
            await backend.settle(owned)
            for buffer in owned:
                await backend.free(buffer)
    phases = {
        "init": _ms(init_ns),
        **{name: sum(r[f"{name}_ms"] for r in rows) for name in ("expand", "expand_hubs")},
        "advance": sum(r["advance_ms"] for r in rows),
        "count": _ms(count_ns),
    }
    return {
        "levels": rows,
        "phases_ms": phases,
        "device_ms": sum(phases.values()),
        "stepped_wall_s": wall,
        "counts": np.asarray(got)[: len(sources)],
    }


# ------------------------------------------------------------------------ the split
async def timed_copies(
    partition: Any, scratch: Any, copies: Sequence[tuple[int, str, int, str, int, int, int]]
) -> tuple[float, int]:
    """Seconds from enqueueing ``copies`` (every buffer settled first) to the last one's
    end, and their bytes. A copy: (source, src name, target, dst name, src offset, dst
    offset, count)."""
    for backend, mine in zip(partition.backends, scratch.buffers, strict=True):
        await backend.settle(list(mine.values()))
    links, buffers = partition.links, scratch.buffers
    before = links.bytes_copied
    t0 = time.perf_counter()
    work = [
        links.copy(
            s,
            buffers[s][src],
            t,
            buffers[t][dst],
            src_offset=so,
            dst_offset=do,
            count=count,
        )
        for s, src, t, dst, so, do, count in copies
    ]
    for item in work:
        await item.wait()
    return time.perf_counter() - t0, links.bytes_copied - before


async def profile_split(partition: Any, sources: np.ndarray, mode: int = 0) -> dict[str, Any]:
    """The split traversal from ``sources`` (counts), each kernel alone on each device,
    each group of copies alone; ``mode`` is the direction rule (0 auto, 1 top-down, 2
    bottom-up, as ``DIRECTION_MODES``)."""
    ranges = partition.ranges
    parts = ranges.parts
    backends = partition.backends
    words = -(-len(sources) // MSBFS_LANES_PER_WORD)
    lanes = MSBFS_LANES_PER_WORD * words
    slot = ranges.chunk * words
    scratch = await allocate_parted_scratch(backends, partition.parts, ranges, words, "counts")
    try:
        steps = [
            parted_steps(partition.parts[d], scratch.buffers[d], ranges, d, words)
            for d in range(parts)
        ]

        def alone(d: int, half: str) -> list[tuple[str, PreparedSequence]]:
            return [
                (s.kernel.name.removeprefix("msbfs_part_"), backends[d].prepare_repeated([s], []))
                for s in steps[d][half]
            ]

        first = [alone(d, "first_half") for d in range(parts)]
        second = [alone(d, "second_half") for d in range(parts)]
        init = [backends[d].prepare_repeated(steps[d]["init"], []) for d in range(parts)]
        counts = [
            backends[d].prepare_repeated(
                steps[d]["counts"], [], reads=[ReadRange(scratch.buffers[d]["counts"])]
            )
            for d in range(parts)
        ]
        lane_sources = np.full(lanes, -1, np.int32)
        lane_sources[: len(sources)] = sources
        for backend, mine in zip(backends, scratch.buffers, strict=True):
            await backend.write(mine["sources"], lane_sources)
        pairs = [(d, e) for d in range(parts) for e in range(parts) if e != d]
        part_stats = scratch.buffers[0]["stats_out"].nbytes // 8
        stats_copies = [
            (e, "stats_out", d, "stats", 0, e * part_stats, part_stats) for d, e in pairs
        ]
        send_copies = [(e, "send", d, "recv", d * slot, e * slot, slot) for d, e in pairs]
        t0 = time.perf_counter()
        init_ns = [await _run_step(init[d]) for d in range(parts)]
        rows: list[dict[str, Any]] = []
        while True:
            row: dict[str, Any] = {"level": len(rows)}
            stats_s, _ = await timed_copies(partition, scratch, stats_copies)
            row["copy_stats_ms"] = stats_s * 1e3
            # The direction step alone first: it says whether the traversal is done.
            kernels: list[dict[str, float]] = [{} for _ in range(parts)]
            for d in range(parts):
                name, seq = first[d][0]
                kernels[d][name] = _ms(await _run_step(seq, {"mode": mode}))
            state = await backends[0].read(scratch.buffers[0]["state"])
            row["kernels_ms"] = kernels
            if state[PSTATE_DONE]:
                row["done"] = True
                rows.append(row)
                break
            row["direction"] = DIRECTIONS.get(int(state[PSTATE_DIRECTION]), "?")
            frontier = [
                (await backends[d].read(scratch.buffers[d]["stats_out"])).tolist()
                for d in range(parts)
            ]
            row["frontier"] = {
                name: [int(f[i]) for f in frontier] for i, name in enumerate(STAT_NAMES[:3])
            }
            for d in range(parts):
                for name, seq in first[d][1:]:
                    kernels[d][name] = _ms(await _run_step(seq))
            send_s, send_bytes = await timed_copies(partition, scratch, send_copies)
            row["copy_send_ms"] = send_s * 1e3
            row["copy_send_bytes"] = send_bytes
            for d in range(parts):
                for name, seq in second[d]:
                    kernels[d][name] = _ms(await _run_step(seq))
            found = [
                int((await backends[d].read(scratch.buffers[d]["stats_out"]))[3])
                for d in range(parts)
            ]
            row["discovered"] = found
            rows.append(row)
        total = np.zeros(lanes, np.int64)
        count_ns = []
        for seq in counts:
            (got,), ns = await seq.run(0)
            total += got
            count_ns.append(ns)
        wall = time.perf_counter() - t0
    finally:
        await scratch.free()
    names = [name for name, _ in first[0]] + [name for name, _ in second[0]]
    per_device = [
        {
            "init": _ms(init_ns[d]),
            **{name: sum(r["kernels_ms"][d].get(name, 0.0) for r in rows) for name in names},
            "count": _ms(count_ns[d]),
        }
        for d in range(parts)
    ]
    copies = {
        "stats_ms": sum(r["copy_stats_ms"] for r in rows),
        "send_ms": sum(r.get("copy_send_ms", 0.0) for r in rows),
        "send_bytes": sum(r.get("copy_send_bytes", 0) for r in rows),
    }
    # Per level, the slowest device's kernels, plus the copies: the stepped critical path.
    critical = sum(
        max(sum(k.values()) for k in r["kernels_ms"])
        + r["copy_stats_ms"]
        + r.get("copy_send_ms", 0.0)
        for r in rows
    ) + max(d["init"] + d["count"] for d in per_device)
    return {
        "levels": rows,
        "phases_ms_per_device": per_device,
        "copies": copies,
        "critical_path_ms": critical,
        "stepped_wall_s": wall,
        "slot_bytes": 8 * slot,
        "counts": total[: len(sources)].astype(np.int32),
    }


async def pipelined_split(partition: Any, sources: np.ndarray, direction: str) -> dict[str, Any]:
    """The split traversal as bfs_many runs it, a timestamp before each host batch."""
    ranges = partition.ranges
    words = -(-len(sources) // MSBFS_LANES_PER_WORD)
    scratch = await allocate_parted_scratch(
        partition.backends, partition.parts, ranges, words, "counts"
    )
    runner = PartedTraversal(partition.backends, partition.links, ranges)
    stamps: list[float] = []
    copies_before = partition.links.bytes_copied
    try:
        t0 = time.perf_counter()
        await runner.run(
            scratch,
            sources,
            direction=direction,  # type: ignore[arg-type]
            check=lambda: stamps.append(time.perf_counter()),
        )
        end = time.perf_counter()
    finally:
        await scratch.free()
    marks = [*stamps, end]
    return {
        "direction": direction,
        "wall_ms": (end - t0) * 1e3,
        "before_first_batch_ms": (stamps[0] - t0) * 1e3,
        "batch_ms": [(b - a) * 1e3 for a, b in itertools.pairwise(marks)],
        "levels": runner.levels,
        "host_waits": runner.host_waits,
        "bytes_copied": partition.links.bytes_copied - copies_before,
    }


async def copy_alone(partition: Any, words: int, repeats: int) -> dict[str, Any]:
    """One frontier slot one way (0 -> 1), and both ways at once, median seconds."""
    ranges = partition.ranges
    scratch = await allocate_parted_scratch(
        partition.backends, partition.parts, ranges, words, "counts"
    )
    slot = ranges.chunk * words
    try:
        one = [
            await timed_copies(partition, scratch, [(0, "send", 1, "recv", slot, 0, slot)])
            for _ in range(repeats)
        ]
        both = [
            await timed_copies(
                partition,
                scratch,
                [(0, "send", 1, "recv", slot, 0, slot), (1, "send", 0, "recv", 0, slot, slot)],
            )
            for _ in range(repeats)
        ]
    finally:
        await scratch.free()
    one_s = statistics.median(s for s, _ in one)
    both_s = statistics.median(s for s, _ in both)
    return {
        "slot_bytes": 8 * slot,
        "one_way_ms": one_s * 1e3,
        "one_way_gb_per_s": 8 * slot / one_s / 1e9,
        "both_ways_ms": both_s * 1e3,
        "both_ways_gb_per_s_each": 8 * slot / both_s / 1e9,
    }


# ------------------------------------------------------------------------ the run
async def single_walls(session: va.ResidentGraphSession, singles: np.ndarray) -> list[float]:
    """``session.bfs`` of each source (levels), timed, after one warm run."""
    await session.bfs(int(singles[0]))
    walls = []
    for source in singles:
        t0 = time.perf_counter()
        await session.bfs(int(source))
        walls.append(time.perf_counter() - t0)
    return walls


async def session_walls(
    session: va.ResidentGraphSession, many: np.ndarray, rounds: int
) -> tuple[list[float], np.ndarray]:
    budget = max(session.device_graph_bytes) + PASS_BUDGET
    await session.bfs_many(many[:64], readback="counts", budget_bytes=budget)  # warm
    walls, counts = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        counts = await session.bfs_many(many, readback="counts", budget_bytes=budget)
        walls.append(time.perf_counter() - t0)
    assert counts is not None
    return walls, np.asarray(counts)


async def main_async(quick: bool, devices: list[int], scale: int, rounds: int) -> dict[str, Any]:
    kind = "cpu" if quick else "cuda"
    graph, built_s = await build_graph(kind, devices[0], scale)
    rng = np.random.default_rng(SEED)
    singles = rng.integers(0, graph.num_vertices, SINGLES).astype(np.int32)
    many = rng.integers(0, graph.num_vertices, MANY).astype(np.int32)
    limit = split_budget(graph, len(devices))
    print(f"graph: {graph.num_vertices} vertices, {graph.num_edges} edges ({built_s:.1f} s)")
    async with va.open_devices(kind, devices=devices[:1]) as group:
        env = environment(group.backends[0])
        async with va.resident_graph(group, graph) as session:
            one_walls, one_counts = await session_walls(session, many, rounds)
            one_single = await single_walls(session, singles)
            replica = session._replicas[0]  # the session's arrays
            one = await profile_one(replica.backend, replica.buffers, graph.num_vertices, many)
    if not np.array_equal(one["counts"], one_counts):
        raise SystemExit("the stepped one-device traversal's counts differ from bfs_many's")
    _print_one(one, one_walls)
    async with (
        va.open_devices(kind, devices=devices, memory_limit=limit) as group,
        va.resident_graph(group, graph) as session,
    ):
        partition = session._partition
        if partition is None:
            raise SystemExit("the graph was not split")
        split_walls, split_counts = await session_walls(session, many, rounds)
        split_single = await single_walls(session, singles)
        words = -(-len(many) // MSBFS_LANES_PER_WORD)
        alone = await copy_alone(partition, words, 3)
        pipelined = [
            await pipelined_split(partition, many, direction)
            for direction in ("auto", "bottom_up", "top_down")
        ]
        split = await profile_split(partition, many)
        top_down = await profile_split(partition, many, mode=1)
        # The single source of most out-edges: one that reaches the giant component.
        lone = singles[np.argmax(np.diff(graph.offsets)[singles])][None]
        single_pipelined = await pipelined_split(partition, lone, "auto")
        single = await profile_split(partition, lone)
    if not (
        np.array_equal(split["counts"], split_counts)
        and np.array_equal(top_down["counts"], split_counts)
        and np.array_equal(split_counts, one_counts)
    ):
        raise SystemExit("the split counts differ (stepped, bfs_many, one device)")
    _print_split(split, split_walls, pipelined, alone)
    print("every level top-down, stepped:")
    _print_split(top_down, [pipelined[2]["wall_ms"] / 1e3], [], None)
    print(
        f"single BFS (levels) wall, median of {len(singles)}: one device "
        f"{statistics.median(one_single) * 1e3:.2f} ms, split "
        f"{statistics.median(split_single) * 1e3:.2f} ms; one lane on the split, counts:"
    )
    _print_split(single, [single_pipelined["wall_ms"] / 1e3], [single_pipelined], None)
    one_s = statistics.median(one_walls)
    split_s = statistics.median(split_walls)
    print(
        f"bfs_many wall: one device {one_s * 1e3:.1f} ms, split {split_s * 1e3:.1f} ms "
        f"({one_s / split_s:.2f}x throughput); stepped device time: one "
        f"{one['device_ms']:.1f} ms, split critical path {split['critical_path_ms']:.1f} ms"
    )
    for run in (one, split, top_down, single):
        run.pop("counts")
    return {
        "benchmark": "partition_profile",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "backend": kind,
        "devices": devices,
        **env,
        "graph": {
            "kind": "rmat",
            "scale": scale,
            "edge_factor": 16,
            "seed": SEED,
            "vertices": graph.num_vertices,
            "edges": graph.num_edges,
        },
        "sources": len(many),
        "one_device": {"bfs_many_s": one_walls, "stepped": one},
        "split": {
            "bfs_many_s": split_walls,
            "pipelined": pipelined,
            "copies_alone": alone,
            "stepped": split,
            "stepped_top_down": top_down,
        },
        "single_bfs": {
            "one_device_s": one_single,
            "split_s": split_single,
            "split_one_lane_pipelined": single_pipelined,
            "split_one_lane_stepped": single,
        },
        "quick_cpu_smoke_run": quick,
    }


def _print_one(one: dict[str, Any], walls: list[float]) -> None:
    print(f"one device: bfs_many {statistics.median(walls) * 1e3:.1f} ms (median)")
    for r in one["levels"]:
        print(
            f"  level {r['level']:2d}: expand {r['expand_ms']:7.2f} hubs "
            f"{r['expand_hubs_ms']:6.2f} advance {r['advance_ms']:5.2f} ms, "
            f"discovered {r['discovered']}"
        )
    phases = ", ".join(f"{k} {v:.2f}" for k, v in one["phases_ms"].items())
    print(f"  phases (ms): {phases}; device {one['device_ms']:.1f} ms")


def _print_split(
    split: dict[str, Any],
    walls: list[float],
    pipelined: list[dict[str, Any]],
    alone: dict[str, Any] | None,
) -> None:
    print(f"split: {statistics.median(walls) * 1e3:.1f} ms (median)")
    if alone is not None:
        print(
            f"  copies alone: a slot of {alone['slot_bytes'] / 2**30:.2f} GiB one way "
            f"{alone['one_way_ms']:.2f} ms ({alone['one_way_gb_per_s']:.0f} GB/s), both "
            f"ways {alone['both_ways_ms']:.2f} ms ({alone['both_ways_gb_per_s_each']:.0f} "
            "GB/s each)"
        )
    for run in pipelined:
        batches = " ".join(f"{b:.1f}" for b in run["batch_ms"])
        print(
            f"  pipelined {run['direction']:9s}: {run['wall_ms']:.1f} ms, {run['levels']} "
            f"levels, {run['host_waits']} host waits, {run['bytes_copied'] / 2**30:.1f} GiB "
            f"copied; before the first batch {run['before_first_batch_ms']:.1f} ms; "
            f"batches (ms): {batches}"
        )
    for r in split["levels"]:
        head = f"  level {r['level']:2d} {r.get('direction', 'done'):9s}"
        if "frontier" in r:
            f = r["frontier"]
            head += (
                f" frontier {f['frontier']} edges {f['frontier_edges']} discovered "
                f"{r['discovered']} | copies: stats {r['copy_stats_ms']:.2f} ms, send "
                f"{r['copy_send_bytes'] / 2**30:.2f} GiB {r['copy_send_ms']:.2f} ms"
            )
        print(head)
        for d, k in enumerate(r["kernels_ms"]):
            print(f"    dev{d}: " + " ".join(f"{n} {v:.2f}" for n, v in k.items()))
    for d, phases in enumerate(split["phases_ms_per_device"]):
        print(f"  dev{d} phases (ms): " + ", ".join(f"{k} {v:.2f}" for k, v in phases.items()))
    c = split["copies"]
    print(
        f"  copies (ms): stats {c['stats_ms']:.2f}, send {c['send_ms']:.2f} "
        f"({c['send_bytes'] / 2**30:.1f} GiB); critical path {split['critical_path_ms']:.1f} "
        f"ms; stepped wall {split['stepped_wall_s'] * 1e3:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--devices", default="0,1")
    parser.add_argument("--scale", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    devices = [int(d) for d in args.devices.split(",")]
    if args.quick:
        devices, args.scale, args.rounds = [0, 1], 11, 1
    summary = anyio.run(main_async, args.quick, devices, args.scale, args.rounds)
    with open(args.out, "w") as fh:
        json.dump(summary, fh, indent=2)


if __name__ == "__main__":
    main()
