"""structlog configuration: a console renderer for people, JSON lines for machines.

The library itself only calls ``structlog.get_logger("vyre_async....")`` and binds
context (backend, device, kernel); it never configures logging on import. An
application (or the ``vyre-async`` CLI) calls :func:`configure_logging` once.
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, Literal, TextIO

import msgspec
import structlog

__all__ = ["JsonLogFile", "LogFormat", "configure_logging", "get_logger", "tracing_enabled"]

LogFormat = Literal["console", "json"]

# Queues of the JsonLogFile writers that get every event as a JSON line.
_json_files: list[queue.SimpleQueue[bytes | None]] = []
_json_encoder = msgspec.json.Encoder(enc_hook=str)

# Per-dispatch events are only emitted once an application asked for debug logs:
# structlog left unconfigured prints every level, and a library must not print a
# line per dispatch into a program that never asked for logging.
_tracing = False


def configure_logging(
    log_format: LogFormat = "console",
    *,
    level: str = "info",
    stream: TextIO | None = None,
) -> None:
    """Configure structlog for vyre_async's loggers (and any other structlog user).

    Args:
        log_format: ``"console"`` for aligned, human-readable lines, ``"json"`` for
            one JSON object per line.
        level: Minimum level name (``"debug"``, ``"info"``, ``"warning"``, ``"error"``).
        stream: Where to write; standard error by default.

    Raises:
        ValueError: An unknown format or level name.
    """
    if log_format not in ("console", "json"):
        raise ValueError(f"log_format must be 'console' or 'json', got {log_format!r}")
    numeric = logging.getLevelNamesMapping().get(level.upper())
    if numeric is None:
        raise ValueError(f"unknown log level {level!r}")
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    global _tracing
    _tracing = numeric <= logging.DEBUG
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            _copy_to_json_files,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=stream or sys.stderr),
        cache_logger_on_first_use=False,
    )


def _copy_to_json_files(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    if _json_files:
        line = _json_encoder.encode(dict(event_dict)) + b"\n"
        for lines in _json_files:
            lines.put(line)
    return event_dict


class JsonLogFile:
    """Copies every event (at the configured level) to a file as JSON lines.

    A background thread does the writing, so logging never blocks the event loop;
    it flushes whenever it has drained what was queued. ``open`` and ``close`` block
    (call them in a worker thread from async code). Needs logging set up by
    :func:`configure_logging`, which ``open`` does with the defaults if nothing
    configured structlog yet.

    Args:
        path: The file; lines are appended.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._write, name=f"log writer {path}", daemon=True)

    def open(self) -> None:
        """Open the file and start copying events to it."""
        if not structlog.is_configured():
            configure_logging()
        # Never through a symlink: the file lives in a job's output folder.
        self._file = open(self._path, "ab", opener=_no_follow)  # noqa: SIM115 - the writer closes it
        self._thread.start()
        _json_files.append(self._queue)

    def close(self) -> None:
        """Stop copying, write what is queued and close the file."""
        if self._queue in _json_files:
            _json_files.remove(self._queue)
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


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW, 0o644)


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    """The library's logger for ``name`` (a ``vyre_async.*`` module name)."""
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(name)
    return logger


def tracing_enabled() -> bool:
    """Whether per-dispatch debug events are wanted (``configure_logging(level="debug")``)."""
    return _tracing
