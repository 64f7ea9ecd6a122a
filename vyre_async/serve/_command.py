"""``vyre-async serve CONFIG``: the app under Hypercorn, until SIGTERM or SIGINT drains it.

Exit codes: 0 after a signal drained the server, 2 for a bad config (or a graph in it
that does not load, or an address that cannot be bound, or a missing package), 1 when
the backend it names is not available here. The first line on standard output says
where it serves (``vyre-async: serving 2 graph(s) on http://127.0.0.1:8000``); a second
signal ends the process at once.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import sys
import threading
from types import FrameType
from typing import Any, Literal

import anyio
from anyio.abc import TaskStatus

from ..errors import ConfigurationError, UnsupportedFeatureError, VyreError
from ..jobs import backend_unavailable_reason
from ..logging import configure_logging, get_logger
from ._app import SERVE_EXTRA, create_app, missing_serve_packages
from ._config import load_serve_config
from ._host import GraphHost
from ._server import bind_socket, serve_app

_log = get_logger("vyre_async.serve")
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def serve_command(
    config_path: str,
    *,
    host: str | None = None,
    port: int | None = None,
    log_format: Literal["console", "json"] | None = None,
    log_level: str | None = None,
) -> int:
    """Run ``vyre-async serve``; return its exit code (see the module docstring).

    Args:
        config_path: The serve config file.
        host: Listen on this address instead of ``[server] host``.
        port: Listen on this port instead of ``[server] port`` (0: a free one).
        log_format: ``"console"`` or ``"json"`` instead of ``[logging] format``.
        log_level: The level instead of ``[logging] level``.
    """
    _exit_at_once_on_signals()
    try:
        config = load_serve_config(config_path)
    except VyreError as exc:
        return _failed(exc, 2)
    missing = missing_serve_packages()
    if missing:
        needs = " and ".join(missing)
        return _failed(
            ConfigurationError(f"serving needs {needs}, not installed here", fix=f"{SERVE_EXTRA}."),
            2,
        )
    server = config.server
    if server.worker == "uvloop" and importlib.util.find_spec("uvloop") is None:
        return _failed(
            ConfigurationError(
                f"{config_path}: [server] worker = 'uvloop' needs the uvloop package, "
                "not installed here",
                fix="pip install uvloop, or use worker = 'asyncio'.",
            ),
            2,
        )
    configure_logging(log_format or config.logging.format, level=log_level or config.logging.level)
    reason = backend_unavailable_reason(server.backend, server.devices)
    if reason is not None:
        error = UnsupportedFeatureError(
            f"{config_path} serves on the CUDA backend ([server] backend = "
            f"{server.backend!r}), and {reason}",
            fix="serve where a GPU answers (`vyre-async info` says what this machine has), "
            'or set [server] backend = "cpu".',
        )
        return _failed(error, 1)
    address = server.host if host is None else host
    try:
        graphs = GraphHost(config, config_file=config_path)
        app = create_app(graphs)
        sock = bind_socket(address, server.port if port is None else port)
    except VyreError as exc:
        return _failed(exc, 2)
    tokenless = config.auth.token_env is None and config.auth.token_file is None
    if tokenless and not _loopback(address):
        _log.warning(
            "serve_without_token",
            host=address,
            fix="set [auth] token_env or token_file before listening beyond loopback",
        )
    backend = "trio" if server.worker == "trio" else "asyncio"
    options: dict[str, Any] = {"use_uvloop": True} if server.worker == "uvloop" else {}
    code: int = anyio.run(
        _serve, app, graphs, sock, address, backend=backend, backend_options=options
    )
    return code


async def _serve(app: Any, graphs: GraphHost, sock: socket.socket, address: str) -> int:
    stop = anyio.Event()
    code = 0
    drain = graphs.config.server.drain_timeout_s
    async with anyio.create_task_group() as tg:

        async def server(*, task_status: TaskStatus[int]) -> None:
            await serve_app(
                app,
                sock=sock,
                drain_timeout=drain,
                shutdown_trigger=stop.wait,
                task_status=task_status,
            )
            tg.cancel_scope.cancel()  # the signal watcher

        port = await tg.start(server)
        where = f"[{address}]" if ":" in address else address
        print(
            f"vyre-async: serving {len(graphs.graphs)} graph(s) on http://{where}:{port}",
            flush=True,
        )
        tg.start_soon(_drain_on_signals, graphs, stop)
        failures = await graphs.wait_settled()
        if failures and not stop.is_set():
            for name, error in failures.items():
                print(f"vyre-async: graph {name!r}: {error}", file=sys.stderr)
            code = 2
            graphs.begin_drain()
            stop.set()
    return code


async def _drain_on_signals(graphs: GraphHost, stop: anyio.Event) -> None:
    """The first SIGINT/SIGTERM drains the server; a second one ends it at once."""
    with anyio.open_signal_receiver(*_SIGNALS) as signals:
        async for signum in signals:
            if stop.is_set():
                _exit_now(signum)
            _log.info("serve_signal", signal=signal.Signals(signum).name)
            graphs.begin_drain()
            stop.set()


def _failed(error: VyreError, code: int) -> int:
    print(f"vyre-async: {error}", file=sys.stderr)
    return code


def _loopback(address: str) -> bool:
    return address in ("localhost", "::1") or address.startswith("127.")


def _exit_now(signum: int, frame: FrameType | None = None) -> None:
    """End the process at once with the signal's exit code, saying so."""
    del frame
    name = signal.Signals(signum).name
    with contextlib.suppress(OSError):
        os.write(2, f"vyre-async: {name}: exiting now without draining\n".encode())
    os._exit(128 + signum)


def _exit_at_once_on_signals() -> None:
    """Until the server's own handling starts, a signal ends the process at once (the
    command line puts its handlers back when the command returns)."""
    if threading.current_thread() is threading.main_thread():
        for signum in _SIGNALS:
            signal.signal(signum, _exit_now)
