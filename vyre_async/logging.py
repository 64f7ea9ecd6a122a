"""structlog configuration: a console renderer for people, JSON lines for machines.

The library itself only calls ``structlog.get_logger("vyre_async....")`` and binds
context (backend, device, kernel); it never configures logging on import. An
application (or the ``vyre-async`` CLI) calls :func:`configure_logging` once.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import structlog

__all__ = ["LogFormat", "configure_logging", "get_logger", "tracing_enabled"]

LogFormat = Literal["console", "json"]

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
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=stream or sys.stderr),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    """The library's logger for ``name`` (a ``vyre_async.*`` module name)."""
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(name)
    return logger


def tracing_enabled() -> bool:
    """Whether per-dispatch debug events are wanted (``configure_logging(level="debug")``)."""
    return _tracing
