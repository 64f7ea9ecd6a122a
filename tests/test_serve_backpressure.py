"""Backpressure and deadlines over HTTP: full queues, queue timeouts, clients that leave.

Batches are held at gates (:func:`serve_fixtures.hold_runs`), so a running batch and a
full queue are states the test reaches, not moments it hopes to hit.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np
import pytest
from serve_fixtures import (
    BOUND_S,
    Served,
    hold_runs,
    random_graph,
    reached,
    serving,
    until,
    write_config,
)


def _distinct_sources(rng: np.random.Generator, n: int, count: int) -> list[int]:
    return [int(s) for s in rng.choice(n, count, replace=False)]


async def _ask(served: Served, source: int, out: dict[int, Any], **body: Any) -> None:
    """POST a reach query; record (status, body) under its source, once."""
    answer = await served.client.post("/v1/graphs/g/reach", json={"source": source, **body})
    assert source not in out, "one answer per request"
    out[source] = (answer.status_code, answer.json(), answer.headers)


def _queued(served: Served) -> int:
    stats = served.session("g").batch_stats()
    return 0 if stats is None else stats.queued


async def test_a_full_queue_answers_429_with_retry_after_and_loses_no_accepted_answer(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One batch held running, the queue (3) full behind it: the next query gets 429 with
    Retry-After at once; once released, the four accepted ones each get one answer,
    SciPy's, in two batches."""
    graph = random_graph(rng)
    config = await write_config(
        tmp_path, {"g": graph}, batching={"queue_size": 3}, limits={"retry_after_s": 2}
    )
    hold = hold_runs(monkeypatch, "reach")
    first, *queued, refused = _distinct_sources(rng, graph.num_vertices, 5)
    out: dict[int, Any] = {}
    async with serving(config) as served, anyio.create_task_group() as tg:
        tg.start_soon(_ask, served, first, out)
        await until(lambda: len(hold.gates) == 1)
        for source in queued:
            tg.start_soon(_ask, served, source, out)
        await until(lambda: _queued(served) == 3)
        await _ask(served, refused, out)
        assert not any(s in out for s in (first, *queued)), "nothing answered before release"
        hold.open_all()
    status, body, headers = out.pop(refused)
    assert status == 429
    assert headers["retry-after"] == "2"
    assert "queue is full (3 requests wait)" in body["error"]["message"]
    assert "Fix: " in body["error"]["message"]
    assert sorted(out) == sorted([first, *queued])
    for source, (status, body, _) in out.items():
        assert status == 200
        assert body["answer"] == reached(graph, source)
    assert hold.runs == [[first], sorted(queued)]


