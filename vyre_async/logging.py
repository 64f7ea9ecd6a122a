"""Logging: vyre_async's events go to the standard ``logging`` module.

Every ``vyre_async.*`` logger hands its events to the standard-library logger of the
same name, and the package's top logger ``vyre_async`` carries a ``NullHandler``
and nothing else, as a library's should: a program that configures no logging sees
no line from vyre_async, and one that calls ``logging.basicConfig(level=...)`` sees
the levels it asked for. How an event becomes a record:

- structlog configured (by the application, by :func:`configure_logging`, or inside
  ``structlog.testing.capture_logs``): structlog's level filter and processors shape
  the event, and what the last processor returns goes to the standard-library logger
  (``structlog.stdlib.ProcessorFormatter.wrap_for_formatter`` works as the last one).
- structlog left at its defaults: the event becomes one line, ``event key=value ...``,
  and the standard-library logger's level decides whether it is emitted at all.

structlog is imported when it is used, not with this module (importing it imports its
console renderer and, where installed, rich: a tenth of a second): by
:func:`configure_logging`, or by an application that uses it. Until something imports
it nothing can have configured it or bound its context variables, so an event takes
the plain path without it.

:func:`configure_logging` (the CLI calls it) gives console lines for people or JSON
lines for machines: it configures structlog and puts one handler on ``vyre_async``.
"""

from __future__ import annotations

import datetime
import logging
import os
import queue
import sys
import threading
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, Literal, Protocol, TextIO

import msgspec

__all__ = [
    "JsonLogFile",
    "LibraryLogger",
    "LogFormat",
    "StatusLine",
    "configure_logging",
    "get_logger",
    "set_status_line",
    "tracing_enabled",
]

LogFormat = Literal["console", "json"]

_TOP = "vyre_async"
logging.getLogger(_TOP).addHandler(logging.NullHandler())

_LEVELS = logging.getLevelNamesMapping()
# The files JsonLogFile writes, each with its minimum level.
_json_files: list[tuple[int, queue.SimpleQueue[bytes | None]]] = []
_json_encoder = msgspec.json.Encoder(enc_hook=str)

# Per-dispatch events are only emitted once an application asked for debug logs
# through configure_logging (or a JSON log file at debug is open): building them costs
# the hot path, even when dropped.
_tracing = False
_json_debug = False
# The handler configure_logging put on the vyre_async logger (replaced, not stacked).
_handler: _EventLineHandler | None = None
# A line being redrawn in place (the job progress bar) that log lines must not join.
_status: StatusLine | None = None


def configure_logging(
    log_format: LogFormat = "console",
    *,
    level: str = "info",
    stream: TextIO | None = None,
) -> None:
    """Print vyre_async's events (and any other structlog user's) as lines.

    Configures structlog, and puts one handler on the standard-library logger
    ``vyre_async`` that writes the rendered lines to ``stream`` (replacing the one an
    earlier call put there; ``vyre_async`` no longer propagates to the root logger, so
    a line is not printed twice).

    Args:
        log_format: ``"console"`` for aligned, human-readable lines, ``"json"`` for
            one JSON object per line.
        level: Minimum level name (``"debug"``, ``"info"``, ``"warning"``, ``"error"``);
            ``"debug"`` also turns on the per-dispatch events.
        stream: Where to write; standard error by default.

    Raises:
        ValueError: An unknown format or level name.
    """
    if log_format not in ("console", "json"):
        raise ValueError(f"log_format must be 'console' or 'json', got {log_format!r}")
    numeric = _LEVELS.get(level.upper())
    if numeric is None:
        raise ValueError(f"unknown log level {level!r}")
    import structlog  # imported when used (see the module docstring)

    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    out = stream or sys.stderr
    global _tracing, _handler
    _tracing = numeric <= logging.DEBUG
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    top = logging.getLogger(_TOP)
    if _handler is not None:
        top.removeHandler(_handler)
    _handler = _EventLineHandler(out)
    top.addHandler(_handler)
    top.setLevel(numeric)
    top.propagate = False


