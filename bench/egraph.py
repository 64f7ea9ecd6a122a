"""E-graph canonicalization and image upload, every comparison in one run (issue 7).

(a) canonicalization of random e-graphs with 1e5, 1e6 and 1e7 rows: the chosen
    backend (GPU with ``--backend cuda``) vs the CPU backend vs a plain-Python
    congruence closure, each checked to give the same partition
(b) ``upload_egraph`` bandwidth vs a plain host-to-device copy from pinned memory
    (CuPy) measured in the same run; on the CPU backend, vs a host memcpy

Raw lines go to stdout; ``--out`` gets a JSON summary (device, driver, date, medians).

Usage: ``python bench/egraph.py --backend cuda --out results.json``
       ``python bench/egraph.py --backend cpu --max-rows 100000 --out cpu.json``
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

import vyre_async as va

# The plain-Python reference is the tests' own, so the two can never drift apart.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from egraph_references import congruence_closure

from vyre_async.algorithms.egraph import (
    BorrowedEGraphUploadPlan,
    EGraphSnapshot,
    EGraphUploadPlan,
    borrow_egraph_image,
    pack_egraph,
    packed_words,
    plan_egraph_upload,
)

SIZES = (10**5, 10**6, 10**7)


def random_snapshot(rows: int, seed: int) -> EGraphSnapshot:
    """A random e-graph of ``rows`` rows with natural, planted and chained congruences.

    Half as many classes as rows; leaves are unique (variables), inner rows use 32
    operators over random children, 1% of rows are copies of another row put into
    another class, and 16 chains of depth 8 need 9+ rounds to merge fully.
    """
    rng = np.random.default_rng(seed)
    chain_rows = 16 * 2 * 9
    base = rows - chain_rows - rows // 100
    classes = base // 2
    eclass = np.concatenate([np.arange(classes), rng.integers(0, classes, base - classes)])
    arity = rng.choice(4, base, p=[0.25, 0.3, 0.35, 0.1])
    ops = np.where(arity == 0, 1000 + np.arange(base), rng.integers(0, 32, base))
    children = rng.integers(0, classes, int(arity.sum()))
    starts = np.cumsum(arity) - arity
    copies = rng.integers(0, base, rows // 100)
    copy_kids = children[np.repeat(starts[copies], arity[copies]) + _within(arity[copies])]
    eclass = np.concatenate([eclass, rng.integers(0, classes, copies.size)])
    ops, arity = np.concatenate([ops, ops[copies]]), np.concatenate([arity, arity[copies]])
    children = np.concatenate([children, copy_kids])
    chain_ops, chain_kids, chain_class, chain_arity = [], [], [], []
    next_class, next_op = classes, 10**9
    for _ in range(16):
        p, q = next_class, next_class + 1
        next_class += 2
        chain_class += [p, q]
        chain_ops += [next_op, next_op]
        chain_arity += [0, 0]
        for _ in range(8):
            extra = int(rng.integers(0, classes))
            next_op += 1
            chain_class += [next_class, next_class + 1]
            chain_ops += [next_op, next_op]
            chain_arity += [2, 2]
            chain_kids += [p, extra, q, extra]
            p, q = next_class, next_class + 1
            next_class += 2
        next_op += 1
    eclass = np.concatenate([eclass, chain_class])
    ops = np.concatenate([ops, chain_ops])
    arity = np.concatenate([arity, chain_arity])
    children = np.concatenate([children, chain_kids])
    offsets = np.zeros(arity.size + 1, dtype=np.int64)
    np.cumsum(arity, out=offsets[1:])
    return EGraphSnapshot(eclass, ops, offsets, children, num_classes=next_class)


def _within(lens: np.ndarray) -> np.ndarray:
    first = np.cumsum(lens) - lens
    return np.arange(int(lens.sum())) - np.repeat(first, lens)


def python_closure(snapshot: EGraphSnapshot) -> tuple[list[int], int]:
    """The tests' plain-Python congruence closure (a dict of keys, a union-find)."""
    offsets = snapshot.children_offsets.tolist()
    kids_all = snapshot.children.tolist()
    rows = [
        (c, op, tuple(kids_all[offsets[i] : offsets[i + 1]]))
        for i, (c, op) in enumerate(
            zip(snapshot.eclass_ids.tolist(), snapshot.op_ids.tolist(), strict=True)
        )
    ]
    return congruence_closure(rows, snapshot.num_classes)


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two labelings put exactly the same ids together."""
    pairs = np.unique(np.stack([a.astype(np.int64), b.astype(np.int64)]), axis=1).shape[1]
    return pairs == np.unique(a).size == np.unique(b).size


async def canonicalize_on(backend: va.Backend, plan: EGraphUploadPlan, runs: int) -> dict[str, Any]:
    """Session upload, then ``runs`` canonicalizations; wall and device seconds each."""
    t0 = time.perf_counter()
    async with va.egraph_session(backend, plan) as session:
        open_s = time.perf_counter() - t0
        walls, devices = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            result = await session.canonicalize()
            walls.append(time.perf_counter() - t0)
            devices.append(result.device_ns / 1e9)
    return {
        "open_s": open_s,
        "wall_s": walls,
        "device_s": devices,
        "median_wall_s": statistics.median(walls),
        "rounds": result.rounds,
        "merges": result.merges,
        "class_map": result.class_map,
    }


async def upload_bandwidth(
    backend: va.Backend, plan: EGraphUploadPlan | BorrowedEGraphUploadPlan, runs: int
) -> float:
    """Bytes per second of ``upload_egraph`` (median over runs), the buffer freed each time."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        resident = await va.upload_egraph(backend, plan)
        times.append(time.perf_counter() - t0)
        await backend.free(resident.buffer)
    return plan.nbytes / statistics.median(times)


