"""Scale-out end to end: one job on one GPU, on every GPU of the host, and on Ray actors.

The same job (``--items`` BFS reach counts from random sources of R-MAT scale
``--scale``, edge factor 16, seed 1, 1024 queries per traversal) runs as users run it,
``python -m vyre_async.cli run job.json`` in a child process, in up to four ways:

- ``one``: ``devices = 0`` (one local GPU);
- ``all``: ``devices = "all"`` (every local GPU, the graph replicated on each);
- ``ray``: ``executor = "ray"``, ``ray_address = "auto"``: attached to a Ray cluster
  that is already running, as users run Ray (start a cluster once, submit many jobs).
  With ``--ray-cluster start`` (the default) the benchmark starts one on this host
  (``ray start --head``, every GPU) before the timed runs and stops it at the end
  (``ray stop``, which stops every Ray instance of this user on this host);
  with ``--ray-cluster ADDRESS`` it attaches to that one. One actor per GPU, kept
  ``--ray-keep-actors-s`` seconds after each job (default 120; 0: every job starts
  its own actors), so a job takes the actors the one before it left, with the graph
  on their GPUs;
- ``ray_local``: ``executor = "ray"``, ``ray_workers = 2``, no address: the job starts
  its own local Ray instance and stops it (``--configs`` must name it).

For each run: the child's wall time (spawn to exit: Python start, Ray connection,
graph, every record committed), the runner's own seconds, the time to the first
committed block (the parent polls ``manifest.json`` every 10 ms from the spawn), where
the graph came from and how long it took (the job's ``graph_ready`` log line; for Ray,
``ray_graph``: from the cluster's graph store or put by the driver), the steady rate
after the first commit, and the job's start-up timeline (its ``startup`` log lines:
each stage's offset from the child's start, see ``bench/jobs_timeline.py``; Ray jobs
add ``ray_connected``, ``ray_actors_created`` and one ``ray_actor_ready`` per actor).
Configurations alternate for ``--repeats`` rounds, so drift hits all of them; medians
and ratios against ``one`` are reported with the targets (``all`` >= 3.5x ``one`` end
to end on four GPUs, >= 1.9x on two, >= 1.8x otherwise; ``ray`` >= 1.7x; the first
committed block <= 2 s after the spawn on ``one`` and ``all``; ``one``'s graph ready
< 2 s). The committed records of every run are compared.

The graph cache is a temporary folder: ``--graph-cache warm`` (default) fills it once
before the timed runs, as on a machine that ran the job before (a one-item job of each
configuration also fills the Ray cluster's graph store, as an earlier job on the
cluster would); ``cold`` empties it before every run, so every run builds its graph
(on a GPU where there is one); the Ray cluster's store is then left as it is.

Writes ``scale-<UTC date>.log`` (every child's output) and ``.json`` to ``--out``, else
``$OUT``, else the current folder. ``--quick`` is a CPU smoke run (CPU backend, scale
10, 3000 items, two CPU backends as the "all" devices, two Ray actors, one round)
that completes on a machine without a GPU.

Usage: ``python bench/scale.py [--items 1000000] [--repeats 3] [--configs one,all,ray]
[--ray-cluster start|ADDRESS] [--out DIR] [--quick]``
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jobs_timeline import format_startup, startup_events, startup_summary

from vyre_async.jobs import read_records
from vyre_async.testing import gpu_unavailable_reason

CONFIGS = ("one", "all", "ray")
RAY_CONFIGS = ("ray", "ray_local")
TARGETS = {"all": 1.8, "ray": 1.7}
#: ``all`` over ``one`` end to end, by how many devices ``all`` ran on.
ALL_TARGETS = {2: 1.9, 4: 3.5}
GRAPH_READY_TARGET_S = 2.0
FIRST_COMMIT_TARGET_S = 2.0


def write_job(folder: Path, config: str, args: argparse.Namespace) -> Path:
    """The job file of one configuration."""
    job: dict[str, Any] = {"name": f"scale-{config}", "backend": args.backend}
    if config == "one":
        job["devices"] = 0
    elif config == "all":
        job["devices"] = args.all_devices
    elif config == "ray":
        job |= {
            "executor": "ray",
            "ray_address": args.ray_address,
            "ray_keep_actors_s": args.ray_keep_actors_s,
            "devices": 0,
        }
        if args.quick:
            job["ray_workers"] = 2
    else:
        job |= {"executor": "ray", "ray_workers": 2, "devices": 0}
    spec = {
        "job": job,
        "graph": {"kind": "rmat", "scale": args.scale, "edge_factor": 16, "seed": 1},
        "workload": [{"kind": "bfs", "sources": {"random": args.items, "seed": 11}}],
        "batching": {"max_batch": 1024},
        "limits": {"item_timeout_s": 300.0, "retries": 2, "max_failed_items": 0},
        "output": {"dir": "out"},
        "logging": {"progress_interval_s": 30.0},
    }
    path = folder / f"{config}.json"
    path.write_text(json.dumps(spec))
    return path


def run_job(job: Path, out: Path, env: dict[str, str], log: Any) -> dict[str, Any]:
    """One job in a child process: wall time, first commit, the runner's summary."""
    manifest = out / "manifest.json"
    # What the `vyre-async` console script runs (its entry module, then the package).
    command = [sys.executable, "-m", "_vyre_async_entry", "run", str(job), "--out", str(out)]
    t0 = time.perf_counter()
    first_commit: float | None = None
    with tempfile.TemporaryFile("w+") as output:
        child = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
        while child.poll() is None:
            if first_commit is None and _has_chunk(manifest):
                first_commit = time.perf_counter() - t0
            time.sleep(0.01)
        wall = time.perf_counter() - t0
        if first_commit is None and _has_chunk(manifest):
            first_commit = wall  # committed between two polls at the very end
        output.seek(0)
        text = output.read()
    log.write(f"$ {' '.join(command)}\n{text}\n")
    log.flush()
    if child.returncode != 0:
        raise SystemExit(f"{job.name} exited {child.returncode}:\n{text[-3000:]}")
    summary = json.loads((out / "summary.json").read_text())
    events = startup_events(out)
    log.write(f"start-up timeline of {job.name}:\n{format_startup(events)}\n\n")
    log.flush()
    ready = _event(out / "log.jsonl", "graph_ready")
    ray_graph = _event(out / "log.jsonl", "ray_graph")
    seconds = summary["seconds"]
    items = summary["items_this_run"]
    steady = None
    if first_commit is not None and wall > first_commit:
        steady = items / (wall - first_commit)
    return {
        "wall_s": wall,
        "runner_s": seconds,
        "first_commit_s": first_commit,
        "graph_origin": ready.get("origin"),
        "graph_ready_s": ready.get("seconds"),
        "ray_graph_origin": ray_graph.get("origin"),
        "ray_graph_put_s": ray_graph.get("seconds"),
        "ray_warm_actors": _event(out / "log.jsonl", "ray_actors_started").get("warm"),
        "items": items,
        "items_per_s_wall": items / wall,
        "items_per_s_after_first_commit": steady,
        "device": summary["device"],
        "backend": summary["backend"],
        "batches": summary.get("batches"),
        "startup": startup_summary(events),
    }


