"""A server's life: loading and readiness, a failed graph, reloads, mounting, metrics."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families
from serve_fixtures import (
    BOUND_S,
    hold_runs,
    random_graph,
    reached,
    serving,
    until,
    write_config,
    write_config_now,
)
from starlette.applications import Starlette
from starlette.routing import Mount

import vyre_async as va
from vyre_async.graphs import save_npz
from vyre_async.serve import _host

CHILD = Path(__file__).resolve().parent / "serve_child.py"


async def test_liveness_answers_at_once_and_readiness_once_every_graph_is_resident(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a graph loads: live 200, ready 503 (Retry-After, the graph 'loading'), its
    queries 503; once resident on both devices: ready 200 and /v1/graphs says so."""
    graph = random_graph(rng)
    config = await write_config(tmp_path, {"g": graph}, server={"devices": [0, 1]})
    loaded = anyio.Event()
    prepare = _host.prepare_graph

    async def held_prepare(*args: Any, **kwargs: Any) -> va.graphs.CsrGraph:
        await loaded.wait()
        return await prepare(*args, **kwargs)

    monkeypatch.setattr(_host, "prepare_graph", held_prepare)
    async with serving(config, ready=False) as served:
        live = await served.client.get("/v2/health/live")
        loading = await served.client.get("/v2/health/ready")
        early = await served.client.post("/v1/graphs/g/reach", json={"source": 1})
        loaded.set()
        await served.host.wait_settled()
        ready = await served.client.get("/v2/health/ready")
        listed = (await served.client.get("/v1/graphs")).json()["graphs"]
        answer = await served.client.post("/v1/graphs/g/reach", json={"source": 1})
    assert live.json() == {"live": True}
    assert loading.status_code == 503
    assert loading.headers["retry-after"] == "1"
    assert loading.json()["graphs"] == {"g": "loading"}
    assert early.status_code == 503
    assert "still loading" in early.json()["error"]["message"]
    assert ready.status_code == 200
    assert ready.json() == {"ready": True}
    assert len(listed) == 1
    assert {k: listed[0][k] for k in ("name", "state", "vertices", "edges")} == {
        "name": "g",
        "state": "ready",
        "vertices": graph.num_vertices,
        "edges": graph.num_edges,
    }
    assert (listed[0]["devices"], listed[0]["replicas"]) == (2, 2)
    assert answer.json() == {"answer": reached(graph, 1)}


