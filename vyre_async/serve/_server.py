"""``serve_app``: an ASGI app under Hypercorn, on the event loop that is running.

The socket is bound here, before Hypercorn starts, so port 0 gives a free port that
the caller learns at once (``await task_group.start(serve_app, ...)`` returns it) and
connections made meanwhile wait in the listen backlog. Hypercorn runs its asyncio
worker under asyncio (uvloop included) and its trio worker under trio, whichever
``anyio.run`` started. When ``shutdown_trigger`` returns, Hypercorn stops accepting,
gives requests in flight ``drain_timeout`` seconds, then runs the app's lifespan
shutdown.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskStatus

from ..errors import ConfigurationError
from ._app import SERVE_EXTRA

#: Connections the kernel holds for the server while it is busy.
BACKLOG = 1024


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: any free port), non-blocking.

    Raises:
        ConfigurationError: The address cannot be resolved or bound.
    """
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot serve on {host} port {port}: {exc.strerror or exc}",
            fix="name an address of this machine ([server] host, or --host).",
        ) from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise ConfigurationError(
            f"cannot serve on {host} port {port}: {exc.strerror or exc}",
            fix="pick a free port ([server] port, or --port; 0 picks one), and an address "
            "of this machine.",
        ) from None
    return sock


async def serve_app(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    sock: socket.socket | None = None,
    drain_timeout: float = 30.0,
    shutdown_trigger: Callable[[], Awaitable[Any]],
    task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` with Hypercorn until ``shutdown_trigger()`` returns, then drain.

    Args:
        app: An ASGI app (:func:`create_app`'s).
        host: The address to listen on (loopback unless told otherwise).
        port: The TCP port (0: a free one).
        sock: A listening socket to serve on instead of binding ``host``:``port``
            (this call closes it).
        drain_timeout: Seconds requests in flight get after the trigger.
        shutdown_trigger: Returns when the server should stop.
        task_status: Gets the bound port once the socket listens.

    Raises:
        ConfigurationError: Hypercorn is not installed, or the address cannot be bound.
    """
    trio = _on_trio()
    # Imported in a worker thread: an import reads files, which the loop never waits on.
    serve, config = await anyio.to_thread.run_sync(_hypercorn, trio)
    if sock is None:
        sock = await anyio.to_thread.run_sync(bind_socket, host, port)
    bound = int(sock.getsockname()[1])
    config.bind = [f"fd://{sock.detach()}"]
    config.graceful_timeout = drain_timeout
    config.accesslog = None
    config.errorlog = logging.getLogger("vyre_async.serve.http")
    config.include_server_header = False
    task_status.started(bound)
    await serve(app, config, shutdown_trigger=shutdown_trigger)


def _hypercorn(trio: bool) -> tuple[Callable[..., Awaitable[None]], Any]:
    """Hypercorn's ``serve`` for the running loop, and a fresh config.

    Raises:
        ConfigurationError: Hypercorn is not installed.
    """
    try:
        from hypercorn.config import Config

        serve: Callable[..., Awaitable[None]]
        if trio:
            from hypercorn.trio import serve as serve_trio

            serve = serve_trio
        else:
            from hypercorn.asyncio import serve as serve_asyncio

            serve = serve_asyncio
    except ImportError:
        raise ConfigurationError(
            "serving needs Hypercorn, which is not installed", fix=f"{SERVE_EXTRA}."
        ) from None
    return serve, Config()


def _on_trio() -> bool:
    """Whether this task runs on trio (else asyncio)."""
    try:
        import sniffio
    except ImportError:  # trio needs sniffio; anyio does without it: asyncio runs
        return False
    return bool(sniffio.current_async_library() == "trio")
