"""Helpers of the serve tests: a real server on a loopback port, and held batches.

:func:`serving` runs :func:`vyre_async.serve.create_app`'s app under Hypercorn (the
loop the test runs on: asyncio or trio) on an ephemeral loopback port, in the test's
task group, with a shutdown trigger, and hands out a real ``httpx`` client. A
:class:`Hold` keeps every run of one kind waiting at a gate of its own until the test
opens it, so "a batch is running" and "the queue is full" are reached without timing.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import numpy as np
import pytest
from graph_references import scipy_levels

import vyre_async as va
from vyre_async.graphs import CsrGraph, save_npz
from vyre_async.serve import GraphHost, create_app, load_serve_config, serve_app

#: Upper bound of any wait in these tests; passing tests finish far sooner.
BOUND_S = 20.0


def random_graph(rng: np.random.Generator, n: int = 300, m: int = 1200) -> CsrGraph:
    """A directed random graph with isolated and unreachable vertices."""
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    return CsrGraph.from_edges(src, dst, n)


async def write_config(
    folder: Path, graphs: Mapping[str, CsrGraph | dict[str, Any]], **sections: Any
) -> Path:
    """A serve config (JSON) in ``folder`` serving ``graphs``: each a graph (saved as
    ``<name>.npz`` beside it) or a ``[graph]`` section; ``sections`` add the others
    (``batching`` applies to every graph, on the CPU backend unless ``server`` says).
    Written in a worker thread."""
    return await anyio.to_thread.run_sync(partial(write_config_now, folder, graphs, **sections))


def write_config_now(
    folder: Path, graphs: Mapping[str, CsrGraph | dict[str, Any]], **sections: Any
) -> Path:
    """:func:`write_config`, blocking."""
    batching = sections.pop("batching", {})
    entries = []
    for name, graph in graphs.items():
        if isinstance(graph, CsrGraph):
            save_npz(graph, folder / f"{name}.npz")
            section: dict[str, Any] = {"kind": "npz", "path": f"{name}.npz"}
        else:
            section = graph
        entries.append({"name": name, "graph": section, "batching": batching})
    server = {"backend": "cpu", "drain_timeout_s": 5.0, **sections.pop("server", {})}
    path = folder / "serve.json"
    path.write_bytes(msgspec.json.encode({"graphs": entries, "server": server, **sections}))
    return path


@dataclass
class Served:
    """A running server: its client, its host and its address."""

    client: httpx.AsyncClient
    host: GraphHost
    url: str

    def session(self, graph: str) -> va.ResidentGraphSession:
        """The session graph ``graph`` answers from now."""
        current = self.host.graphs[graph].current
        assert current is not None, f"graph {graph!r} is not loaded"
        return current.session


@contextlib.asynccontextmanager
async def serving(
    config_file: Path,
    *,
    token: str | None = None,
    wrap: Callable[[Any], Any] = lambda app: app,
    prefix: str = "",
    ready: bool = True,
) -> AsyncIterator[Served]:
    """Serve ``config_file`` on 127.0.0.1 (a free port) for the block.

    Args:
        config_file: The serve config.
        token: Sent as the bearer token by the client.
        wrap: Makes the served app from the vyre_async app (to mount it in another).
        prefix: Where the vyre_async app is mounted in the served one.
        ready: Wait until every graph's first load ended before the block.
    """
    config = await anyio.to_thread.run_sync(load_serve_config, config_file)
    host = GraphHost(config, config_file=config_file)
    app = wrap(await anyio.to_thread.run_sync(create_app, host))
    stop = anyio.Event()
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with anyio.create_task_group() as tg:
        port = await tg.start(partial(serve_app, app, shutdown_trigger=stop.wait))
        url = f"http://127.0.0.1:{port}{prefix}"
        client = await anyio.to_thread.run_sync(
            lambda: httpx.AsyncClient(base_url=url, headers=headers, timeout=BOUND_S)
        )
        async with client:
            if ready:
                with anyio.fail_after(BOUND_S):
                    await host_running(host)
                    await host.wait_settled()
            yield Served(client, host, url)
        stop.set()


async def host_running(host: GraphHost) -> None:
    """Wait until the app's lifespan started the host (the server's first moments)."""
    await until(lambda: host.state is va.LifecycleState.OPEN)


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until ``condition()`` holds (a hang fails after BOUND_S)."""
    with anyio.fail_after(BOUND_S):
        while not condition():  # noqa: ASYNC110 - server state, with no event to wait on
            await anyio.sleep(0.001)


@dataclass
class Hold:
    """Every run of one kind waits at a gate of its own until the test opens it.

    Attributes:
        runs: Each run's sources (sorted), in the order the runs started.
        gates: Each run's gate.
        held: Whether new runs wait at their gate (until :meth:`open_all`).
    """

    runs: list[list[int]] = field(default_factory=list)
    gates: list[anyio.Event] = field(default_factory=list)
    held: bool = True

    def open(self, index: int) -> None:
        """Let run ``index`` go on."""
        self.gates[index].set()

    def open_all(self) -> None:
        """Let every run, started or not, go on (later runs wait no more)."""
        self.held = False
        for gate in self.gates:
            gate.set()


def hold_runs(monkeypatch: pytest.MonkeyPatch, kind: str) -> Hold:
    """Hold every run of ``kind`` (a batch's ``run_many``, a lone query's ``run_one``)
    at a gate; see :class:`Hold`."""
    unit = va.algorithms.lookup(kind)
    cls = type(unit)
    many, one = cls.run_many, cls.run_one
    hold = Hold()

    async def wait(sources: list[int]) -> None:
        gate = anyio.Event()
        hold.runs.append(sorted(sources))
        hold.gates.append(gate)
        if hold.held:
            await gate.wait()

    async def run_many(
        self: Any, replica: Any, params: Any, sources: np.ndarray, budget_bytes: Any = None
    ) -> np.ndarray:
        await wait([int(s) for s in sources])
        return await many(self, replica, params, sources, budget_bytes)

    async def run_one(self: Any, replica: Any, params: Any, source: Any, out: Any = None) -> Any:
        await wait([] if source is None else [int(source)])
        return await one(self, replica, params, source, out)

    monkeypatch.setattr(cls, "run_many", run_many)
    monkeypatch.setattr(cls, "run_one", run_one)
    return hold


def reached(graph: CsrGraph, source: int) -> int:
    """Vertices ``source`` reaches (itself included), by SciPy."""
    return int((scipy_levels(graph, source) >= 0).sum())
