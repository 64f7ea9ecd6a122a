"""Bounds on a job file that its parser does not keep, checked before it decodes.

``tomllib`` spends time and memory that grow with the square of a key's parts: a
dotted key ``name.a.a.…`` of 20,000 parts takes seconds and gigabytes, and deep table
headers ``[a.a.…]`` do the same. So, as nesting is, TOML keys are bounded first, on
the file's text with its strings and comments removed: no key or table header may
have more parts than nesting may be deep, all of them together at most
:data:`MAX_KEY_PARTS`, and the file may open at most :data:`MAX_COLLECTIONS` lists
and tables.

Python refuses to read an integer of more than ``sys.get_int_max_str_digits()``
digits (4,300 by default) with a ``ValueError`` that names no place: the YAML event
walk refuses such an integer at its path (:func:`long_yaml_integer`), and for TOML
:func:`long_toml_integer` finds the path once ``tomllib`` has refused it.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import ConfigurationError

#: Most parts the keys and table headers of a TOML job file may have in all (each
#: part of a dotted key or header counts; a job of a few workloads has about 30).
MAX_KEY_PARTS = 100_000
#: Most lists, inline tables and table headers a TOML job file may open (``[[x]]``
#: counts twice): a job file has a few, and ``tomllib`` takes seconds a million.
MAX_COLLECTIONS = 100_000
#: Characters of a key an error quotes.
_QUOTE_CHARS = 40
_OPEN, _CLOSE = (ord("["), ord("{")), (ord("]"), ord("}"))
_KEY_MARKS = np.frombuffer(b"=\n{,", dtype=np.uint8)
_BLANKS = np.frombuffer(b" \t\r", dtype=np.uint8)
#: What holds no key and no bracket that nests: strings and comments.
TOML_SKIPPED = re.compile(
    rb'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'
)


def check_toml_keys(file: Path, text: bytes, max_parts: int) -> None:
    """Refuse a key or table header of more than ``max_parts`` parts, keys of more
    than :data:`MAX_KEY_PARTS` parts in all, or more than :data:`MAX_COLLECTIONS`
    lists and tables (in time linear in the file's size).

    Args:
        file: The job file, for messages.
        text: Its bytes with strings and comments removed (:data:`TOML_SKIPPED`).
        max_parts: Most parts of one key or table header.

    Raises:
        ConfigurationError: Naming the key's parts (and a short excerpt of it).
    """
    if text.count(b"=") > MAX_KEY_PARTS:  # one per key = value pair
        raise _too_many(file, text.count(b"="))
    collections = text.count(b"[") + text.count(b"{")
    if collections > MAX_COLLECTIONS:
        raise ConfigurationError(
            f"{file}: {collections:,} brackets opening lists, tables and table headers, "
            f"more than {MAX_COLLECTIONS:,}",
            fix="a job file has a few lists and tables; list many sources in a sources "
            "file, as a flat list of integers.",
        )
    raw = np.frombuffer(text, dtype=np.uint8)
    total = 0
    for start, end in _keys(raw):
        total += _parts(file, text, start, end, "key", max_parts)
    for start in _table_headers(raw):
        end = text.find(b"\n", start)
        total += _parts(file, text, start, len(text) if end < 0 else end, "table header", max_parts)
    if total > MAX_KEY_PARTS:
        raise _too_many(file, total)


def _keys(raw: npt.NDArray[np.uint8]) -> list[tuple[int, int]]:
    """``(start, end)`` of each key of a key = value pair: from the line end, ``{`` or
    ``,`` before its ``=`` to the ``=``."""
    marks = np.flatnonzero(np.isin(raw, _KEY_MARKS))
    equals = np.flatnonzero(raw[marks] == ord("="))
    starts = np.where(equals > 0, marks[equals - 1] + 1, 0)
    return list(zip(starts.tolist(), marks[equals].tolist(), strict=True))


def _table_headers(raw: npt.NDArray[np.uint8]) -> list[int]:
    """Where the table headers start: a ``[`` outside any list, first on its line."""
    brackets = np.flatnonzero(np.isin(raw, _OPEN + _CLOSE))
    opening = np.isin(raw[brackets], _OPEN)
    depth_before = np.cumsum(np.where(opening, 1, -1)) - opening
    outside = brackets[opening & (depth_before == 0) & (raw[brackets] == ord("["))]
    if not outside.size:
        return []
    written = np.flatnonzero(~np.isin(raw, _BLANKS))  # the character before each '['
    before = np.searchsorted(written, outside) - 1
    first = (before < 0) | (raw[written[np.maximum(before, 0)]] == ord("\n"))
    starts: list[int] = outside[first].tolist()
    return starts


def _parts(file: Path, text: bytes, start: int, end: int, what: str, max_parts: int) -> int:
    parts = text.count(b".", start, end) + 1
    if parts > max_parts:
        shown = text[start : start + _QUOTE_CHARS * 4].strip().decode("utf-8", "replace")
        if len(shown) > _QUOTE_CHARS:
            shown = shown[: _QUOTE_CHARS - 3] + "..."
        raise ConfigurationError(
            f"{file}: a {what} with {parts:,} parts ({shown!r}), more than {max_parts}",
            fix="a job file's keys have one part or a few ([graph], kind = ...); remove "
            "the extra ones.",
        )
    return parts


def _too_many(file: Path, parts: int) -> ConfigurationError:
    return ConfigurationError(
        f"{file}: at least {parts:,} key parts in all (each part of each key and table "
        f"header), more than {MAX_KEY_PARTS:,}",
        fix="a job file names a few dozen fields; list many sources in a sources file "
        "or draw them with sources = { random = N, seed = S }.",
    )


def long_toml_integer(file: Path, data: bytes) -> ConfigurationError | None:
    """The error for an integer of the TOML file ``data`` too long for Python to read,
    naming its place (``$.graph.scale``); ``None`` when the file holds none.

    Each such integer is swapped for a marker string, the file decoded again and the
    first marker looked for, so the place is exact whatever else the file holds.
    """
    limit = sys.get_int_max_str_digits()
    if limit == 0:
        return None
    # Strings and comments (kept as they are), then integers of more than ``limit`` digits.
    numbers = re.compile(
        b"(" + TOML_SKIPPED.pattern + rb")|(?<![\w.:+-])[+-]?[0-9][0-9_]{%d,}(?![\w.:-])" % limit
    )
    digits: list[int] = []

    def mark(match: re.Match[bytes]) -> bytes:
        number = match[0].lstrip(b"+-").replace(b"_", b"")
        if match[1] is not None or len(number) <= limit:
            return match[0]
        digits.append(len(number))
        return b'"\\u0000vyre-long-integer-%d"' % (len(digits) - 1)

    marked = numbers.sub(mark, data)
    if not digits:
        return None
    try:
        place = _find_marker(tomllib.loads(marked.decode("utf-8")), "$")
    except (ValueError, UnicodeDecodeError, RecursionError):  # TOMLDecodeError is one
        place = None
    path, index = place if place is not None else ("$", 0)
    return long_integer(file, path, digits[index])


def long_yaml_integer(value: str, plain: bool, tag: str | None) -> int:
    """The digits of a YAML scalar that would decode to an integer too long for Python to
    read, else 0 (octal, hexadecimal and binary integers have no such limit).

    Args:
        value: The scalar's text.
        plain: Whether it is a plain (unquoted) scalar.
        tag: Its explicit tag, if any.
    """
    limit = sys.get_int_max_str_digits()
    if not limit or not (plain or tag == "tag:yaml.org,2002:int"):
        return 0
    number = value.lstrip("+-").replace("_", "")
    if len(number) <= limit or not number.isdigit() or number.startswith("0"):
        return 0
    return len(number)


def long_integer(file: Path, path: str, digits: int) -> ConfigurationError:
    """The error for an integer of ``digits`` digits at ``path`` in ``file``."""
    return ConfigurationError(
        f"{file}: {path}: an integer of {digits:,} digits, more than the "
        f"{sys.get_int_max_str_digits():,} Python reads",
        fix="no field of a job file takes a number that large; write one within the "
        "field's bounds.",
    )


def _find_marker(node: Any, path: str) -> tuple[str, int] | None:
    """The path of the first marker in ``node`` (a decoded TOML tree) and its number."""
    if isinstance(node, str) and node.startswith("\x00vyre-long-integer-"):
        return path, int(node.rpartition("-")[2])
    children: Any = ()
    if isinstance(node, dict):
        children = ((f"{path}.{k}", v) for k, v in node.items())
    elif isinstance(node, list):
        children = ((f"{path}[{i}]", v) for i, v in enumerate(node))
    for child_path, child in children:
        found = _find_marker(child, child_path)
        if found is not None:
            return found
    return None
