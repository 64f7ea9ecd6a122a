"""The error tree of vyre_async.

Every error the library raises on purpose is a :class:`VyreError`. Each class has a
stable integer ``code`` (logged, and usable as a process exit detail) and every
message has two parts: what happened, with the numbers involved, then ``Fix: ...``.
The constructor enforces that shape, so no message can leave without its fix.

Misuse of the Python API itself (a wrong argument type, an impossible value for a
plain argument) raises ``TypeError`` / ``ValueError`` as Python code does.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "CompileError",
    "ConfigurationError",
    "DeviceLostError",
    "DispatchError",
    "LifecycleError",
    "OutOfMemoryError",
    "QueueFullError",
    "QueueTimeoutError",
    "UnsupportedFeatureError",
    "ValidationError",
    "VyreError",
]


class VyreError(Exception):
    """Root of every error vyre_async raises on purpose.

    Args:
        what: What happened, with the numbers involved (one or more sentences).
        fix: What the caller should do about it; rendered after ``Fix:``.

    Attributes:
        code: Stable integer identifying the error class.
        retryable: Whether running the same work again may succeed (a timeout, memory
            pressure, a lost device once reopened); the job runner retries only these.
        what: The first half of the message.
        fix: The second half of the message.
    """

    code: ClassVar[int] = 1
    retryable: ClassVar[bool] = False

    def __init__(self, what: str, *, fix: str) -> None:
        what = what.strip()
        fix = fix.strip()
        if not fix:
            raise ValueError("a VyreError needs a non-empty fix")
        if not what.endswith((".", "?", "!", ":")):
            what += "."
        self.what = what
        self.fix = fix
        super().__init__(f"{what} Fix: {fix}")

    def __reduce__(self) -> tuple[object, ...]:  # keeps errors copyable across threads
        return (_rebuild, (type(self), self.what, self.fix))


def _rebuild(cls: type[VyreError], what: str, fix: str) -> VyreError:
    return cls(what, fix=fix)


class ConfigurationError(VyreError):
    """A backend, job or option was configured in a way that cannot work."""

    code: ClassVar[int] = 10


class ValidationError(VyreError):
    """An input (array, buffer, scalar, graph, file) failed validation before any work ran."""

    code: ClassVar[int] = 20


class CompileError(VyreError):
    """NVRTC refused a kernel's source.

    Attributes:
        log: NVRTC's full program log.
    """

    code: ClassVar[int] = 30

    def __init__(self, what: str, *, fix: str, log: str = "") -> None:
        super().__init__(what, fix=fix)
        self.log = log

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_compile, (self.what, self.fix, self.log))


def _rebuild_compile(what: str, fix: str, log: str) -> CompileError:
    return CompileError(what, fix=fix, log=log)


class OutOfMemoryError(VyreError):
    """Device or pinned host memory ran out, or a byte cap was reached."""

    code: ClassVar[int] = 40
    retryable: ClassVar[bool] = True


class DeviceLostError(VyreError):
    """The device reported a sticky error; the backend refuses all further work."""

    code: ClassVar[int] = 50
    retryable: ClassVar[bool] = True


class DispatchError(VyreError):
    """A dispatch failed or timed out after it was accepted."""

    code: ClassVar[int] = 60
    retryable: ClassVar[bool] = True


class QueueFullError(DispatchError):
    """A bounded queue that rejects when full (rather than blocking) refused a request."""

    code: ClassVar[int] = 61


class QueueTimeoutError(DispatchError):
    """A request's queue timeout passed before a batch took it (nothing of it ran)."""

    code: ClassVar[int] = 62


class UnsupportedFeatureError(VyreError):
    """The backend or device cannot do what was asked (a capability or a limit)."""

    code: ClassVar[int] = 70


class LifecycleError(VyreError):
    """An object was used in the wrong state: closed backend, freed or busy buffer."""

    code: ClassVar[int] = 80