def plan_in_pinned_memory(snapshot: EGraphSnapshot, kind: str) -> Any:
    """The snapshot packed straight into page-locked memory (CuPy), as a borrowed plan."""
    if kind != "cuda":
        return None
    import cupyx

    words = cupyx.empty_pinned((packed_words(snapshot),), dtype=np.dtype("<u4"))
    packed, layout = pack_egraph(snapshot, out=words)
    return borrow_egraph_image(packed, layout)


def baseline_bandwidth(kind: str, nbytes: int, runs: int) -> tuple[float, str]:
    """Pinned host-to-device copy bandwidth (CuPy, CUDA events), or host memcpy on CPU."""
    if kind == "cpu":
        src = np.ones(nbytes // 4, np.uint32)
        dst = np.empty_like(src)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            np.copyto(dst, src)
            times.append(time.perf_counter() - t0)
        return nbytes / statistics.median(times), "host memcpy (np.copyto), no device"
    import cupy as cp
    import cupyx

    host = cupyx.empty_pinned((nbytes // 4,), dtype=np.uint32)
    host[...] = 1
    dev = cp.empty(host.shape, dtype=cp.uint32)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    samples = []
    for _ in range(runs + 1):
        start.record()
        dev.set(host)
        end.record()
        end.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    return nbytes / statistics.median(samples[1:]), "cupy pinned host-to-device copy"


def device_record(backend: va.Backend) -> dict[str, Any]:
    """Device name and driver of the backend in use."""
    if backend.kind == "cuda":
        info = backend.device_info  # type: ignore[attr-defined]
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        return {"name": info.name, "driver_version": info.driver_version, "nvidia_smi": smi}
    return {"name": backend.device_name, "driver_version": "n/a (cpu backend)"}


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    value = fn(*args)
    return value, time.perf_counter() - t0


async def one_size(backend: va.Backend, rows: int, args: argparse.Namespace) -> dict[str, Any]:
    """Every comparison for one e-graph size; prints a raw line per measurement."""
    snapshot, gen_s = await anyio.to_thread.run_sync(_timed, random_snapshot, rows, args.seed)
    plan, pack_s = await anyio.to_thread.run_sync(_timed, plan_egraph_upload, snapshot)
    record: dict[str, Any] = {
        "rows": snapshot.num_rows,
        "children": snapshot.num_children,
        "classes": snapshot.num_classes,
        "image_bytes": plan.nbytes,
        "generate_s": gen_s,
        "pack_s": pack_s,
    }
    print(
        f"rows={rows} classes={snapshot.num_classes} children={snapshot.num_children} "
        f"image={plan.nbytes / 2**20:.1f} MiB generated in {gen_s:.2f} s, packed in {pack_s:.2f} s"
    )
    main = await canonicalize_on(backend, plan, args.runs)
    record[backend.kind] = {k: v for k, v in main.items() if k != "class_map"}
    print(
        f"  {backend.kind}: canonicalize median {main['median_wall_s'] * 1e3:.2f} ms wall, "
        f"device {statistics.median(main['device_s']) * 1e3:.2f} ms, rounds={main['rounds']}, "
        f"merges={main['merges']}, session open {main['open_s'] * 1e3:.1f} ms"
    )
    if backend.kind != "cpu":
        if rows <= args.cpu_max_rows:
            async with va.open_backend("cpu") as cpu_backend:
                cpu = await canonicalize_on(cpu_backend, plan, 1)
            agree = await anyio.to_thread.run_sync(
                same_partition, cpu["class_map"], main["class_map"]
            )
            record["cpu"] = {k: v for k, v in cpu.items() if k != "class_map"} | {"agrees": agree}
            print(
                f"  cpu backend: {cpu['median_wall_s']:.3f} s wall, rounds={cpu['rounds']}, "
                f"same partition as {backend.kind}: {agree}"
            )
        else:
            record["cpu"] = {"skipped": f"above --cpu-max-rows={args.cpu_max_rows}"}
            print(
                f"  cpu backend: skipped, {rows} rows is above --cpu-max-rows="
                f"{args.cpu_max_rows} (it would take minutes)"
            )
    if rows <= args.python_max_rows:
        (closure, rounds), py_s = await anyio.to_thread.run_sync(_timed, python_closure, snapshot)
        agree = await anyio.to_thread.run_sync(
            same_partition, np.asarray(closure), main["class_map"]
        )
        record["python"] = {"wall_s": py_s, "rounds": rounds, "agrees": agree}
        print(
            f"  plain python: {py_s:.3f} s wall, rounds={rounds}, "
            f"same partition as {backend.kind}: {agree}"
        )
    else:
        record["python"] = {"skipped": f"above --python-max-rows={args.python_max_rows}"}
        print(
            f"  plain python: skipped, {rows} rows is above --python-max-rows="
            f"{args.python_max_rows} (minutes of pure-Python loops)"
        )
    upload = await upload_bandwidth(backend, plan, args.runs)
    base, how = await anyio.to_thread.run_sync(
        baseline_bandwidth, backend.kind, plan.nbytes, args.runs
    )
    record["upload"] = {
        "upload_egraph_gbs": upload / 1e9,
        "baseline_gbs": base / 1e9,
        "baseline": how,
        "ratio": upload / base,
    }
    pinned_plan = await anyio.to_thread.run_sync(plan_in_pinned_memory, snapshot, backend.kind)
    if pinned_plan is not None:
        from_pinned = await upload_bandwidth(backend, pinned_plan, args.runs)
        record["upload"] |= {
            "upload_egraph_from_pinned_gbs": from_pinned / 1e9,
            "from_pinned_ratio": from_pinned / base,
        }
        print(
            f"  upload_egraph of an image packed into pinned memory: "
            f"{from_pinned / 1e9:.2f} GB/s ({100 * from_pinned / base:.0f}%)"
        )
    print(
        f"  upload_egraph {upload / 1e9:.2f} GB/s vs {how} {base / 1e9:.2f} GB/s "
        f"({100 * upload / base:.0f}%)"
    )
    for other in ("cpu", "python"):
        wall = record.get(other, {}).get("median_wall_s", record.get(other, {}).get("wall_s"))
        if wall and other != backend.kind:
            record[f"speedup_over_{other}"] = wall / main["median_wall_s"]
    return record


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Open the backend once and measure every size."""
    async with va.open_backend(args.backend) as backend:
        summary: dict[str, Any] = {
            "benchmark": "egraph",
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "backend": backend.kind,
            "device": device_record(backend),
            "host": f"{platform.machine()} {platform.processor()}".strip(),
            "runs": args.runs,
            "sizes": [],
        }
        print(f"backend={backend.kind} device={backend.device_name}")
        for rows in (s for s in SIZES if s <= args.max_rows):
            summary["sizes"].append(await one_size(backend, rows, args))
    return summary


def main() -> None:
    """Parse arguments, run, write the JSON summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--out", help="JSON summary file")
    parser.add_argument("--max-rows", type=int, default=SIZES[-1])
    parser.add_argument("--cpu-max-rows", type=int, default=SIZES[-1])
    parser.add_argument("--python-max-rows", type=int, default=10**6)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    summary = anyio.run(run, args)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(summary, fh, indent=2)
    print(
        json.dumps(
            {
                "medians": [
                    {
                        k: v
                        for k, v in s.items()
                        if k in ("rows", "speedup_over_cpu", "speedup_over_python")
                    }
                    | {"wall_s": s[summary["backend"]]["median_wall_s"], "upload": s["upload"]}
                    for s in summary["sizes"]
                ]
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
