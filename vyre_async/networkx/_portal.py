"""The event loop NetworkX calls run on: one blocking portal thread per process.

NetworkX calls are synchronous and vyre_async is asynchronous: the first call starts
an anyio blocking portal (an event loop in a thread of its own), opens the backend
there (``VYRE_ASYNC_NX_BACKEND``: ``auto`` by default, ``cpu`` or ``cuda``), and every
later call runs its coroutine on that loop and waits for it. The caller's thread may
run an event loop of its own (a NetworkX call inside ``async def``): the portal's loop
is another one, so nothing deadlocks, though the caller's loop waits for the call as
it would for any synchronous function. Resident sessions of converted graphs live on
the portal's loop; a session whose graph is gone is closed at the next call, and at
exit the sessions, the backend and the thread are closed in that order.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from ..backends import Backend, open_backend
from ..errors import ConfigurationError

__all__ = ["BACKEND_VARIABLE", "NetworkxLoop", "loop"]

T = TypeVar("T")

#: The environment variable that picks the backend NetworkX calls run on.
BACKEND_VARIABLE = "VYRE_ASYNC_NX_BACKEND"
_KINDS = ("auto", "cpu", "cuda")


class NetworkxLoop:
    """The process's portal thread and backend, started on first use, closed at exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Tokens of entered sessions: never reused (an ``id`` may be, once freed).
        self._tokens = itertools.count()
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._backend_cm: AbstractContextManager[Backend] | None = None
        self._backend: Backend | None = None
        #: Open resident sessions by id, closed before the backend.
        self._sessions: dict[int, AbstractContextManager[Any]] = {}
        #: Sessions whose graphs are gone, closed at the next call (a finalizer may
        #: run in any thread, the loop's own included, so it only notes them).
        self._gone: list[int] = []

    def _start(self) -> tuple[BlockingPortal, Backend]:
        with self._lock:
            if self._portal is not None and self._backend is not None:
                return self._portal, self._backend
            kind = os.environ.get(BACKEND_VARIABLE, "auto").strip().lower() or "auto"
            if kind not in _KINDS:
                raise ConfigurationError(
                    f"{BACKEND_VARIABLE}={os.environ[BACKEND_VARIABLE]!r} is not a backend",
                    fix=f"set {BACKEND_VARIABLE} to one of {', '.join(_KINDS)}, or unset it.",
                )
            portal_cm = start_blocking_portal()
            portal = portal_cm.__enter__()
            try:
                backend_cm = portal.wrap_async_context_manager(open_backend(kind))  # type: ignore[arg-type]
                backend = backend_cm.__enter__()
            except BaseException:
                portal_cm.__exit__(None, None, None)
                raise
            self._portal_cm, self._portal = portal_cm, portal
            self._backend_cm, self._backend = backend_cm, backend
            atexit.register(self.close)
            return portal, backend

    @property
    def backend(self) -> Backend:
        """The backend NetworkX calls run on (started on first use)."""
        return self._start()[1]

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``fn(*args)`` on the portal's loop and return its result (blocking)."""
        portal, _ = self._start()
        self._close_gone()
        return portal.call(fn, *args)

    def enter(self, manager: Any) -> tuple[int, Any]:
        """Enter an async context manager on the portal's loop; ``(token, value)``."""
        portal, _ = self._start()
        self._close_gone()
        wrapped = portal.wrap_async_context_manager(manager)
        value = wrapped.__enter__()
        with self._lock:
            token = next(self._tokens)
            self._sessions[token] = wrapped
        return token, value

    def leave_soon(self, token: int) -> None:
        """Note that what :meth:`enter` entered may be left: at the next call or at
        close. Never blocks, so a finalizer may call it from any thread."""
        with self._lock:
            self._gone.append(token)

    def _close_gone(self) -> None:
        with self._lock:
            gone, self._gone = self._gone, []
            wrapped = [self._sessions.pop(token) for token in gone if token in self._sessions]
        for each in wrapped:
            each.__exit__(None, None, None)

    def close(self) -> None:
        """Close the sessions, the backend and the portal thread; idempotent."""
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
            self._gone.clear()
            backend_cm, portal_cm = self._backend_cm, self._portal_cm
            self._backend_cm = self._portal_cm = None
            self._backend = self._portal = None
        for wrapped in sessions:
            wrapped.__exit__(None, None, None)
        if backend_cm is not None:
            backend_cm.__exit__(None, None, None)
        if portal_cm is not None:
            portal_cm.__exit__(None, None, None)


#: The process's loop for NetworkX calls.
loop = NetworkxLoop()
