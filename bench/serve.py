"""Queries over HTTP: open-loop Poisson load of ``reach`` queries, batching on and off.

Starts ``vyre-async serve`` (a child process, Hypercorn on one event loop) over one
R-MAT graph (scale 20, edge factor 16, seed 7) twice: (a) with the graph's batcher
(``max_batch`` 1024) and (b) with batching off (each request its own traversal). Each
server is offered increasing rates of ``POST /v1/graphs/rmat/reach`` with Poisson
arrivals (open loop: a request is due at its arrival time whatever the server does;
its latency counts from then), each step bounded in time (``--duration``) and count,
on loopback only, from ``--clients`` generator processes sending raw HTTP/1.1 over
keep-alive connections (asyncio streams, no HTTP library: a lean client; httpx took
about 10x its client CPU per request, 1.8 ms against 0.15 to 0.2 ms on a shared CPU
host). A mode's ramp stops at the first rate it does not keep up with.

Per step: offered and achieved rate (200 answers per second of the step's span),
p50/p99 latency (arrival to last byte), 429s and other failures, the generator's own
lateness (a task started after its arrival time; p99 well under the latency means the
generator is not the bottleneck), and from the ``Server-Timing`` header the query's
time in the session (``query``) and the app's time around it (``app``: token, routing,
decoding, validation, encoding). The server's own overhead per request at p50, at the
lowest rate, is (client latency from the send) - (query time): HTTP both ways,
Hypercorn, validation and encoding, plus the client's own parsing, so an upper bound.
A last step offers the top rate to ``GET /v2/health/live``: the ceiling of HTTP and the
generator together, with no query.

Saturation of a mode: the highest offered rate it keeps up with (achieved >= 90% of
offered, under 1% refused); its throughput and p99 there. Targets (GPU): batched >= 5x
the unbatched saturation throughput at a p99 <= 1.25x the unbatched p99 at its
saturation (the best batched step under that p99 is reported); overhead <= 100 us p50.
Answers are checked: each source's answer is the same in both modes, and a few
sources' answers equal SciPy's.

Usage: ``python bench/serve.py --out results.json [--log run.log] [--scale 20]
[--worker asyncio|uvloop|trio] [--quick]`` (``--quick``: the CPU backend, R-MAT 10 and low
rates, to try it anywhere).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import math
import multiprocessing
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

SEED = 20261128
GRAPH = "rmat"
#: Longest a server may take to start and load its graph.
READY_S = 600.0
#: A step keeps up when it answers this share of its offered rate...
KEEP_UP = 0.9
#: ...and refuses less than this share of its requests.
MAX_REFUSED = 0.01
_TIMING = re.compile(rb"(query|app);dur=([0-9.]+)")


# ---------------------------------------------------------------- the generator
@dataclass(frozen=True)
class Step:
    """One client process's share of one step of load."""

    port: int
    path: str
    method: str
    rate: float
    duration: float
    max_requests: int
    sources: np.ndarray
    seed: int
    start_at: float
    max_connections: int


#: Columns of a step's records (float64 seconds on the monotonic clock, or numbers).
COLUMNS = ("due", "started", "sent", "done", "status", "query_ms", "app_ms", "source", "answer")


