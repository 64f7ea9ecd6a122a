"""The HTTP server of a job's metrics: ``GET /metrics`` and nothing else.

``prometheus_client``'s own server answers every path and method it knows (any
``GET`` is a scrape, ``/favicon.ico`` too); this one hands ``GET /metrics`` (with
any query, which ``prometheus_client`` reads as a name filter) to its exposition
and answers everything else 404, without logging requests. It has no
authentication, which is why :func:`serve_metrics` listens on loopback by default.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

#: The only path the server answers.
METRICS_PATH = "/metrics"

_StartResponse = Callable[[str, list[tuple[str, str]]], Any]
_App = Callable[[dict[str, Any], _StartResponse], Iterable[bytes]]
_NOT_FOUND = b"not found: this server answers GET /metrics only\n"


class _QuietHandler(WSGIRequestHandler):
    """Writes no line per request to standard error."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def only_metrics(app: _App) -> _App:
    """``app`` for ``GET /metrics``; 404 for any other path or method."""

    def answer(environ: dict[str, Any], start_response: _StartResponse) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") == "GET" and environ.get("PATH_INFO") == METRICS_PATH:
            return app(environ, start_response)
        start_response(
            "404 Not Found",
            [
                ("Content-Type", "text/plain; charset=utf-8"),
                ("Content-Length", str(len(_NOT_FOUND))),
            ],
        )
        return [_NOT_FOUND]

    return answer


def metrics_server(registry: Any, host: str, port: int) -> WSGIServer:
    """A server bound to ``host``:``port`` (IPv4 or IPv6, as ``host`` is) serving
    ``registry`` at :data:`METRICS_PATH`; the caller runs ``serve_forever``.

    Raises:
        OSError: The address cannot be resolved or bound.
    """
    from prometheus_client import make_wsgi_app

    family, _, _, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True  # a stuck scraper never holds the job's exit
        address_family = family

    return make_server(
        str(address[0]),
        port,
        only_metrics(make_wsgi_app(registry)),
        Server,
        handler_class=_QuietHandler,
    )
