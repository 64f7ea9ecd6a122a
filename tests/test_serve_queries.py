"""Queries over HTTP: a real Hypercorn server on a loopback port and a real httpx client.

Answers are checked against SciPy on fresh random graphs and against the session's own
direct answers; bad requests against the status and message each must get.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import msgspec
import numpy as np
import pytest
from graph_references import scipy_levels
from serve_fixtures import random_graph, reached, serving, write_config

import vyre_async as va
from vyre_async.graphs import rmat
from vyre_async.serve._wire import to_wire


async def test_concurrent_answers_equal_scipys_and_the_sessions_own(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """40 concurrent reach, bfs and khop queries on a fresh random graph: each answer
    equals SciPy's and the session's direct answer to the same query."""
    graph = random_graph(rng)
    config = await write_config(tmp_path, {"g": graph})
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 40)]
    got: dict[tuple[str, int], Any] = {}
    async with serving(config) as served:

        async def ask(kind: str, source: int, params: dict[str, Any]) -> None:
            answer = await served.client.post(
                f"/v1/graphs/g/{kind}", json={"source": source, "params": params}
            )
            assert answer.status_code == 200, answer.text
            got[kind, source] = answer.json()["answer"]

        async with anyio.create_task_group() as tg:
            for source in sources:
                tg.start_soon(ask, "reach", source, {})
                tg.start_soon(ask, "bfs", source, {"readback": "levels"})
                tg.start_soon(ask, "khop", source, {"k": 2, "readback": "levels"})
        session = served.session("g")
        direct = {s: await session.query("reach", s) for s in sources[:5]}
        stats = session.batch_stats()
    for source in sources:
        levels = scipy_levels(graph, source)
        assert got["reach", source] == reached(graph, source)
        assert got["bfs", source] == levels.tolist()
        assert got["khop", source] == np.flatnonzero((levels >= 0) & (levels <= 2)).tolist()
    assert all(got["reach", s] == direct[s] for s in sources[:5])
    assert stats is not None
    assert stats.batches < stats.served, "concurrent queries shared batches"


async def test_the_batch_form_answers_each_source_as_a_single_query_would(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """POST .../khop/batch with 30 sources: one answer per source, in order, each the
    vertex set a single khop query returns (SciPy's)."""
    graph = random_graph(rng)
    config = await write_config(tmp_path, {"g": graph})
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 30)]
    async with serving(config) as served:
        params = {"k": 3, "readback": "levels"}
        answer = await served.client.post(
            "/v1/graphs/g/khop/batch", json={"sources": sources, "params": params}
        )
        single = await served.client.post(
            "/v1/graphs/g/khop", json={"source": sources[0], "params": params}
        )
    assert answer.status_code == 200, answer.text
    answers = answer.json()["answers"]
    assert len(answers) == len(sources)
    for source, vertices in zip(sources, answers, strict=True):
        levels = scipy_levels(graph, source)
        assert vertices == np.flatnonzero((levels >= 0) & (levels <= 3)).tolist()
    assert single.json()["answer"] == answers[0]