async def test_a_graph_that_fails_to_load_keeps_the_server_unready_and_answers_503(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """A graph file that is no edge list: that graph answers 503 naming the file's
    error, readiness stays 503, and the other graph answers."""
    graph = random_graph(rng)
    await anyio.to_thread.run_sync((tmp_path / "broken.txt").write_text, "0 1\nnot an edge\n")
    config = await write_config(
        tmp_path, {"good": graph, "broken": {"kind": "edges", "path": "broken.txt"}}
    )
    async with serving(config) as served:
        failures = await served.host.wait_settled()
        ready = await served.client.get("/v2/health/ready")
        broken = await served.client.post("/v1/graphs/broken/reach", json={"source": 0})
        good = await served.client.post("/v1/graphs/good/reach", json={"source": 2})
    assert list(failures) == ["broken"]
    assert ready.status_code == 503
    assert ready.json()["graphs"] == {"good": "ready", "broken": "failed"}
    assert broken.status_code == 503
    assert "broken.txt" in broken.json()["error"]["message"]
    assert good.json() == {"answer": reached(graph, 2)}


async def test_a_reload_swaps_a_graph_while_queries_on_it_and_on_others_are_answered(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query held on graph a's first load; a's file replaced and reloaded: the reload
    answers with generation 2 at once, graph b answers meanwhile, a new query on a gets
    the new graph's answer, the held one the old graph's, and then the old session
    closes."""
    old, new, other = random_graph(rng), random_graph(rng), random_graph(rng)
    config = await write_config(tmp_path, {"a": old, "b": other})
    hold = hold_runs(monkeypatch, "reach")
    source = int(np.flatnonzero(old.out_degree() > 0)[0])
    answers: dict[str, Any] = {}
    async with serving(config) as served, anyio.create_task_group() as tg:

        async def ask(graph: str, key: str, kind: str = "reach") -> None:
            answer = await served.client.post(f"/v1/graphs/{graph}/{kind}", json={"source": source})
            answers[key] = answer.json()

        tg.start_soon(ask, "a", "held")
        await until(lambda: len(hold.gates) == 1)
        first = served.host.graphs["a"].current
        assert first is not None
        await anyio.to_thread.run_sync(save_npz, new, tmp_path / "a.npz")
        reload = await served.client.post("/v1/graphs/a/reload")
        await ask("b", "other", "bfs")
        hold.open_all()  # the new generation's queries run at once
        await ask("a", "after")
        await until(lambda: "held" in answers)
        await until(lambda: first.session.state is va.LifecycleState.CLOSED)
    assert reload.status_code == 200
    assert reload.json()["generation"] == 2
    assert answers["held"] == {"answer": reached(old, source)}
    assert answers["after"] == {"answer": reached(new, source)}
    assert answers["other"] == {"answer": reached(other, source)}


async def test_a_reload_that_cannot_load_its_file_keeps_the_graph_in_service(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """The graph's file replaced by a broken one: reload answers 422 with the file's
    error, and queries go on to the graph already loaded."""
    graph = random_graph(rng)
    config = await write_config(tmp_path, {"g": graph})
    async with serving(config) as served:
        await anyio.to_thread.run_sync((tmp_path / "g.npz").write_bytes, b"not an npz")
        reload = await served.client.post("/v1/graphs/g/reload")
        answer = await served.client.post("/v1/graphs/g/reach", json={"source": 3})
        described = (await served.client.get("/v1/graphs/g")).json()
    assert reload.status_code == 422
    assert "still serves its previous load" in reload.json()["error"]["message"]
    assert answer.json() == {"answer": reached(graph, 3)}
    assert (described["state"], described["generation"]) == ("ready", 1)


async def test_the_app_mounted_in_another_starlette_app_serves_under_its_prefix(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """Mounted at /graphs of an outer app that hands on the app's lifespan: the graphs
    load and answer at /graphs/v1/..., health at /graphs/v2/..."""
    graph = random_graph(rng)
    config = await write_config(tmp_path, {"g": graph})

    def mount(app: Any) -> Starlette:
        return Starlette(routes=[Mount("/graphs", app=app)], lifespan=app.router.lifespan_context)

    async with serving(config, wrap=mount, prefix="/graphs") as served:
        ready = await served.client.get("/v2/health/ready")
        answer = await served.client.post("/v1/graphs/g/reach", json={"source": 5})
    assert ready.status_code == 200
    assert answer.json() == {"answer": reached(graph, 5)}


def _families(text: str) -> dict[str, Any]:
    return {family.name: family for family in text_string_to_metric_families(text)}


def _sample(family: Any, suffix: str, match: Callable[[dict[str, str]], bool]) -> float:
    return float(
        next(s.value for s in family.samples if s.name.endswith(suffix) and match(s.labels))
    )


async def test_metrics_count_requests_latency_rejections_batches_and_devices(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After 5 answered queries and one 429, /metrics parses as Prometheus text with the
    requests by status, a latency histogram counting them, the rejection, the graph's
    batcher figures (lanes per batch, queue wait) and each device's telemetry."""
    graph = random_graph(rng)
    config = await write_config(tmp_path, {"g": graph}, batching={"queue_size": 2})
    hold = hold_runs(monkeypatch, "reach")
    async with serving(config) as served, anyio.create_task_group() as tg:
        for source in range(3):
            tg.start_soon(
                partial(served.client.post, "/v1/graphs/g/reach", json={"source": source})
            )
            if source == 0:
                await until(lambda: len(hold.gates) == 1)
        await until(lambda: served.session("g").batch_stats().queued == 2)  # type: ignore[union-attr]
        refused = await served.client.post("/v1/graphs/g/reach", json={"source": 9})
        hold.open_all()
        await until(lambda: served.session("g").batch_stats().served == 3)  # type: ignore[union-attr]
        for source in (4, 5):
            await served.client.post("/v1/graphs/g/reach", json={"source": source})
        families = _families((await served.client.get("/metrics")).text)
    assert refused.status_code == 429
    requests = families["vyre_async_serve_requests"]
    assert _sample(requests, "_total", lambda labels: labels["status"] == "200") == 5
    assert _sample(requests, "_total", lambda labels: labels["status"] == "429") == 1
    latency = families["vyre_async_serve_request_seconds"]
    assert latency.type == "histogram"
    assert _sample(latency, "_count", lambda labels: labels["kind"] == "reach") == 6
    rejections = families["vyre_async_serve_rejections"]
    assert _sample(rejections, "_total", lambda labels: labels["reason"] == "queue_full") == 1
    batches = families["vyre_async_batcher_batches"]
    assert _sample(batches, "_total", lambda labels: labels == {"graph": "g"}) == 4
    lanes = families["vyre_async_batcher_lanes_max"]
    assert _sample(lanes, "", lambda labels: labels == {"graph": "g"}) == 2
    assert "vyre_async_batcher_queue_wait_p95_seconds" in families
    dispatches = families["vyre_async_dispatches"]
    assert _sample(dispatches, "_total", lambda labels: labels["index"] == "0") > 0


class _Lines:
    """A child's output stream, read line by line in a thread of its own."""

    def __init__(self, stream: Any) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self._stream = stream
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self._stream:
            self.lines.put(line)

    def close(self) -> None:
        """Read to the end (the child has exited), keep the rest, close the stream."""
        self._thread.join(BOUND_S)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        self._stream.close()

    def wait_for(self, text: str) -> str:
        """The first line (from now on) holding ``text`` (a hang fails after BOUND_S)."""
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                break
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r}; saw:\n{''.join(self.seen)}")


def _bounded_poll(check: Callable[[], bool]) -> None:
    """Call ``check`` until it holds (a hang fails after BOUND_S)."""
    deadline = time.monotonic() + BOUND_S
    while not check():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)


