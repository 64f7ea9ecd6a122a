"""The graphs a server holds: loaded, resident in sessions, reloaded, drained, closed.

A :class:`GraphHost` opens the config's devices, loads each graph in the background
(so the server answers liveness at once and readiness once every graph is resident
on every replica), and keeps each graph's resident session in a task of its own: a
session is left by the task that entered it, and a reload opens the new session
before the old one is retired. A retired session first finishes the queries already
running on it (:class:`Generation` counts them), then closes; queries on the other
graphs never wait for it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

import anyio
from anyio.abc import TaskGroup, TaskStatus

from .._lifecycle import Lifecycle, LifecycleState
from ..backends import DeviceGroup, open_devices
from ..errors import LifecycleError, VyreError
from ..graphs import CsrGraph
from ..jobs import prepare_graph
from ..logging import get_logger
from ..sessions import ResidentGraphSession, resident_graph
from ._config import ServeConfig, ServedGraphSection

_log = get_logger("vyre_async.serve")

GraphState = Literal["loading", "ready", "failed", "closed"]


class Generation:
    """One load of a graph in one open session, and the queries running on it.

    Attributes:
        number: 1 for the first load, one more per reload.
        session: The open session.
        graph: The graph it holds.
        running: Queries admitted on it and not finished.
    """

    def __init__(self, number: int, session: ResidentGraphSession, graph: CsrGraph) -> None:
        self.number = number
        self.session = session
        self.graph = graph
        self.running = 0
        self.retire = anyio.Event()
        self._idle: anyio.Event | None = None

    def enter(self) -> None:
        """A query starts on this generation."""
        self.running += 1

    def leave(self) -> None:
        """A query on this generation ended (answered, failed or cancelled)."""
        self.running -= 1
        if not self.running and self._idle is not None:
            self._idle.set()

    async def wait_idle(self) -> None:
        """Wait until no query runs on this generation."""
        while self.running:
            self._idle = anyio.Event()
            await self._idle.wait()


class ServedGraph:
    """One named graph of the server: its section, its state, its current generation.

    Attributes:
        section: Its ``[[graphs]]`` entry.
        state: ``loading``, ``ready``, ``failed`` (its first load failed; ``error``
            says why) or ``closed``.
        current: The generation queries go to (``None`` until the first load).
        error: Why the last load or reload failed.
        reloading: Whether a reload runs now.
    """

    def __init__(self, section: ServedGraphSection) -> None:
        self.section = section
        self.state: GraphState = "loading"
        self.current: Generation | None = None
        self.error: str | None = None
        self.reloading = False
        self.generations = 0

    @property
    def name(self) -> str:
        """The graph's name."""
        return self.section.name


class ReloadBusyError(LifecycleError):
    """A reload of a graph was asked for while one of the same graph ran."""