def _has_chunk(manifest: Path) -> bool:
    try:
        return bool(json.loads(manifest.read_text()).get("chunks"))
    except (OSError, ValueError):
        return False  # not there yet, or caught mid-replace


def _event(log_file: Path, name: str) -> dict[str, Any]:
    try:
        lines = log_file.read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == name:
            return dict(event)
    return {}


def records_of(out: Path) -> list[tuple[int, int | None]]:
    """The committed (id, reached) pairs of a run, sorted."""
    return sorted((r.id, r.reached) for r in read_records(out))


def main() -> None:
    """Run the three configurations in alternation; write the log and the JSON summary."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=int, default=22)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backend", choices=["cuda", "cpu", "auto"], default="cuda")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--graph-cache", choices=["warm", "cold"], default="warm")
    parser.add_argument(
        "--ray-cluster",
        default="start",
        help="'start': start a Ray cluster here for the ray configuration and stop it "
        "afterwards; else the address of a running one",
    )
    parser.add_argument(
        "--ray-keep-actors-s",
        type=float,
        default=120.0,
        help="[job] ray_keep_actors_s of the ray configuration (0: actors per job)",
    )
    parser.add_argument("--quick", action="store_true", help="CPU smoke run (no GPU needed)")
    parser.add_argument("--out", default=None, help="folder for the log and JSON (else $OUT)")
    args = parser.parse_args()
    args.all_devices = "all"
    if args.quick:
        args.backend, args.scale, args.items, args.repeats = "cpu", 10, 3000, 1
        args.all_devices = [0, 1]  # two CPU backends stand in for two GPUs
    configs = [c for c in args.configs.split(",") if c]
    if any(c in RAY_CONFIGS for c in configs) and not _has_ray():
        raise SystemExit(
            "Ray is not installed: pip install 'vyre-async[ray]', or --configs one,all"
        )
    args.ray_address = "auto" if args.ray_cluster == "start" else args.ray_cluster
    out = Path(args.out or os.environ.get("OUT") or ".")
    out.mkdir(parents=True, exist_ok=True)
    date = datetime.datetime.now(datetime.UTC)
    stem = out / f"scale-{date:%Y%m%dT%H%M%SZ}"
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
    with (
        tempfile.TemporaryDirectory() as tmp,
        open(f"{stem}.log", "w") as log,
        ray_cluster(args, "ray" in configs, log),
    ):
        folder = Path(tmp)
        graphs = folder / "graph-cache"
        # The kernel cache stays where it is; only the graph cache is ours.
        env = dict(os.environ, VYRE_ASYNC_GRAPH_CACHE_DIR=str(graphs))
        jobs = {c: write_job(folder, c, args) for c in configs}
        if args.graph_cache == "warm":
            # A one-item job of the same graph builds it and fills the cache (and the
            # kernel cache, so no timed run compiles); on Ray, it fills the cluster's
            # graph store as an earlier job would.
            one_item = argparse.Namespace(**{**vars(args), "items": 1})
            for config in ("one", *(c for c in configs if c == "ray")):
                warm_job = write_job(folder, config, one_item)
                warm = run_job(warm_job, folder / "warm", env, log)
                print(f"warm-up {config} (1 item): {json.dumps(warm)}", flush=True)
                shutil.rmtree(folder / "warm")
            jobs = {c: write_job(folder, c, args) for c in configs}
        reference: list[tuple[int, int | None]] | None = None
        for round_ in range(args.repeats):
            for config in configs:
                if args.graph_cache == "cold":
                    shutil.rmtree(graphs, ignore_errors=True)
                where = folder / f"{config}-{round_}"
                result = run_job(jobs[config], where, env, log)
                runs[config].append(result)
                print(f"round {round_} {config}: {json.dumps(result)}", flush=True)
                got = records_of(where)
                if reference is None:
                    reference = got
                elif got != reference:
                    raise SystemExit(f"{config} committed other records than the first run")
                if len(got) != args.items:
                    raise SystemExit(f"{config} committed {len(got)} of {args.items} items")
                shutil.rmtree(where)
    summary = _summary(args, date, runs)
    Path(f"{stem}.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: summary[k] for k in ("medians", "ratios", "targets")}, indent=2))
    print(f"wrote {stem}.json and {stem}.log")


@contextlib.contextmanager
def ray_cluster(args: argparse.Namespace, wanted: bool, log: Any) -> Iterator[None]:
    """A Ray cluster on this host for the ``ray`` configuration (``ray start --head``
    with every GPU, as a user starts one), stopped afterwards; nothing when the
    configuration is not run or ``--ray-cluster`` names a running one."""
    if not wanted or args.ray_cluster != "start":
        yield
        return
    ray_cli = [sys.executable, "-m", "ray.scripts.scripts"]
    start = [*ray_cli, "start", "--head", "--disable-usage-stats", "--include-dashboard=false"]
    if args.quick:
        start.append("--num-cpus=4")
    t0 = time.perf_counter()
    done = subprocess.run(start, capture_output=True, text=True, check=False)
    log.write(f"$ {' '.join(start)}\n{done.stdout}{done.stderr}\n")
    if done.returncode != 0:
        raise SystemExit(f"ray start failed ({done.returncode}):\n{done.stderr[-2000:]}")
    print(f"Ray cluster started in {time.perf_counter() - t0:.1f} s", flush=True)
    try:
        yield
    finally:
        stop = subprocess.run([*ray_cli, "stop"], capture_output=True, text=True, check=False)
        last = (stop.stdout + stop.stderr).strip().splitlines()[-1:]
        log.write(f"$ ray stop\n{''.join(last)}\n")


def _has_ray() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def _summary(
    args: argparse.Namespace, date: datetime.datetime, runs: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    def median(config: str, key: str) -> float | None:
        values = [r[key] for r in runs.get(config, []) if r.get(key) is not None]
        return statistics.median(values) if values else None

    keys = ("wall_s", "runner_s", "first_commit_s", "graph_ready_s", "items_per_s_wall")
    medians = {c: {k: median(c, k) for k in keys} for c in runs}
    ratios: dict[str, float | None] = {}
    one = medians.get("one", {}).get("wall_s")
    for config in ("all", *RAY_CONFIGS):
        wall = medians.get(config, {}).get("wall_s")
        ratios[f"{config}_over_one_end_to_end"] = one / wall if one and wall else None
    devices = [r["device"].count(" + ") + 1 for r in runs.get("all", [])]
    goals = dict(TARGETS)
    if devices:
        goals["all"] = ALL_TARGETS.get(devices[0], TARGETS["all"])
    targets: dict[str, bool | None] = {
        f"{c} >= {t}x one local GPU end to end": (
            None
            if ratios[f"{c}_over_one_end_to_end"] is None
            else ratios[f"{c}_over_one_end_to_end"] >= t  # type: ignore[operator]
        )
        for c, t in goals.items()
        if c in runs
    }
    for config in ("one", "all"):
        first = medians.get(config, {}).get("first_commit_s")
        if config in runs:
            targets[f"{config}: first committed block <= {FIRST_COMMIT_TARGET_S:g} s"] = (
                None if first is None else first <= FIRST_COMMIT_TARGET_S
            )
    ready = medians.get("one", {}).get("graph_ready_s")
    targets[f"one: graph ready < {GRAPH_READY_TARGET_S:g} s"] = (
        None if ready is None else ready < GRAPH_READY_TARGET_S
    )
    smi = (
        subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if shutil.which("nvidia-smi")
        else ""
    )
    return {
        "benchmark": "scale",
        "date": date.isoformat(timespec="seconds"),
        "device": smi or f"none ({gpu_unavailable_reason()})",
        "driver": {
            "host": platform.node(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "backend": args.backend,
        },
        "job": {
            "scale": args.scale,
            "edge_factor": 16,
            "items": args.items,
            "max_batch": 1024,
            "graph_cache": args.graph_cache,
            "ray_cluster": args.ray_cluster,
            "ray_keep_actors_s": args.ray_keep_actors_s,
        },
        "quick_cpu_smoke_run": args.quick,
        "repeats": args.repeats,
        "runs": runs,
        "medians": medians,
        "ratios": ratios,
        "targets": targets,
    }


if __name__ == "__main__":
    main()