def _queued(client: httpx.Client) -> float:
    families = _families(client.get("/metrics").text)
    queued = families["vyre_async_batcher_queued"]
    return _sample(queued, "", lambda labels: labels == {"graph": "g"})


def _late_request(url: str, source: int) -> int | str:
    """A query on a new connection: its status, or ``"refused"`` (no one listens)."""
    try:
        with httpx.Client(base_url=url, timeout=BOUND_S) as client:
            return client.post("/v1/graphs/g/reach", json={"source": source}).status_code
    except httpx.ConnectError:
        return "refused"


@pytest.mark.parametrize("worker", ["asyncio", "trio"])
def test_sigterm_drains_the_server_and_answers_every_accepted_request(
    tmp_path: Path, rng: np.random.Generator, worker: str
) -> None:
    """`vyre-async serve` (asyncio or trio worker) gets SIGTERM with one batch running
    and the rest of six queries queued behind it: it stops admitting, every accepted
    request gets SciPy's answer, and the process exits 0."""
    graph = random_graph(rng)
    config = write_config_now(tmp_path, {"g": graph}, server={"port": 0, "worker": worker})
    release = tmp_path / "release"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(  # noqa: S603 - this repository's own command line
        [sys.executable, str(CHILD), str(release), "serve", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    out, err = _Lines(child.stdout), _Lines(child.stderr)
    try:
        url = out.wait_for("serving 1 graph(s) on ").split(" on ")[1].strip()
        sources = [int(s) for s in rng.choice(graph.num_vertices, 6, replace=False)]
        with httpx.Client(base_url=url, timeout=BOUND_S) as probe:
            _bounded_poll(lambda: probe.get("/v2/health/ready").status_code == 200)
            with ThreadPoolExecutor(len(sources)) as pool:

                def ask(source: int) -> httpx.Response:
                    with httpx.Client(base_url=url, timeout=BOUND_S) as client:
                        return client.post("/v1/graphs/g/reach", json={"source": source})

                futures = {s: pool.submit(ask, s) for s in sources}
                running = int(err.wait_for("run held ").split()[-1])
                _bounded_poll(lambda: _queued(probe) == len(sources) - running)
                child.send_signal(signal.SIGTERM)
                err.wait_for("serve_draining")
                late = _late_request(url, sources[0])
                release.touch()
                answers = {s: f.result(timeout=BOUND_S) for s, f in futures.items()}
        code = child.wait(timeout=BOUND_S)
    finally:
        child.kill()
        child.wait()
        out.close()
        err.close()
    for source, answer in answers.items():
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"answer": reached(graph, source)}
    assert late in (503, "refused"), "a request made while draining is not admitted"
    assert code == 0, "".join(err.seen)
    assert not any("Traceback" in line for line in err.seen)
