"""What ``vyre-async show RUN`` prints: a run's summary and its first records as a table.

The summary comes from the manifest (job, fingerprint, items committed, failed,
complete, chunk format) and, where the last run wrote one, ``summary.json`` (how it
ended, the backend and device it ran on). The records are the first committed ones
in commit order, read chunk by chunk as :func:`read_records` reads them, so showing
20 records of a million-record run reads one chunk. It works on a run that is going
or was stopped: only what the manifest commits is shown.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

import msgspec

from ._layout import SUMMARY_FILE
from ._reading import committed_chunk_records
from ._records import ItemRecord, Manifest
from ._verify import open_output

#: Records ``vyre-async show`` lists unless told otherwise (``--limit``).
SHOW_LIMIT = 20
#: Characters a text cell (an error message, an array path) is cut to.
CELL_WIDTH = 48
_TEXTS = {"kind", "ok", "array", "error"}
#: Columns shown even when every row shown leaves them null.
_ALWAYS = ("id", "kind", "ok")


class _LastRun(msgspec.Struct):
    """The fields of ``summary.json`` that ``show`` prints (others are ignored)."""

    status: str = "?"
    backend: str = "?"
    device: str = "?"
    started_at: str = "?"
    seconds: float | None = None
    version: str = "?"


def describe_run(folder: str | os.PathLike[str], *, limit: int = SHOW_LIMIT) -> str:
    """A job output folder's summary and its first ``limit`` records, as plain text.

    This is what ``vyre-async show RUN`` prints: the folder, the job's name and
    fingerprint, items committed of the job's total, failed items, whether the job
    is complete, the chunk format, how the last run ended and the backend and device
    it ran on (from ``summary.json``, when a run wrote one), then a table of the
    first ``limit`` committed records in commit order: one aligned column per record
    field, numbers right-aligned, ``-`` where a field is null, text cut to
    :data:`CELL_WIDTH` characters, and columns that are null in every row shown left
    out. Only the chunks those records are in are read (each checked against its
    checksum). Blocks on file I/O.

    Args:
        folder: A job's output folder (JSON-lines or Parquet; complete or not).
        limit: Records to list (0: the summary only).

    Returns:
        The text, lines separated by ``"\\n"``, ending in one.

    Raises:
        ConfigurationError: The folder cannot be read or holds no job manifest, a
            chunk listed is missing or damaged, or it is Parquet and pyarrow is
            missing.
        ValueError: ``limit`` is negative.
    """
    if limit < 0:
        raise ValueError(f"limit must be 0 or more, not {limit}")
    path = Path(folder)
    root, manifest = open_output(path)
    with contextlib.closing(root):
        try:
            summary: bytes | None = root.read(SUMMARY_FILE)
        except OSError:  # none yet (a run going, or killed), or not a regular file
            summary = None
    lines = _summary_lines(path, manifest, summary)
    if limit == 0:
        return "\n".join(lines) + "\n"
    shown: list[ItemRecord] = []
    chunks = committed_chunk_records(path)
    with contextlib.closing(chunks):  # the rest of the chunks are never read
        for records in chunks:
            shown.extend(records[: limit - len(shown)])
            if len(shown) == limit:
                break
    if not shown:
        lines.append("no records committed yet")
    else:
        more = "" if len(shown) == manifest.committed else " (--limit N shows more)"
        lines.append(f"records 1-{len(shown)} of {manifest.committed:,}, in commit order{more}:")
        lines.extend(_table(shown, manifest.layout.fields))
    return "\n".join(lines) + "\n"


def _summary_lines(folder: Path, manifest: Manifest, summary: bytes | None) -> list[str]:
    arrays = sum(len(chunk.files) for chunk in manifest.chunks)
    last = _last_run(summary)
    if last is None:
        ran = f"no readable {SUMMARY_FILE} (a run going, or one stopped early)"
    else:
        took = "" if last.seconds is None else f", {last.seconds:.2f} s"
        ran = (
            f"{_printable(last.status)} on {_printable(last.backend)} "
            f"({_printable(last.device)}), started {_printable(last.started_at)}{took}, "
            f"vyre-async {_printable(last.version)}"
        )
    fields = {
        "run": str(folder),
        "job": repr(_printable(manifest.job)),
        "fingerprint": manifest.fingerprint,
        "items": f"{manifest.committed:,} of {manifest.total_items:,} committed, "
        f"{manifest.failed:,} failed",
        "complete": "yes" if manifest.complete else "no",
        "format": f"{manifest.chunk_format}, {len(manifest.chunks):,} chunk(s), "
        f"{arrays:,} array file(s)",
        "last run": ran,
    }
    return [f"{label + ':':<13}{_printable(value)}" for label, value in fields.items()]


def _last_run(summary: bytes | None) -> _LastRun | None:
    if summary is None:
        return None
    try:
        return msgspec.json.decode(summary, type=_LastRun)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _table(records: Sequence[ItemRecord], fields: Sequence[str]) -> list[str]:
    rows = [msgspec.structs.astuple(record) for record in records]
    columns = [
        (i, name)
        for i, name in enumerate(fields)
        if name in _ALWAYS or any(row[i] is not None for row in rows)
    ]
    cells = [[_cell(row[i]) for i, _ in columns] for row in rows]
    header = [name for _, name in columns]
    widths = [max(len(text) for text in column) for column in zip(header, *cells, strict=True)]

    def line(texts: Sequence[str]) -> str:
        parts = [
            text.ljust(width) if name in _TEXTS else text.rjust(width)
            for text, width, (_, name) in zip(texts, widths, columns, strict=True)
        ]
        return "  ".join(parts).rstrip()

    return [line(header), line(["-" * width for width in widths]), *map(line, cells)]


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    text = _printable(str(value))
    return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 3] + "..."


def _printable(text: str) -> str:
    """``text`` on one line, control characters shown as ``?`` (it goes to a terminal)."""
    return "".join(c if c.isprintable() else "?" for c in " ".join(text.split()))