async def test_without_batching_a_graph_admits_queue_size_queries_then_answers_429(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """batching.enabled = false: each query runs alone (its own run), at most queue_size
    (2) at once; a third gets 429 while they run, and both get SciPy's answer."""
    graph = random_graph(rng)
    config = await write_config(
        tmp_path, {"g": graph}, batching={"enabled": False, "queue_size": 2}
    )
    hold = hold_runs(monkeypatch, "reach")
    a, b, refused = _distinct_sources(rng, graph.num_vertices, 3)
    out: dict[int, Any] = {}
    async with serving(config) as served, anyio.create_task_group() as tg:
        assert served.session("g").batch_stats() is None
        tg.start_soon(_ask, served, a, out)
        tg.start_soon(_ask, served, b, out)
        await until(lambda: len(hold.gates) == 2)
        await _ask(served, refused, out)
        hold.open_all()
    assert out.pop(refused)[0] == 429
    assert {s: out[s][1]["answer"] for s in out} == {s: reached(graph, s) for s in (a, b)}
    assert sorted(map(tuple, hold.runs)) == sorted([(a,), (b,)])


@pytest.mark.parametrize("where", ["body", "header"])
async def test_a_queue_timeout_ends_in_504_and_the_running_batch_still_answers(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A query whose timeout (body field, or Request-Timeout header) passes while it
    waits behind a held batch gets 504; the held query then gets its answer."""
    graph = random_graph(rng)
    config = await write_config(tmp_path, {"g": graph})
    hold = hold_runs(monkeypatch, "reach")
    first, late = _distinct_sources(rng, graph.num_vertices, 2)
    out: dict[int, Any] = {}
    async with serving(config) as served, anyio.create_task_group() as tg:
        tg.start_soon(_ask, served, first, out)
        await until(lambda: len(hold.gates) == 1)
        if where == "body":
            await _ask(served, late, out, timeout=0.05)
        else:
            answer = await served.client.post(
                "/v1/graphs/g/reach", json={"source": late}, headers={"Request-Timeout": "0.05"}
            )
            out[late] = (answer.status_code, answer.json(), answer.headers)
        hold.open_all()
    status, body, _ = out[late]
    assert status == 504
    assert "timed out after 0.05 s" in body["error"]["message"]
    assert out[first][:2] == (200, {"answer": reached(graph, first)})
    assert hold.runs == [[first]], "the timed-out query never ran"


async def test_a_higher_priority_query_runs_before_one_queued_earlier(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind a held batch (max_batch 1), a priority-0 query queued first and a
    priority-5 query queued second: the priority-5 one runs first; both get SciPy's
    answer."""
    graph = random_graph(rng)
    config = await write_config(tmp_path, {"g": graph}, batching={"max_batch": 1})
    hold = hold_runs(monkeypatch, "reach")
    first, low, high = _distinct_sources(rng, graph.num_vertices, 3)
    out: dict[int, Any] = {}
    async with serving(config) as served, anyio.create_task_group() as tg:
        tg.start_soon(_ask, served, first, out)
        await until(lambda: len(hold.gates) == 1)
        tg.start_soon(partial(_ask, served, low, out, priority=0))
        await until(lambda: _queued(served) == 1)
        tg.start_soon(partial(_ask, served, high, out, priority=5))
        await until(lambda: _queued(served) == 2)
        hold.open_all()
    assert hold.runs == [[first], [high], [low]]
    for source in (first, low, high):
        assert out[source][:2] == (200, {"answer": reached(graph, source)})


async def _leave_while_waiting(url: str, source: int, left: anyio.Event) -> None:
    """A client of its own that sends a query and goes away once ``left`` is set."""
    client = await anyio.to_thread.run_sync(
        lambda: httpx.AsyncClient(base_url=url, timeout=BOUND_S)
    )
    async with client, anyio.create_task_group() as tg:

        async def ask() -> None:
            await client.post("/v1/graphs/g/reach", json={"source": source})
            raise AssertionError("the query was answered before its client left")

        tg.start_soon(ask)
        await left.wait()
        tg.cancel_scope.cancel()


async def test_a_client_that_disconnects_mid_batch_does_not_break_the_batch_it_shared(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two queries share a held batch; one client disconnects: its query is counted as
    cancelled, the batch runs on, and the other client gets SciPy's answer."""
    graph = random_graph(rng)
    config = await write_config(tmp_path, {"g": graph})
    hold = hold_runs(monkeypatch, "reach")
    first, leaving, staying = _distinct_sources(rng, graph.num_vertices, 3)
    out: dict[int, Any] = {}
    left = anyio.Event()
    async with serving(config) as served:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_ask, served, first, out)
            await until(lambda: len(hold.gates) == 1)
            tg.start_soon(_leave_while_waiting, served.url, leaving, left)
            tg.start_soon(_ask, served, staying, out)
            await until(lambda: _queued(served) == 2)
            hold.open(0)
            await until(lambda: len(hold.gates) == 2)  # the second batch runs, held
            left.set()
            await until(lambda: served.session("g").batch_stats().cancelled == 1)  # type: ignore[union-attr]
            hold.open_all()
        after = await served.client.post("/v1/graphs/g/reach", json={"source": leaving})
    assert hold.runs[1] == sorted([leaving, staying])
    assert out[staying][:2] == (200, {"answer": reached(graph, staying)})
    assert out[first][0] == 200
    assert after.json() == {"answer": reached(graph, leaving)}


async def test_a_client_that_disconnects_while_queued_takes_its_query_out_of_the_queue(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queued query whose client leaves never runs: the next batch holds only the
    queries whose clients wait."""
    graph = random_graph(rng)
    config = await write_config(tmp_path, {"g": graph})
    hold = hold_runs(monkeypatch, "reach")
    first, leaving, staying = _distinct_sources(rng, graph.num_vertices, 3)
    out: dict[int, Any] = {}
    left = anyio.Event()
    async with serving(config) as served, anyio.create_task_group() as tg:
        tg.start_soon(_ask, served, first, out)
        await until(lambda: len(hold.gates) == 1)
        tg.start_soon(_leave_while_waiting, served.url, leaving, left)
        tg.start_soon(_ask, served, staying, out)
        await until(lambda: _queued(served) == 2)
        left.set()
        await until(lambda: _queued(served) == 1)
        hold.open_all()
    assert hold.runs == [[first], [staying]]
    assert out[staying][:2] == (200, {"answer": reached(graph, staying)})
