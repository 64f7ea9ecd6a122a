"""Logging: silent inside a program that configured nothing, the stdlib's levels obeyed."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import vyre_async as va
from vyre_async.logging import JsonLogFile, LibraryLogger, configure_logging, get_logger


@contextlib.contextmanager
def basic_config(**options: Any) -> Iterator[None]:
    """``logging.basicConfig(**options)`` as an application would call it, undone after.

    ``force=True`` because pytest keeps its own capturing handlers on the root logger
    (basicConfig does nothing where the root has handlers); they are put back after.
    """
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    logging.basicConfig(force=True, **options)
    try:
        yield
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)


async def _open_and_close_a_backend() -> None:
    # Logs "backend opened" and "backend closed" at info (and, without a GPU, the
    # fallback reason), through vyre_async.backends loggers.
    async with va.open_backend("auto"):
        pass


async def test_with_nothing_configured_a_library_call_prints_nothing(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """No logging set up: opening and closing a backend writes nothing to stdout/stderr."""
    await _open_and_close_a_backend()
    out, err = await anyio.to_thread.run_sync(capfd.readouterr)
    assert (out, err) == ("", "")


async def test_with_logging_at_warning_a_library_call_prints_no_info_line(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """logging.basicConfig(level=WARNING): no INFO line of the library appears."""
    with basic_config(level=logging.WARNING):
        await _open_and_close_a_backend()
        get_logger("vyre_async.test").warning("a_warning_still_shows", value=3)
    out, err = await anyio.to_thread.run_sync(capfd.readouterr)
    assert out == ""
    assert "backend opened" not in err
    assert err.splitlines() == ["WARNING:vyre_async.test:a_warning_still_shows value=3"]


async def test_with_logging_at_info_library_events_go_through_the_standard_library(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """basicConfig(level=INFO): the backend's events are stdlib records of its logger."""
    with basic_config(level=logging.INFO, format="%(levelname)s %(name)s %(message)s"):
        await _open_and_close_a_backend()
    out, err = await anyio.to_thread.run_sync(capfd.readouterr)
    assert out == ""
    opened = [line for line in err.splitlines() if "backend opened" in line]
    assert len(opened) == 1
    assert opened[0].startswith("INFO vyre_async.backends.")
    assert "backend=" in opened[0]


