"""The endpoints: queries, graphs, health and metrics, as Starlette routes.

Imported by :func:`~._app.create_app` only, so importing :mod:`vyre_async.serve`
does not import Starlette. Every query goes through its graph's session (and so its
batcher); what each status code means is in :func:`status_of` and the guide.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive

from ..algorithms import kind_names
from ..errors import (
    DeviceLostError,
    LifecycleError,
    OutOfMemoryError,
    QueueFullError,
    QueueTimeoutError,
    ValidationError,
    VyreError,
)
from ..logging import get_logger
from ._auth import BearerCheck
from ._host import Generation, GraphHost, ReloadBusyError, ServedGraph
from ._metrics import ServeMetrics
from ._requests import KindBodies
from ._wire import JSON, MSGPACK, encode, encode_answer, is_msgpack

_log = get_logger("vyre_async.serve")

#: The header a client may give a query's queue timeout in (seconds), when its body
#: has none.
TIMEOUT_HEADER = "request-timeout"
#: What a client that went away is counted as (nginx's "client closed request").
CLIENT_GONE = 499


def status_of(error: VyreError) -> int:
    """The HTTP status of a query that failed with ``error``.

    400 bad input (the body, a source out of range, parameters the graph cannot run),
    429 the graph's queue is full, 503 the graph or a device is out of service (the
    session closing for a reload or a drain, a lost device, out of memory), 504 the
    query's timeout passed in the queue, 500 anything else.
    """
    if isinstance(error, QueueFullError):
        return 429
    if isinstance(error, QueueTimeoutError):
        return 504
    if isinstance(error, ValidationError):
        return 400
    if isinstance(error, LifecycleError | DeviceLostError | OutOfMemoryError):
        return 503
    return 500


def _sentence(what: str) -> str:
    """``what`` ending as a sentence does (as a :class:`VyreError`'s message does)."""
    return what if what.endswith((".", "?", "!", ":")) else what + "."


class _RefusalError(Exception):
    """An answer other than the query's: its status, message and fix."""

    def __init__(self, status: int, what: str, fix: str, reason: str = "") -> None:
        super().__init__(what)
        self.status = status
        self.what = what
        self.fix = fix
        self.reason = reason


class Endpoints:
    """The handlers of one app, bound to its host, token, bodies and metrics."""

    def __init__(
        self,
        host: GraphHost,
        check: BearerCheck,
        bodies: Mapping[str, KindBodies],
        metrics: ServeMetrics,
    ) -> None:
        self._host = host
        self._check = check
        self._bodies = bodies
        self._metrics = metrics
        limits = host.config.limits
        self._max_body = limits.max_body_bytes
        self._max_queries = limits.max_queries_per_request
        self._default_timeout = limits.default_timeout_s
        self._retry_after = str(limits.retry_after_s)

    # ------------------------------------------------------------------ answers
    def _answer(
        self, payload: bytes, msgpack: bool, status: int = 200, headers: Mapping[str, str] = {}
    ) -> Response:
        return Response(payload, status, headers, MSGPACK if msgpack else JSON)

    def _refused(self, refusal: _RefusalError, msgpack: bool) -> Response:
        headers: dict[str, str] = {}
        if refusal.status in (429, 503):
            headers["Retry-After"] = self._retry_after
        if refusal.status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="vyre-async"'
        body = {
            "error": {
                "status": refusal.status,
                "message": f"{_sentence(refusal.what)} Fix: {refusal.fix}",
                "fix": refusal.fix,
            }
        }
        return self._answer(encode(body, msgpack), msgpack, refusal.status, headers)

    def _guard(self, request: Request) -> None:
        if not self._check.allows(request.headers.get("authorization")):
            missing = request.headers.get("authorization") is None
            raise _RefusalError(
                401,
                "this server asks for a bearer token, and the request "
                + ("carries none." if missing else "carries another one."),
                "send the header `Authorization: Bearer <token>` with the server's token.",
                "unauthorized",
            )

    # ------------------------------------------------------------------- health
    async def live(self, request: Request) -> Response:
        """``GET /v2/health/live``: 200 while the process answers (no token asked)."""
        return self._answer(b'{"live":true}', False)

    async def ready(self, request: Request) -> Response:
        """``GET /v2/health/ready``: 200 once every graph is resident on every
        device, else 503 with each graph's state."""
        msgpack = is_msgpack(request.headers.get("accept"))
        try:
            self._guard(request)
        except _RefusalError as refusal:
            return self._refused(refusal, msgpack)
        if self._host.ready():
            return self._answer(encode({"ready": True}, msgpack), msgpack)
        states = {g.name: g.state for g in self._host.graphs.values()}
        body = {"ready": False, "accepting": self._host.accepting, "graphs": states}
        return self._answer(encode(body, msgpack), msgpack, 503, {"Retry-After": self._retry_after})

    # ------------------------------------------------------------------- graphs
    def _describe(self, graph: ServedGraph) -> dict[str, Any]:
        current = graph.current
        batching = graph.section.batching
        described: dict[str, Any] = {
            "name": graph.name,
            "state": graph.state,
            "generation": None if current is None else current.number,
            "vertices": None if current is None else current.graph.num_vertices,
            "edges": None if current is None else current.graph.num_edges,
            "weighted": None if current is None else current.graph.weights is not None,
            "devices": self._host.devices,
            "replicas": 0 if current is None else current.session.devices,
            "running": 0 if current is None else current.running,
            "batching": batching if batching.enabled else None,
            "kinds": list(self._bodies),
            "reloading": graph.reloading,
            "error": graph.error,
        }
        return described

    async def graphs(self, request: Request) -> Response:
        """``GET /v1/graphs``: every graph, what it holds and where."""
        msgpack = is_msgpack(request.headers.get("accept"))
        try:
            self._guard(request)
        except _RefusalError as refusal:
            return self._refused(refusal, msgpack)
        body = {"graphs": [self._describe(g) for g in self._host.graphs.values()]}
        return self._answer(encode(body, msgpack), msgpack)

    async def graph(self, request: Request) -> Response:
        """``GET /v1/graphs/{name}``: one graph."""
        msgpack = is_msgpack(request.headers.get("accept"))
        try:
            self._guard(request)
            graph = self._graph(request.path_params["name"])
        except _RefusalError as refusal:
            return self._refused(refusal, msgpack)
        return self._answer(encode(self._describe(graph), msgpack), msgpack)

    def _graph(self, name: str) -> ServedGraph:
        graph = self._host.graphs.get(name)
        if graph is None:
            known = ", ".join(self._host.graphs)
            raise _RefusalError(
                404,
                f"no graph is named {name!r}; this server holds {known}",
                "use one of the graphs listed (GET /v1/graphs lists them).",
            )
        return graph

    async def reload(self, request: Request) -> Response:
        """``POST /v1/graphs/{name}/reload``: load the graph again and swap it in."""
        msgpack = is_msgpack(request.headers.get("accept"))
        try:
            self._guard(request)
            graph = self._graph(request.path_params["name"])
            try:
                await self._host.reload(graph.name)
            except ReloadBusyError as exc:
                raise _RefusalError(409, exc.what, exc.fix) from None
            except LifecycleError as exc:
                raise _RefusalError(503, exc.what, exc.fix) from None
            except VyreError as exc:
                raise _RefusalError(
                    422,
                    f"graph {graph.name!r} could not be reloaded and still serves its "
                    f"previous load: {exc.what}",
                    exc.fix,
                ) from None
        except _RefusalError as refusal:
            return self._refused(refusal, msgpack)
        return self._answer(encode(self._describe(graph), msgpack), msgpack)

    async def metrics(self, request: Request) -> Response:
        """``GET /metrics``: the Prometheus text exposition."""
        try:
            self._guard(request)
        except _RefusalError as refusal:
            return self._refused(refusal, False)
        return Response(
            self._metrics.text(self._host), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    # ------------------------------------------------------------------ queries
    async def query(self, request: Request) -> Response:
        """``POST /v1/graphs/{name}/{kind}``: one query."""
        return await self._query(request, many=False)

    async def batch(self, request: Request) -> Response:
        """``POST /v1/graphs/{name}/{kind}/batch``: many queries of one kind."""
        return await self._query(request, many=True)

    async def _query(self, request: Request, *, many: bool) -> Response:
        started = time.perf_counter()
        name: str = request.path_params["name"]
        kind: str = request.path_params["kind"]
        msgpack = is_msgpack(request.headers.get("accept"))
        label = name if name in self._host.graphs else "-"
        kind_label = kind if kind in self._bodies else "-"
        try:
            answered = await self._answer_query(request, name, kind, many, msgpack)
        except _RefusalError as refusal:
            if refusal.reason:
                self._metrics.reject(label, refusal.reason)
            self._metrics.record(label, kind_label, refusal.status, time.perf_counter() - started)
            return self._refused(refusal, msgpack)
        except ClientDisconnect:  # while the body was read: no one to answer
            answered = None
        total = time.perf_counter() - started
        if answered is None:
            self._metrics.record(label, kind_label, CLIENT_GONE, total)
            return Response(status_code=CLIENT_GONE)
        payload, query_s, queries = answered
        self._metrics.record(name, kind, 200, total, query_seconds=query_s, queries=queries)
        timing = f"query;dur={query_s * 1e3:.3f}, app;dur={(total - query_s) * 1e3:.3f}"
        return self._answer(payload, msgpack, 200, {"Server-Timing": timing})

    async def _answer_query(
        self, request: Request, name: str, kind: str, many: bool, msgpack: bool
    ) -> tuple[bytes, float, int] | None:
        """The encoded answer, the seconds the query took and the queries it held
        (``None``: the client went away).

        Raises:
            _RefusalError: Anything but an answer.
            ClientDisconnect: The client went away while its body was read.
        """
        headers = request.headers
        self._guard(request)
        graph = self._graph(name)
        bodies = self._kind(kind, many)
        body = await self._body(request)
        try:
            query = bodies.decode(body, many=many, msgpack=is_msgpack(headers.get("content-type")))
        except ValidationError as exc:
            raise _RefusalError(400, exc.what, exc.fix) from None
        if many:
            self._check_count(len(query.sources))
        timeout = query.timeout or self._timeout(headers.get(TIMEOUT_HEADER))
        generation = self._admit(graph)
        session, unit, params = generation.session, bodies.unit, query.params
        call: Callable[[], Awaitable[Any]]
        if many:
            call = lambda: session.query_many(  # noqa: E731
                unit, query.sources, params, priority=query.priority, queue_timeout=timeout
            )
        else:
            call = lambda: session.query(  # noqa: E731
                unit, getattr(query, "source", None), params,
                priority=query.priority, queue_timeout=timeout,
            )  # fmt: skip
        generation.enter()
        queried = time.perf_counter()
        try:
            gone, answer = await _unless_gone(request.receive, call)
        except VyreError as exc:
            status = status_of(exc)
            reason = {429: "queue_full", 504: "timeout"}.get(status, "")
            raise _RefusalError(status, exc.what, exc.fix, reason) from None
        finally:
            generation.leave()
        query_s = time.perf_counter() - queried
        if gone:
            return None
        if many:
            answers = [await unit.unpack(params, row) for row in answer]
            return await encode_answer("answers", answers, msgpack), query_s, len(answers)
        return await encode_answer("answer", answer, msgpack), query_s, 1

    def _check_count(self, count: int) -> None:
        if count > self._max_queries:
            raise _RefusalError(
                413,
                f"the request asks {count} queries, more than this server's "
                f"{self._max_queries} per request",
                f"split the sources into requests of at most {self._max_queries}.",
                "too_many_queries",
            )

    def _kind(self, kind: str, many: bool) -> KindBodies:
        bodies = self._bodies.get(kind)
        if bodies is None:
            raise _RefusalError(
                404,
                f"no query kind is named {kind!r}; the kinds are {', '.join(kind_names())}",
                "use one of the kinds listed.",
            )
        if many and bodies.many is None:
            raise _RefusalError(
                404,
                f"kind {kind!r} has no batch form: its queries take no source",
                f"POST one query to /v1/graphs/<graph>/{kind}.",
            )
        return bodies

    async def _body(self, request: Request) -> bytes:
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self._max_body):
            raise self._too_large(length)
        chunks: list[bytes] = []
        size = 0
        async with contextlib.aclosing(request.stream()) as stream:
            async for chunk in stream:
                size += len(chunk)
                if size > self._max_body:
                    raise self._too_large(f"more than {size - len(chunk)}")
                chunks.append(chunk)
        return b"".join(chunks)

    def _too_large(self, length: str) -> _RefusalError:
        return _RefusalError(
            413,
            f"the request body holds {length} bytes, more than this server's {self._max_body:,}",
            "send fewer sources per request, or raise [limits] max_body_bytes.",
            "too_large",
        )

    def _timeout(self, header: str | None) -> float | None:
        if header is None:
            return self._default_timeout
        try:
            value = float(header)
        except ValueError:
            value = -1.0
        if not 0 < value <= 86_400:
            raise _RefusalError(
                400,
                f"the Request-Timeout header holds {header[:40]!r}, not a number of seconds "
                "in (0, 86400]",
                "send the seconds the query may wait in the queue, e.g. `Request-Timeout: 0.5`.",
            )
        return value

    def _admit(self, graph: ServedGraph) -> Generation:
        """The generation a query on ``graph`` runs on, or the refusal (503, 429)."""
        if not self._host.accepting:
            raise _RefusalError(
                503,
                "the server is draining (shutting down) and admits no new queries",
                "retry on another replica of the service, or after it restarted.",
                "draining",
            )
        current = graph.current
        if current is None:
            what = (
                f"graph {graph.name!r} failed to load: {graph.error}"
                if graph.state == "failed"
                else f"graph {graph.name!r} is still loading"
            )
            raise _RefusalError(
                503, what, "retry once GET /v2/health/ready answers 200.", "not_ready"
            )
        batching = graph.section.batching
        if not batching.enabled and current.running >= batching.queue_size:
            raise _RefusalError(
                429,
                f"graph {graph.name!r} runs {current.running} queries, as many as its "
                f"queue_size allows",
                "retry later, or raise the graph's batching.queue_size.",
                "queue_full",
            )
        return current

    # ------------------------------------------------------------------- errors
    async def not_found(self, request: Request, exc: Exception) -> Response:
        """A path that names no endpoint (404) or a method it does not take (405)."""
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        what = (
            f"{request.method} {request.url.path} names no endpoint of this server"
            if status == 404
            else f"{request.url.path} does not take {request.method}"
        )
        refusal = _RefusalError(
            status,
            what,
            "see the endpoints in the serve guide: POST /v1/graphs/<graph>/<kind>, "
            "GET /v1/graphs, GET /v2/health/live, GET /v2/health/ready, GET /metrics.",
        )
        return self._refused(refusal, is_msgpack(request.headers.get("accept")))


async def _unless_gone(receive: Receive, call: Callable[[], Awaitable[Any]]) -> tuple[bool, Any]:
    """``call()``'s result, cancelled when the client disconnects: ``(gone, result)``.

    A query cancelled in the queue leaves it; one whose batch runs still runs for its
    batch mates, and its answer is dropped (the batcher's promise).
    """
    gone = False
    outcome: list[Any] = []
    failure: list[Exception] = []

    async def watch() -> None:
        nonlocal gone
        while (await receive())["type"] != "http.disconnect":
            pass
        gone = True
        tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        try:
            outcome.append(await call())
        except Exception as exc:  # re-raised below, outside the task group
            failure.append(exc)
        tg.cancel_scope.cancel()
    if gone:
        return True, None
    if failure:
        raise failure[0]
    return False, outcome[0]


def build_app(host: GraphHost, check: BearerCheck, bodies: Mapping[str, KindBodies]) -> Starlette:
    """The Starlette app over ``host``; its lifespan runs the host."""
    endpoints = Endpoints(host, check, bodies, ServeMetrics())
    routes = [
        Route("/v2/health/live", endpoints.live, methods=["GET"]),
        Route("/v2/health/ready", endpoints.ready, methods=["GET"]),
        Route("/metrics", endpoints.metrics, methods=["GET"]),
        Route("/v1/graphs", endpoints.graphs, methods=["GET"]),
        Route("/v1/graphs/{name}", endpoints.graph, methods=["GET"]),
        Route("/v1/graphs/{name}/reload", endpoints.reload, methods=["POST"]),
        Route("/v1/graphs/{name}/{kind}", endpoints.query, methods=["POST"]),
        Route("/v1/graphs/{name}/{kind}/batch", endpoints.batch, methods=["POST"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with host.running():
            yield

    app = Starlette(
        routes=routes,
        exception_handlers={404: endpoints.not_found, 405: endpoints.not_found},
        lifespan=lifespan,
    )
    app.state.graph_host = host
    return app