class GraphHost(Lifecycle):
    """The graphs of a serve config, each resident in a session on the config's devices.

    Run it with ``async with host.running():`` (the app's lifespan does); it is
    unopened, open (loading and serving), closing (draining: no new queries) and
    closed.

    Args:
        config: The serve config.
        config_file: The file it came from: relative graph and token paths start at
            its folder (default: a file in the current folder).
    """

    _noun = "graph host"
    _make_fix = "make a new GraphHost (a new app) for each run."

    def __init__(self, config: ServeConfig, *, config_file: str | Path | None = None) -> None:
        self.config = config
        self.config_file = Path("serve.toml") if config_file is None else Path(config_file)
        self.graphs = {entry.name: ServedGraph(entry) for entry in config.graphs}
        self._group: DeviceGroup | None = None
        self._tasks: TaskGroup | None = None
        self._stop = anyio.Event()
        self._settled = anyio.Event()
        self._pending = len(self.graphs)
        self.started_at = time.time()

    # ----------------------------------------------------------------- state
    @property
    def devices(self) -> int:
        """Devices every graph is replicated on (0 before the devices open)."""
        return 0 if self._group is None else len(self._group)

    @property
    def group(self) -> DeviceGroup | None:
        """The open devices (``None`` before they open and after they close)."""
        return self._group

    @property
    def accepting(self) -> bool:
        """Whether new queries are admitted (open, not draining)."""
        return self._state is LifecycleState.OPEN

    def ready(self) -> bool:
        """Whether every graph is resident on every device and queries are admitted."""
        if not self.accepting or not self.devices:
            return False
        return all(
            g.current is not None and g.current.session.devices == self.devices
            for g in self.graphs.values()
        )

    def failures(self) -> dict[str, str]:
        """The graphs whose first load failed, and why."""
        return {g.name: g.error or "" for g in self.graphs.values() if g.state == "failed"}

    async def wait_settled(self) -> dict[str, str]:
        """Wait until every graph's first load ended; the failures (see :meth:`failures`)."""
        await self._settled.wait()
        return self.failures()

    # ------------------------------------------------------------- lifecycle
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[GraphHost]:
        """Open the devices and load the graphs (in the background) for the block;
        on leaving it, drain (see :meth:`begin_drain`) and close every session.

        Raises:
            LifecycleError: The host ran before.
            VyreError: The devices cannot be opened.
        """
        async with anyio.create_task_group() as tg:
            await tg.start(self._run)
            try:
                yield self
            finally:
                self.begin_drain()

    def begin_drain(self) -> None:
        """Stop admitting queries; the host then waits (at most the config's drain
        timeout) for the running ones and closes the sessions. Idempotent."""
        if self._state is LifecycleState.OPEN:
            self._state = LifecycleState.CLOSING
            _log.info("serve_draining", running=self.running_queries())
        self._stop.set()

    def running_queries(self) -> int:
        """Queries admitted and not finished, on every graph's current generation."""
        return sum(g.current.running for g in self.graphs.values() if g.current is not None)

    async def _run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self._enter_open()
        server = self.config.server
        try:
            async with (
                open_devices(server.backend, devices=server.devices) as group,
                anyio.create_task_group() as tg,
            ):
                self._group, self._tasks = group, tg
                for graph in self.graphs.values():
                    tg.start_soon(self._first_load, graph)
                task_status.started()
                await self._stop.wait()
                self.begin_drain()
                with anyio.move_on_after(server.drain_timeout_s) as scope:
                    for graph in self.graphs.values():
                        if graph.current is not None:
                            await graph.current.wait_idle()
                if scope.cancelled_caught:
                    _log.warning(
                        "serve_drain_timeout",
                        seconds=server.drain_timeout_s,
                        abandoned=self.running_queries(),
                    )
                tg.cancel_scope.cancel()  # loads still running, and every session holder
        finally:
            self._group = self._tasks = None
            for graph in self.graphs.values():
                graph.state, graph.current = "closed", None
            self._enter_closed()
            self._settled.set()

    async def _load(self, graph: ServedGraph) -> CsrGraph:
        server = self.config.server
        index = list(self.graphs).index(graph.name)
        tasks = self._tasks
        if tasks is None:
            raise LifecycleError(
                "the graph host is not running", fix="run it with `async with host.running():`."
            )
        return await prepare_graph(
            graph.section.graph,
            self.config_file,
            f"{self.config_file}: $.graphs[{index}].graph",
            server.backend,
            server.devices,
            tasks,
        )

    async def _first_load(self, graph: ServedGraph) -> None:
        try:
            csr = await self._load(graph)
            await self._install(graph, csr)
        except VyreError as exc:
            graph.state, graph.error = "failed", str(exc)
            _log.error("serve_graph_failed", graph=graph.name, error=str(exc))
        finally:
            self._pending -= 1
            if not self._pending:
                self._settled.set()

    async def _install(self, graph: ServedGraph, csr: CsrGraph) -> None:
        """Open a session over ``csr`` in a task of its own and make it current; the
        generation it replaces is retired (its running queries finish first)."""
        tasks = self._tasks
        if tasks is None or not self.accepting:
            raise LifecycleError(
                f"the server is draining; graph {graph.name!r} was not loaded",
                fix="start the server again to load it.",
            )
        generation: Generation = await tasks.start(self._hold, graph, csr)
        old, graph.current = graph.current, generation
        graph.state, graph.error = "ready", None
        if old is not None:
            old.retire.set()
        _log.info(
            "serve_graph_ready",
            graph=graph.name,
            generation=generation.number,
            vertices=csr.num_vertices,
            edges=csr.num_edges,
            replicas=generation.session.devices,
        )

    async def _hold(
        self, graph: ServedGraph, csr: CsrGraph, *, task_status: TaskStatus[Generation]
    ) -> None:
        """Keep one generation's session open until it is retired and idle."""
        group = self._group
        if group is None:
            raise LifecycleError(
                "the graph host's devices are closed", fix="run the host with host.running()."
            )
        batching = graph.section.batching.session_config()
        async with resident_graph(group, csr, batching=batching) as session:
            graph.generations += 1
            generation = Generation(graph.generations, session, csr)
            task_status.started(generation)
            await generation.retire.wait()
            await generation.wait_idle()
            _log.info("serve_graph_retired", graph=graph.name, generation=generation.number)

    async def reload(self, name: str) -> ServedGraph:
        """Load graph ``name`` again from its section (its file may have changed) and
        swap it in; queries on it run on the old session until the new one is
        resident, and those running then finish there.

        Raises:
            KeyError: No graph of that name.
            ReloadBusyError: A reload of that graph runs already.
            LifecycleError: The host is not open (not started, or draining).
            ConfigurationError, ValidationError: The graph cannot be loaded; the
                graph in service is unchanged.
        """
        graph = self.graphs[name]
        if not self.accepting:
            raise LifecycleError(
                f"the server is {self._state.value}; graph {name!r} cannot be reloaded now",
                fix="reload it once the server is running.",
            )
        if graph.reloading:
            raise ReloadBusyError(
                f"graph {name!r} is being reloaded already",
                fix="wait for that reload to answer, then ask again if needed.",
            )
        graph.reloading = True
        try:
            csr = await self._load(graph)
            await self._install(graph, csr)
        except VyreError as exc:
            graph.error = str(exc)
            raise
        finally:
            graph.reloading = False
        return graph