async def test_msgpack_bodies_and_answers_carry_what_json_does(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """A msgpack body with ``Accept: application/msgpack`` gets a msgpack answer equal to
    the JSON one; float infinities survive in msgpack and are null in JSON."""
    graph = rmat(7, 8, seed=int(rng.integers(1 << 30)), weights="uniform", symmetric=False)
    config = await write_config(tmp_path, {"g": graph})
    source = int(np.argmax(graph.out_degree()))
    body = {"source": source, "params": {"readback": "distances"}}
    async with serving(config) as served:
        as_json = await served.client.post("/v1/graphs/g/sssp", json=body)
        as_msgpack = await served.client.post(
            "/v1/graphs/g/sssp",
            content=msgspec.msgpack.encode(body),
            headers={"Content-Type": "application/msgpack", "Accept": "application/msgpack"},
        )
        direct = await served.session("g").query(
            "sssp", source, va.algorithms.lookup("sssp").params(readback="distances")
        )
    assert as_msgpack.status_code == 200, as_msgpack.text
    assert as_msgpack.headers["content-type"] == "application/msgpack"
    distances = np.array(msgspec.msgpack.decode(as_msgpack.content)["answer"], np.float32)
    np.testing.assert_array_equal(distances, direct)
    from_json = as_json.json()["answer"]
    assert [None if np.isinf(d) else float(d) for d in direct] == from_json
    assert np.isinf(direct).any(), "the graph has vertices the source does not reach"


async def test_every_registered_kind_is_an_endpoint_answering_as_its_session_does(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """Each kind of ``kind_names()`` (nothing registered by the test) answers at
    /v1/graphs/g/<kind> what ``session.query`` answers for the same source and
    parameters (required parameters given as 1)."""
    graph = rmat(7, 8, seed=int(rng.integers(1 << 30)), weights="uniform")
    config = await write_config(tmp_path, {"g": graph})
    source = int(np.argmax(graph.out_degree()))
    async with serving(config) as served:
        session = served.session("g")
        for name in va.algorithms.kind_names():
            unit = va.algorithms.lookup(name)
            params = {f.name: 1 for f in msgspec.structs.fields(unit.params) if f.required}
            body: dict[str, Any] = {"params": params}
            if unit.takes_sources:
                body["source"] = source
            answer = await served.client.post(f"/v1/graphs/g/{name}", json=body)
            assert answer.status_code == 200, (name, answer.text)
            want = await session.query(
                name, source if unit.takes_sources else None, unit.params(**params)
            )
            assert answer.json()["answer"] == msgspec.json.decode(
                msgspec.json.encode(to_wire(want))
            ), name


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"source": 1', "not valid JSON"),
        (b'{"source": "one"}', "$.source"),
        (b'{"source": -4}', "$.source"),
        (b'{"source": 1, "sorce": 2}', "unknown field `sorce`"),
        (b'{"source": 1, "params": {"readback": "all"}}', "$.params.readback"),
        (b'{"source": 1, "timeout": 0}', "$.timeout"),
        (b'{"source": 999999}', "out of range"),
    ],
)
async def test_a_malformed_body_gets_400_naming_its_field_with_a_fix(
    tmp_path: Path, rng: np.random.Generator, body: bytes, field: str
) -> None:
    """Bodies that are not JSON, have a wrong or unknown field, or a source outside
    the graph: 400, the message naming the place and ending with a fix."""
    config = await write_config(tmp_path, {"g": random_graph(rng, 50, 100)})
    async with serving(config) as served:
        answer = await served.client.post("/v1/graphs/g/bfs", content=body)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert field in error["message"]
    assert "Fix: " in error["message"]
    assert error["fix"]


async def test_a_kind_with_a_required_parameter_names_it_when_params_are_missing(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """A khop query without params: 400 saying params is required and that k is."""
    config = await write_config(tmp_path, {"g": random_graph(rng, 50, 100)})
    async with serving(config) as served:
        answer = await served.client.post("/v1/graphs/g/khop", json={"source": 1})
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert "missing required field `params`" in message
    assert "k (required)" in message


@pytest.mark.parametrize(
    ("path", "names"),
    [
        ("/v1/graphs/nope/reach", "no graph is named 'nope'; this server holds g"),
        ("/v1/graphs/g/nope", "no query kind is named 'nope'"),
        ("/v1/graphs/g/pagerank/batch", "no batch form"),
        ("/v2/nothing/here", "names no endpoint"),
    ],
)
async def test_an_unknown_graph_kind_or_path_gets_404_saying_what_there_is(
    tmp_path: Path, rng: np.random.Generator, path: str, names: str
) -> None:
    """404 for a graph or kind the server does not have (listing what it has), a kind
    without sources in batch form, and any other path; each with a fix."""
    config = await write_config(tmp_path, {"g": random_graph(rng, 50, 100)})
    async with serving(config) as served:
        answer = await served.client.post(path, json={"source": 1})
    assert answer.status_code == 404
    assert names in answer.json()["error"]["message"]
    assert "Fix: " in answer.json()["error"]["message"]


async def test_oversized_bodies_and_too_many_queries_get_413(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """A body past max_body_bytes (declared, or streamed without a length) and a batch
    past max_queries_per_request: 413 with a fix; the server answers on."""
    config = await write_config(
        tmp_path,
        {"g": random_graph(rng, 50, 100)},
        limits={"max_body_bytes": 200, "max_queries_per_request": 8},
    )
    big = b'{"sources": [' + b"1, " * 100 + b"1]}"

    async def chunks() -> Any:
        for _ in range(5):
            yield b" " * 64

    async with serving(config) as served:
        declared = await served.client.post("/v1/graphs/g/reach/batch", content=big)
        streamed = await served.client.post("/v1/graphs/g/reach/batch", content=chunks())
        many = await served.client.post("/v1/graphs/g/reach/batch", json={"sources": [1] * 9})
        fine = await served.client.post("/v1/graphs/g/reach/batch", json={"sources": [1] * 8})
    for answer in (declared, streamed, many):
        assert answer.status_code == 413
        assert "Fix: " in answer.json()["error"]["message"]
    assert "more than this server's 200" in declared.json()["error"]["message"]
    assert "asks 9 queries" in many.json()["error"]["message"]
    assert fine.status_code == 200