def _unconfigure() -> None:
    """Undo :func:`configure_logging` (for tests): structlog defaults, no handler."""
    import structlog  # imported when used (see the module docstring)

    global _tracing, _handler
    structlog.reset_defaults()
    _tracing = False
    top = logging.getLogger(_TOP)
    if _handler is not None:
        top.removeHandler(_handler)
        _handler = None
    top.setLevel(logging.NOTSET)
    top.propagate = True


class StatusLine(Protocol):
    """A line redrawn in place on a terminal (``\\r``), such as a progress bar."""

    @property
    def stream(self) -> object:
        """The stream the line is drawn on."""

    def clear(self) -> None:
        """Erase the line; the cursor is left at its start."""

    def redraw(self) -> None:
        """Draw the line again after something else was printed."""


def set_status_line(line: StatusLine | None) -> None:
    """Register the status line log lines must go around (``None``: there is none).

    While one is set, each line :func:`configure_logging`'s handler writes to the same
    stream first erases it and then draws it again below, so a log line never
    continues a progress bar.
    """
    global _status
    _status = line


class _EventLineHandler(logging.StreamHandler[TextIO]):
    """Writes rendered events, one per line, around a status line on the same stream."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        status = _status
        if status is None or status.stream is not self.stream:
            super().emit(record)
            return
        status.clear()
        super().emit(record)
        status.redraw()


class LibraryLogger:
    """A vyre_async logger: events to the standard-library logger of its name.

    Made by :func:`get_logger`. The methods take an event name and key-value fields,
    as structlog's do; whether and how each event is shaped is decided when it is
    logged (see the module's description), so configuring logging after a logger
    was made still applies to it.
    """

    __slots__ = ("_context", "_stdlib")

    def __init__(self, stdlib: logging.Logger, context: dict[str, Any]) -> None:
        self._stdlib = stdlib
        self._context = context

    @property
    def name(self) -> str:
        """The logger's name (``vyre_async.jobs``, ...)."""
        return self._stdlib.name

    def bind(self, **values: Any) -> LibraryLogger:
        """A logger that adds ``values`` to every event."""
        return LibraryLogger(self._stdlib, {**self._context, **values})

    def _bound(self) -> Any:
        import structlog  # imported already (see _log)

        if structlog.is_configured():
            config = structlog.get_config()
            return config["wrapper_class"](
                self._stdlib,
                processors=config["processors"],
                context=config["context_class"](self._context),
            )
        processors: list[structlog.typing.Processor] = [
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.filter_by_level,
            _plain_line,
        ]
        return structlog.stdlib.BoundLogger(
            self._stdlib, processors=processors, context=dict(self._context)
        )

    def debug(self, event: str, **fields: Any) -> None:
        """Log ``event`` at debug level."""
        self._log("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        """Log ``event`` at info level."""
        self._log("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        """Log ``event`` at warning level."""
        self._log("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        """Log ``event`` at error level."""
        self._log("error", event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        """Log ``event`` at error level with the exception being handled."""
        self._log("exception", event, fields)

    def _log(self, method: str, event: str, fields: dict[str, Any]) -> None:
        # JSON log files first: their level is their own, so a quiet console (structlog's
        # filtering logger drops events before any processor) still leaves a full file.
        if _json_files:
            copy = {**self._context, **fields, "event": event}
            if method == "exception":
                copy.setdefault("exc_info", True)
            _copy_to_json_files(self._stdlib, method, copy)
        if "structlog" in sys.modules:
            getattr(self._bound(), method)(event, **fields)
            return
        # structlog was never imported: never configured, no context variables bound.
        if not self._stdlib.isEnabledFor(_method_level(method)):
            return
        event_dict = {**self._context, **fields, "event": event}
        if method == "exception":
            event_dict.setdefault("exc_info", True)
        (line,), kwargs = _plain_line(self._stdlib, method, event_dict)
        getattr(self._stdlib, "error" if method == "exception" else method)(line, **kwargs)


def _method_level(method: str) -> int:
    """The standard-library level of a logger method's name (``exception``: error)."""
    return _LEVELS.get(method.upper(), logging.ERROR if method == "exception" else logging.INFO)


def _copy_to_json_files(_logger: object, method: str, event_dict: MutableMapping[str, Any]) -> None:
    level = _method_level(method)
    wanted = [lines for minimum, lines in _json_files if level >= minimum]
    if wanted:
        copy: MutableMapping[str, Any] = dict(event_dict)
        if "structlog" in sys.modules or copy.get("exc_info"):
            # Its context variables (none bound unless it was imported), and an
            # exception's lines formatted as structlog formats them.
            import structlog  # imported when used (see the module docstring)

            copy = structlog.contextvars.merge_contextvars(_logger, method, copy)
            copy = structlog.processors.format_exc_info(_logger, method, copy)
        else:
            copy.pop("exc_info", None)
        copy["level"] = logging.getLevelName(level).lower()
        copy["timestamp"] = datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z")
        line = _json_encoder.encode(dict(copy)) + b"\n"
        for lines in wanted:
            lines.put(line)


def _plain_line(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> tuple[tuple[str], dict[str, Any]]:
    """``event key=value ...`` for a standard-library handler, exceptions passed on."""
    kwargs: dict[str, Any] = {}
    for key in ("exc_info", "stack_info"):
        if event_dict.get(key):
            kwargs[key] = event_dict.pop(key)
        event_dict.pop(key, None)
    event = event_dict.pop("event", "")
    fields = " ".join(f"{key}={value!r}" for key, value in event_dict.items())
    return (f"{event} {fields}" if fields else str(event),), kwargs


class JsonLogFile:
    """Copies every event at ``level`` or above to a file as JSON lines.

    Works whatever logging the application configured, or none: the copy is taken
    before any level filter of structlog or of the standard library, so the file keeps
    its own level whatever the console shows (``vyre-async run --log-level warning``
    still leaves every info event in the job's ``log.jsonl``). A background thread does
    the writing, so logging never blocks the event loop; it flushes whenever it has
    drained what was queued. ``open`` and ``close`` block (call them in a worker thread
    from async code).

    Args:
        path: The file; lines are appended.
        level: Minimum level name of the events copied.
    """

    def __init__(self, path: Path, *, level: str = "info") -> None:
        numeric = _LEVELS.get(level.upper())
        if numeric is None:
            raise ValueError(f"unknown log level {level!r}")
        self._path = path
        self._level = numeric
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._entry = (numeric, self._queue)
        self._thread = threading.Thread(target=self._write, name=f"log writer {path}", daemon=True)

    def hold(self) -> None:
        """Start copying events now, held in memory until :meth:`open` writes them first
        (or :meth:`close` drops them): a job's events from before its folder may be
        made. Does not block."""
        if self._entry not in _json_files:
            _json_files.append(self._entry)
            _note_json_levels()

    def open(self) -> None:
        """Open the file and start copying events to it (after those held)."""
        # Never through a symlink: the file lives in a job's output folder.
        self._file = open(self._path, "ab", opener=_no_follow)  # noqa: SIM115 - the writer closes it
        self._thread.start()
        self.hold()

    def close(self) -> None:
        """Stop copying, write what is queued and close the file (never opened: drop
        the events held)."""
        if self._entry in _json_files:
            _json_files.remove(self._entry)
            _note_json_levels()
            if self._thread.ident is not None:
                self._queue.put(None)
                self._thread.join()

    def _write(self) -> None:
        with self._file:
            while True:
                line = self._queue.get()
                while line is not None:
                    self._file.write(line)
                    try:
                        line = self._queue.get_nowait()
                    except queue.Empty:
                        break
                else:
                    return
                self._file.flush()


def _note_json_levels() -> None:
    global _json_debug
    _json_debug = any(minimum <= logging.DEBUG for minimum, _ in _json_files)


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW, 0o644)


def get_logger(name: str) -> LibraryLogger:
    """The library's logger for ``name`` (a ``vyre_async.*`` module name)."""
    return LibraryLogger(logging.getLogger(name), {})


def tracing_enabled() -> bool:
    """Whether per-dispatch debug events are wanted: ``configure_logging(level="debug")``,
    or a :class:`JsonLogFile` at level debug open."""
    return _tracing or _json_debug