def _request(step: Step, source: int) -> bytes:
    if step.method == "GET":
        return f"GET {step.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    body = b'{"source":%d}' % source
    return (
        f"POST {step.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _load(step: Step) -> np.ndarray:
    """Send ``step``'s Poisson arrivals; one record row per request."""
    rng = np.random.default_rng(step.seed)
    gaps = rng.exponential(1.0 / step.rate, step.max_requests)
    due = np.cumsum(gaps)
    due = due[due < step.duration] + step.start_at
    picks = step.sources[rng.integers(0, step.sources.size, due.size)]
    rows = np.full((due.size, len(COLUMNS)), np.nan)
    rows[:, 0] = due
    rows[:, 7] = picks
    idle: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
    opened = 0
    writers: list[asyncio.StreamWriter] = []

    async def connection() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        nonlocal opened
        if not idle.empty():
            return idle.get_nowait()
        if opened < step.max_connections:
            opened += 1
            pair = await asyncio.open_connection("127.0.0.1", step.port)
            writers.append(pair[1])
            return pair
        return await idle.get()

    async def one(index: int) -> None:
        nonlocal opened
        row = rows[index]
        row[1] = time.monotonic()
        try:
            reader, writer = await connection()
        except OSError:
            opened -= 1
            row[4] = -1
            row[3] = time.monotonic()
            return
        try:
            row[2] = time.monotonic()
            writer.write(_request(step, int(row[7])))
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            keep = True
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                lowered = name.lower()
                if lowered == b"content-length":
                    length = int(value)
                elif lowered == b"connection":
                    keep = b"close" not in value.lower()
                elif lowered == b"server-timing":
                    for key, dur in _TIMING.findall(value):
                        row[5 if key == b"query" else 6] = float(dur)
            body = await reader.readexactly(length)
            row[3] = time.monotonic()
            row[4] = int(head[9:12])
            if row[4] == 200 and body.startswith(b'{"answer":'):
                row[8] = int(body[10:-1])
            if keep:
                idle.put_nowait((reader, writer))
            else:  # Hypercorn closes a connection after its 1000th request
                opened -= 1
                writer.close()
        except (OSError, asyncio.IncompleteReadError, ValueError):
            row[3] = time.monotonic()
            row[4] = -1
            opened -= 1
            writer.close()

    tasks: set[asyncio.Task[None]] = set()
    index = 0
    while index < due.size:
        now = time.monotonic()
        while index < due.size and due[index] <= now:
            task = asyncio.create_task(one(index))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            index += 1
        if index < due.size:
            await asyncio.sleep(max(0.0, due[index] - time.monotonic()))
    while tasks:
        await asyncio.gather(*list(tasks))
    for writer in writers:
        writer.close()
    return rows


def _run_step(step: Step) -> np.ndarray:
    """A client process's work: one step, on a fresh event loop (uvloop's, where
    installed: the leaner generator)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(_load(step))
    return uvloop.run(_load(step))  # type: ignore[no-any-return]


def generator_loop() -> str:
    """The generator's event loop."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


# --------------------------------------------------------------------- summaries
def _percentile(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if values.size else None


def summarize(rows: np.ndarray, offered: float) -> dict[str, Any]:
    """One step's numbers (milliseconds for times)."""
    due, started, sent, done, status = (rows[:, i] for i in range(5))
    ok = status == 200
    span = float(np.nanmax(done) - np.nanmin(due)) if rows.size else 0.0
    latency = (done - due)[ok] * 1e3
    from_send = (done - sent)[ok] * 1e3
    query_ms = rows[ok, 5]
    achieved = float(ok.sum() / span) if span > 0 else 0.0
    refused = int((status == 429).sum() + (status == 503).sum())
    overhead = from_send - query_ms
    return {
        "offered_per_s": offered,
        "requests": int(rows.shape[0]),
        "answered": int(ok.sum()),
        "refused_429_503": refused,
        "failed": int(rows.shape[0] - ok.sum() - refused),
        "span_s": span,
        "achieved_per_s": achieved,
        "p50_ms": _percentile(latency, 50),
        "p99_ms": _percentile(latency, 99),
        "query_p50_ms": _percentile(query_ms[~np.isnan(query_ms)], 50),
        "app_p50_us": _nan_percentile_us(rows[ok, 6], 50),
        "overhead_p50_us": _nan_percentile_us(overhead, 50),
        "generator_lag_p50_ms": _percentile((started - due) * 1e3, 50),
        "generator_lag_p99_ms": _percentile((started - due) * 1e3, 99),
        "kept_up": bool(achieved >= KEEP_UP * offered and refused <= MAX_REFUSED * rows.shape[0]),
    }


def _nan_percentile_us(ms: np.ndarray, q: float) -> float | None:
    values = ms[~np.isnan(ms)]
    return float(np.percentile(values, q) * 1e3) if values.size else None


def saturation(steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The highest step a mode kept up with (None: not even the first)."""
    kept = [s for s in steps if s["kept_up"]]
    return max(kept, key=lambda s: s["offered_per_s"]) if kept else None


def verdict(batched: list[dict[str, Any]], unbatched: list[dict[str, Any]]) -> dict[str, Any]:
    """The targets: throughput ratio at the p99 bound, and the overhead."""
    sat_b, sat_u = saturation(batched), saturation(unbatched)
    out: dict[str, Any] = {
        "batched_saturation": sat_b,
        "unbatched_saturation": sat_u,
        "batched_peak_per_s": max((s["achieved_per_s"] for s in batched), default=0.0),
        "unbatched_peak_per_s": max((s["achieved_per_s"] for s in unbatched), default=0.0),
    }
    if sat_b is None or sat_u is None:
        return out
    bound = 1.25 * sat_u["p99_ms"]
    under = [s for s in batched if s["kept_up"] and s["p99_ms"] <= bound]
    best = max(under, key=lambda s: s["achieved_per_s"]) if under else None
    ratio = best["achieved_per_s"] / sat_u["achieved_per_s"] if best else 0.0
    overhead = batched[0]["overhead_p50_us"]
    out |= {
        "p99_bound_ms": bound,
        "batched_best_under_bound": best,
        "throughput_ratio_at_p99_bound": ratio,
        "saturation_ratio": sat_b["achieved_per_s"] / sat_u["achieved_per_s"],
        "target_throughput_5x_met": bool(ratio >= 5.0),
        "overhead_p50_us": overhead,
        "app_p50_us": batched[0]["app_p50_us"],
        "target_overhead_100us_met": bool(overhead is not None and overhead <= 100.0),
    }
    return out


# ------------------------------------------------------------------- the server
@contextlib.contextmanager
def server(config: dict[str, Any], folder: Path, log: TextIO) -> Iterator[int]:
    """``vyre-async serve`` on a free loopback port, ready; SIGTERM at the end."""
    path = folder / "serve.json"
    path.write_text(json.dumps(config))
    child = subprocess.Popen(
        [sys.executable, "-m", "vyre_async", "serve", str(path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        match = re.search(r":(\d+)$", line.strip())
        if match is None:
            raise RuntimeError(f"the server did not start: {line!r} (see the log)")
        port = int(match.group(1))
        deadline = time.monotonic() + READY_S
        while _status(port, "/v2/health/ready") != 200:
            if child.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not become ready (see the log)")
            time.sleep(0.05)
        yield port
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(60)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return int(answer.status)
    except OSError as exc:
        return int(getattr(exc, "code", 0) or 0)


def serve_config(args: argparse.Namespace, batched: bool) -> dict[str, Any]:
    """The serve config of one mode."""
    batching: dict[str, Any] = {"enabled": batched, "queue_size": args.queue_size}
    if batched:
        batching |= {"max_batch": 1024, "max_delay_ms": args.max_delay_ms, "in_flight": 2}
    return {
        "server": {
            "host": "127.0.0.1",
            "backend": args.backend,
            "devices": 0,
            "worker": args.worker,
        },
        "limits": {"retry_after_s": 1},
        "graphs": [
            {
                "name": GRAPH,
                "graph": {"kind": "rmat", "scale": args.scale, "edge_factor": 16, "seed": 7},
                "batching": batching,
            }
        ],
        "logging": {"level": "warning"},
    }


# ----------------------------------------------------------------------- steps
def run_step(
    pool: Any, args: argparse.Namespace, port: int, rate: float, sources: np.ndarray, seed: int,
    path: str = f"/v1/graphs/{GRAPH}/reach", method: str = "POST",
) -> np.ndarray:  # fmt: skip
    """Offer ``rate`` requests per second for ``args.duration`` seconds; every row."""
    per = rate / args.clients
    start = time.monotonic() + 0.2
    count = max(1, math.ceil(per * args.duration * 2) + 16)
    steps = [
        Step(port, path, method, per, args.duration, count, sources, seed * 1000 + i, start,
             args.connections)
        for i in range(args.clients)
    ]  # fmt: skip
    return np.concatenate(pool.map(_run_step, steps))


def ramp(
    pool: Any, args: argparse.Namespace, port: int, sources: np.ndarray, say: Any, mode: str
) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """Increasing rates until one is not kept up with; each step's summary, and the
    answers seen (source: answer)."""
    run_step(pool, args, port, args.rates[0], sources, 1)  # warm-up: kernels, connections
    steps: list[dict[str, Any]] = []
    answers: dict[int, set[int]] = {}
    for i, rate in enumerate(args.rates):
        rows = run_step(pool, args, port, rate, sources, 2 + i)
        step = summarize(rows, rate)
        steps.append(step)
        answered = rows[(rows[:, 4] == 200) & ~np.isnan(rows[:, 8])]
        for source, answer in answered[:, 7:9]:
            answers.setdefault(int(source), set()).add(int(answer))
        say(
            f"  {mode} {rate:9.0f}/s: {step['achieved_per_s']:9.0f}/s answered, "
            f"p50 {_ms(step['p50_ms'])} p99 {_ms(step['p99_ms'])} ms, "
            f"refused {step['refused_429_503']}, failed {step['failed']}, "
            f"query p50 {_ms(step['query_p50_ms'])} ms, app p50 {_us(step['app_p50_us'])} us, "
            f"overhead p50 {_us(step['overhead_p50_us'])} us, "
            f"generator lag p99 {_ms(step['generator_lag_p99_ms'])} ms"
            + ("" if step["kept_up"] else "  (not kept up)")
        )
        if not step["kept_up"]:
            break
    if any(len(seen) != 1 for seen in answers.values()):
        raise AssertionError(f"{mode}: a source got two different answers")
    return steps, {source: seen.pop() for source, seen in answers.items()}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def check_against_scipy(graph: Any, answers: dict[int, int], count: int = 3) -> list[int]:
    """A few sources' answers against SciPy's breadth-first order; the sources checked."""
    from scipy.sparse import csgraph, csr_array

    matrix = csr_array(
        (np.ones(graph.num_edges, np.int8), graph.indices, graph.offsets),
        shape=(graph.num_vertices, graph.num_vertices),
    )
    checked = sorted(answers)[:count]
    for source in checked:
        reached = csgraph.breadth_first_order(matrix, source, return_predecessors=False).size
        if reached != answers[source]:
            raise AssertionError(f"source {source}: served {answers[source]}, SciPy {reached}")
    return checked


def environment(backend: str) -> dict[str, Any]:
    """The device record of the backend the servers ran on."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from device_record import environment as record

    import vyre_async as va

    async def opened() -> dict[str, Any]:
        async with va.open_backend(backend) as opened_backend:
            return record(opened_backend)

    import anyio

    return anyio.run(opened)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the JSON summary")
    parser.add_argument("--log", help="also write the progress lines here")
    parser.add_argument("--scale", type=int, default=20, help="R-MAT scale (default 20)")
    parser.add_argument("--duration", type=float, default=2.0, help="seconds per step")
    parser.add_argument("--rates", type=str, default="", help="comma-separated offered rates")
    parser.add_argument("--clients", type=int, default=min(8, max(2, (os.cpu_count() or 4) // 4)))
    parser.add_argument("--connections", type=int, default=256, help="per client process")
    parser.add_argument("--queue-size", type=int, default=8192)
    parser.add_argument("--max-delay-ms", type=float, default=0.5)
    parser.add_argument("--backend", default="cuda", choices=["cuda", "cpu", "auto"])
    parser.add_argument("--worker", default="asyncio", choices=["asyncio", "uvloop", "trio"])
    parser.add_argument("--quick", action="store_true", help="CPU, R-MAT 10, low rates")
    args = parser.parse_args()
    if args.quick:
        args.backend, args.scale, args.duration, args.clients = "cpu", min(args.scale, 10), 1.0, 2
    default_rates = "25,50,100,200,400" if args.quick else (
        "250,500,1000,1400,2000,2800,4000,5600,8000,11000,16000,22000,32000"
    )  # fmt: skip
    args.rates = [float(r) for r in (args.rates or default_rates).split(",")]
    log = open(args.log, "w") if args.log else None  # noqa: SIM115 - closed below

    def say(line: str) -> None:
        print(line, flush=True)
        if log is not None:
            print(line, file=log, flush=True)

    # A SIGTERM (a `timeout` around the run) unwinds, so each server is stopped too.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    # The generator processes fork before this process imports vyre_async (or starts
    # any thread), and serve every step.
    context = multiprocessing.get_context("fork")
    with context.Pool(args.clients) as pool:
        write(args.out, measure(args, pool, say))
    if log is not None:
        log.close()


def measure(args: argparse.Namespace, pool: Any, say: Any) -> dict[str, Any]:
    """Both modes' ramps, the checks of their answers, and the JSON record (written
    after each mode too, with ``complete`` false, so a run cut short keeps its steps)."""
    from vyre_async.graphs import rmat

    started = time.monotonic()
    graph = rmat(args.scale, 16, 7)
    degrees = np.diff(graph.offsets)
    candidates = np.flatnonzero(degrees > 0)
    sources = np.random.default_rng(SEED).choice(candidates, min(4096, candidates.size), False)
    say(
        f"rmat{args.scale}: {graph.num_vertices} vertices, {graph.num_edges} edges; "
        f"{sources.size} sources with out-edges; built in {time.monotonic() - started:.1f} s"
    )
    say(
        f"{args.clients} generator processes ({generator_loop()}), "
        f"{args.connections} connections each; servers on {args.worker}"
    )
    results: dict[str, Any] = {}
    answers: dict[str, dict[int, int]] = {}
    record: dict[str, Any] = {
        "benchmark": "serve",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        **environment(args.backend),
        "python": platform.python_version(),
        "event_loop": args.worker,
        "backend": args.backend,
        "quick": args.quick,
        "seed": SEED,
        "complete": False,
        "graph": {
            "kind": "rmat",
            "scale": args.scale,
            "vertices": graph.num_vertices,
            "edges": graph.num_edges,
        },
        "generator": {
            "clients": args.clients,
            "connections_per_client": args.connections,
            "duration_s": args.duration,
            "http": "raw HTTP/1.1 over asyncio streams, keep-alive",
            "event_loop": generator_loop(),
        },
        "batching": serve_config(args, True)["graphs"][0]["batching"],
        "results": results,
    }
    server_log = Path(args.out).with_suffix(".server.log")
    with tempfile.TemporaryDirectory() as folder, server_log.open("w") as log:
        for mode, batched in (("batched", True), ("unbatched", False)):
            started = time.monotonic()
            with server(serve_config(args, batched), Path(folder), log) as port:
                say(f"{mode}: server ready in {time.monotonic() - started:.1f} s on port {port}")
                results[mode], answers[mode] = ramp(pool, args, port, sources, say, mode)
                if batched:
                    # The HTTP ceiling with no query: liveness from the rate where
                    # queries stopped keeping up, doubling until it stops keeping up.
                    steps: list[dict[str, Any]] = []
                    rate = results[mode][-1]["offered_per_s"]
                    for _ in range(4):
                        rows = run_step(
                            pool, args, port, rate, sources, 99, "/v2/health/live", "GET"
                        )
                        step = summarize(rows, rate)
                        steps.append(step)
                        say(
                            f"  liveness {rate:9.0f}/s: {step['achieved_per_s']:9.0f}/s answered, "
                            f"p50 {_ms(step['p50_ms'])} p99 {_ms(step['p99_ms'])} ms, "
                            f"generator lag p99 {_ms(step['generator_lag_p99_ms'])} ms"
                            + ("" if step["kept_up"] else "  (not kept up)")
                        )
                        if not step["kept_up"]:
                            break
                        rate *= 2
                    results["liveness"] = steps
                    results["liveness_ceiling"] = max(steps, key=lambda r: r["achieved_per_s"])
            write(args.out, record)
    common = set(answers["batched"]) & set(answers["unbatched"])
    disagree = [s for s in common if answers["batched"][s] != answers["unbatched"][s]]
    if disagree:
        raise AssertionError(f"batched and unbatched answers differ for sources {disagree[:5]}")
    checked = check_against_scipy(graph, answers["batched"])
    summary = verdict(results["batched"], results["unbatched"])
    say(
        f"answers: {len(common)} sources answered alike in both modes; {len(checked)} equal SciPy's"
    )
    say(f"verdict: {json.dumps(summary, default=str)}")
    record |= {
        "complete": True,
        "answers": {"alike_in_both_modes": len(common), "checked_against_scipy": checked},
        "summary": summary,
    }
    return record


def write(path: str, record: dict[str, Any]) -> None:
    """The JSON summary, as it stands."""
    Path(path).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