def test_configure_logging_prints_json_lines_once_beside_a_root_handler(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """configure_logging('json') writes one JSON line per event, not doubled by the root's."""
    stream = io.StringIO()
    with basic_config(level=logging.DEBUG):
        configure_logging("json", level="info", stream=stream)
        log = get_logger("vyre_async.test").bind(backend="cpu")
        log.debug("not_shown")
        log.info("shown", items=2)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    event = json.loads(lines[0])
    assert (event["event"], event["items"], event["backend"], event["level"]) == (
        "shown",
        2,
        "cpu",
        "info",
    )
    assert event["timestamp"].endswith("Z")
    assert capfd.readouterr() == ("", "")


def test_configure_logging_console_lines_keep_their_aligned_shape() -> None:
    """configure_logging('console') renders 'timestamp [level] event key=value'."""
    stream = io.StringIO()
    configure_logging("console", level="info", stream=stream)
    get_logger("vyre_async.test").warning("disk_nearly_full", free_mib=12)
    (line,) = stream.getvalue().splitlines()
    assert "[warning  ] disk_nearly_full" in line
    assert line.endswith("free_mib=12")


def test_a_logger_made_before_configure_logging_follows_it() -> None:
    """Loggers are module globals made at import; configuring later still applies."""
    log = get_logger("vyre_async.test")
    stream = io.StringIO()
    configure_logging("json", level="warning", stream=stream)
    log.info("dropped")
    log.error("kept")
    assert [json.loads(line)["event"] for line in stream.getvalue().splitlines()] == ["kept"]


async def test_a_json_log_file_gets_info_events_whatever_the_application_configured(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """JsonLogFile(level='info') copies info events while the stdlib shows only warnings."""
    file = JsonLogFile(tmp_path / "log.jsonl", level="info")
    log = get_logger("vyre_async.test")
    with basic_config(level=logging.WARNING):
        await anyio.to_thread.run_sync(file.open)
        log.debug("below_the_file_level")
        log.info("copied", n=1)
        _log_an_exception(log)
        await anyio.to_thread.run_sync(file.close)
    text = await anyio.Path(tmp_path / "log.jsonl").read_text()
    events = [json.loads(line) for line in text.splitlines()]
    assert [e["event"] for e in events] == ["copied", "failed_with_trace"]
    assert events[0]["level"] == "info"
    assert events[0]["n"] == 1
    assert "ValueError: invalid literal" in events[1]["exception"]
    out, err = await anyio.to_thread.run_sync(capfd.readouterr)
    assert "copied" not in err
    assert "failed_with_trace" in err  # an error passes the application's WARNING level
    assert "ValueError: invalid literal" in err  # with its traceback, through the stdlib
    assert out == ""


def _log_an_exception(log: LibraryLogger) -> None:
    try:
        int("boom")
    except ValueError:
        log.exception("failed_with_trace")


def test_the_fallback_reason_is_logged_once() -> None:
    """open_backend('auto') without a GPU logs its reason in one event, not two.

    Run in a fresh interpreter: the driver's failure is cached per process, so only
    the first open in a process could log it twice.
    """
    script = (
        "import anyio, json, vyre_async as va\n"
        "from vyre_async.testing import capture_logs\n"
        "async def main():\n"
        "    with capture_logs() as logs:\n"
        "        async with va.open_backend('auto') as backend:\n"
        "            print(backend.kind)\n"
        "    print(json.dumps([e for e in logs if e['log_level'] != 'debug'], default=str))\n"
        "anyio.run(main)\n"
    )
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    kind, events_text = done.stdout.splitlines()
    if kind == "cuda":
        pytest.skip("a GPU answered; there is no fallback to log")
    events = json.loads(events_text)
    reason = next(e["reason"] for e in events if e["event"] == "falling back to the cpu backend")
    assert sum(reason in repr(e) for e in events) == 1, events


def test_a_json_log_file_keeps_its_level_below_a_quieter_console(tmp_path: Path) -> None:
    """configure_logging at warning, JsonLogFile at info: the file gets the info and
    error events and their fields, the console only the error."""
    console = io.StringIO()
    configure_logging("console", level="warning", stream=console)
    file = JsonLogFile(tmp_path / "log.jsonl", level="info")
    log = get_logger("vyre_async.test").bind(run=7)
    file.open()
    try:
        log.debug("below_both")
        log.info("for_the_file", n=1)
        _log_an_exception(log)
    finally:
        file.close()
    events = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [(e["event"], e["level"], e["run"]) for e in events] == [
        ("for_the_file", "info", 7),
        ("failed_with_trace", "error", 7),
    ]
    assert events[0]["n"] == 1
    assert "ValueError: invalid literal" in events[1]["exception"]
    assert "for_the_file" not in console.getvalue()
    assert "failed_with_trace" in console.getvalue()


def test_a_json_log_file_at_debug_turns_on_per_dispatch_events(tmp_path: Path) -> None:
    """A JsonLogFile at debug while the console is at warning: tracing is on while it is open."""
    configure_logging("console", level="warning", stream=io.StringIO())
    file = JsonLogFile(tmp_path / "log.jsonl", level="debug")
    assert not va.logging.tracing_enabled()
    file.open()
    try:
        assert va.logging.tracing_enabled()
    finally:
        file.close()
    assert not va.logging.tracing_enabled()


#: Logs through the plain path (structlog untouched) or, given ``structlog`` as its
#: second argument, with structlog imported first; prints whether structlog is imported
#: before the exception (whose lines structlog formats for the JSON file).
_PLAIN_SNIPPET = """
import json, logging, sys
from pathlib import Path
if sys.argv[2] == "structlog":
    import structlog
logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s:%(message)s",
                    stream=sys.stdout)
from vyre_async.logging import JsonLogFile, get_logger
log_file = JsonLogFile(Path(sys.argv[1]), level="info")
log_file.open()
log = get_logger("vyre_async.test").bind(job="j")
log.debug("hidden", value=1)
log.info("shown", value=3)
print(json.dumps([m for m in ("structlog",) if m in sys.modules]))
try:
    1 / 0
except ZeroDivisionError:
    log.exception("failed", step=2)
log_file.close()
"""


def _log_plainly(folder: Path, first: str) -> tuple[list[str], list[dict[str, Any]]]:
    """The snippet's standard output lines and its JSON log file's events."""
    path = folder / f"{first}.jsonl"
    done = subprocess.run(  # noqa: S603 - this interpreter on a fixed snippet
        [sys.executable, "-c", _PLAIN_SNIPPET, str(path), first],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    events = [json.loads(line) for line in path.read_text().splitlines()]
    for event in events:
        del event["timestamp"]
    return done.stdout.splitlines(), events


def test_without_structlog_imported_events_read_as_through_structlog(tmp_path: Path) -> None:
    """An interpreter that never imports structlog logs the same lines (levels obeyed,
    bound values, the exception's traceback) and JSON events as one that imported it."""
    lines, events = _log_plainly(tmp_path, "plain")
    want_lines, want_events = _log_plainly(tmp_path, "structlog")
    assert lines[1] == "[]"
    assert want_lines[1] == '["structlog"]'
    del lines[1], want_lines[1]
    assert lines == want_lines
    assert lines[0] == "INFO:vyre_async.test:shown job='j' value=3"
    assert lines[1] == "ERROR:vyre_async.test:failed job='j' step=2"
    assert lines[-1] == "ZeroDivisionError: division by zero"
    assert events == want_events
    assert [e["event"] for e in events] == ["shown", "failed"]
    assert "ZeroDivisionError" in events[1]["exception"]
