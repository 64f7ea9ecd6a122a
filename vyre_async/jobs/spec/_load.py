"""Reading a job file: TOML, JSON or YAML by extension, into a :class:`JobSpec`
(:func:`load_job`); :func:`load_config` reads other config files the same way.

Every way a file can be wrong (unreadable, not a regular file, too large, nested
too deep, not TOML/JSON/YAML, a repeated key, a wrong type, an unknown field, a
number out of bounds or too long to read, a broken rule) becomes a
:class:`ConfigurationError` naming the file and the path inside it; a file that
decodes but is not a valid job gets every error it has, one per line. Size, nesting
and TOML keys are bounded before any parser runs (see :mod:`._decode_bounds`), so no
file makes the loader hang, exhaust memory or overflow a stack.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import numpy as np

from ..._files import FileTooLargeError, NotRegularFileError, read_regular
from ...errors import ConfigurationError
from ._decode_bounds import (
    TOML_SKIPPED,
    check_toml_keys,
    long_integer,
    long_toml_integer,
    long_yaml_integer,
)
from ._document_errors import document_errors
from ._sources_file import resolve_sources
from ._spec import JobSpec

S = TypeVar("S", bound=msgspec.Struct)

SUFFIXES = {".toml": "toml", ".json": "json", ".yaml": "yaml", ".yml": "yaml"}
#: Largest job file read: room for about a million listed sources.
MAX_JOB_FILE_BYTES = 16 << 20
#: Deepest nesting of lists and tables a job file may have (a job needs 4).
MAX_NESTING = 32
#: Characters of a parser's message kept in ours.
_MESSAGE_CHARS = 300
_FIX = "correct the field named above."

# What cannot hold a bracket that nests: strings (and TOML comments).
_JSON_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')


def load_job(path: str | Path) -> JobSpec:
    """Decode and check a job file.

    Args:
        path: A ``.toml``, ``.json``, ``.yaml`` or ``.yml`` file (a regular file of
            at most :data:`MAX_JOB_FILE_BYTES`).

    Returns:
        The frozen spec, with sources named by a file path read into lists.

    Raises:
        ConfigurationError: The file cannot be read or does not describe a valid job.
    """
    spec = load_config(path, JobSpec)
    return resolve_sources(spec, Path(path))  # sources listed in a .npy or text file


def load_config(path: str | Path, root: type[S], *, noun: str = "job file") -> S:
    """Decode and check a config file as a ``root`` struct, as :func:`load_job` does.

    Other config files (``vyre-async serve``'s) are read with the same bounds and get
    the same errors: the file and the path inside it, every error one per line.

    Args:
        path: A ``.toml``, ``.json``, ``.yaml`` or ``.yml`` file (a regular file of
            at most :data:`MAX_JOB_FILE_BYTES`).
        root: The frozen msgspec struct the whole file decodes into.
        noun: What messages call the file.

    Returns:
        The decoded struct.

    Raises:
        ConfigurationError: The file cannot be read or does not decode into ``root``.
    """
    file = Path(path)
    kind = SUFFIXES.get(file.suffix.lower())
    if kind is None:
        raise ConfigurationError(
            f"{file}: unknown {noun} type {file.suffix or '(no extension)'!r}",
            fix="name the file .toml, .json, .yaml or .yml.",
        )
    try:
        data = read_regular(file, MAX_JOB_FILE_BYTES)
    except FileTooLargeError:
        raise ConfigurationError(
            f"{file}: a {noun} may hold at most {MAX_JOB_FILE_BYTES:,} bytes; this one holds more",
            fix="draw many sources with sources = { random = N, seed = S } instead of "
            "listing them, or split the job."
            if root is JobSpec
            else f"a {noun} holds a few sections; check that this is the right file.",
        ) from None
    except (NotRegularFileError, OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigurationError(
            f"{file}: cannot be read ({reason})",
            fix="check the path and that it names a readable regular file.",
        ) from None
    try:
        if kind == "toml":
            text = TOML_SKIPPED.sub(b"", data)
            _check_nesting(file, text)
            check_toml_keys(file, text, MAX_NESTING)
        elif kind == "json":
            _check_nesting(file, _JSON_STRINGS.sub(b"", data))
            _check_json_keys(file, data)
        else:
            _check_yaml(file, data)
        try:
            decoded: S = _decode(file, kind, data, root)
        except msgspec.ValidationError as exc:
            # msgspec stops at the first error; the walk finds them all, where the file
            # decodes as plain values (an integer too long for Python does not).
            try:
                document = _decode(file, kind, data, Any)
            except msgspec.DecodeError:
                raise _not_a_job(file, [str(exc)]) from None
            raise _not_a_job(file, document_errors(document, root, str(exc))) from None
    except _syntax_errors() as exc:
        raise ConfigurationError(
            f"{file}: not valid {kind.upper()}: {_short(str(exc))}",
            fix=f"fix the {kind.upper()} syntax at the place named.",
        ) from None
    return decoded


def _decode_toml(file: Path, data: bytes) -> Any:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError:
        raise
    except ValueError as exc:  # an integer longer than Python reads
        error = long_toml_integer(file, data)
        if error is None:
            raise tomllib.TOMLDecodeError(str(exc)) from None
        raise error from None


def _decode(file: Path, kind: str, data: bytes, tp: Any) -> Any:
    """``data`` decoded as ``tp`` (``Any``: plain dicts, lists and scalars)."""
    if kind == "toml":
        return msgspec.convert(_decode_toml(file, data), tp)
    if kind == "json":
        return msgspec.json.decode(data, type=tp)
    return msgspec.yaml.decode(data, type=tp)


def _not_a_job(file: Path, errors: list[str]) -> ConfigurationError:
    """One error per line, each naming the file and the path inside it."""
    lines = "\n".join(f"{file}: {_short(error)}" for error in errors)
    fix = _FIX if len(errors) == 1 else "correct each field named above."
    return ConfigurationError(lines, fix=fix)


def _check_nesting(file: Path, brackets: bytes) -> None:
    """Refuse lists/tables nested deeper than :data:`MAX_NESTING` (strings removed)."""
    raw = np.frombuffer(brackets, dtype=np.uint8)
    step = np.isin(raw, (ord("["), ord("{"))).astype(np.int32)
    step -= np.isin(raw, (ord("]"), ord("}")))
    if raw.size and int(np.cumsum(step).max()) > MAX_NESTING:
        raise _too_deep(file)


def _too_deep(file: Path) -> ConfigurationError:
    return ConfigurationError(
        f"{file}: lists and tables are nested more than {MAX_NESTING} deep",
        fix="a job file nests a few levels (a workload's sources list at most); "
        "remove the extra nesting.",
    )


class _Repeated(dict[str, Any]):
    """A JSON object in which ``key`` appeared more than once."""

    key = ""


def _check_json_keys(file: Path, data: bytes) -> None:
    """Refuse an object that repeats a key (JSON allows it; a job file does not)."""

    repeats = 0

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeats
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                repeats += 1
                repeated = _Repeated(items)
                repeated.key = key
                return repeated
            seen[key] = value
        return seen

    try:
        tree = json.loads(data, object_pairs_hook=pairs)
    except ValueError:  # not JSON at all: msgspec names the place
        return
    if not repeats:  # the common case: no walk over (maybe millions of) listed sources
        return
    where = _find_repeated(tree, "$")
    if where is not None:
        raise _repeated_key(file, *where)


def _find_repeated(node: Any, path: str) -> tuple[str, str] | None:
    if isinstance(node, _Repeated):
        return path, node.key
    children: Any = ()
    if isinstance(node, dict):
        children = ((f"{path}.{k}", v) for k, v in node.items())
    elif isinstance(node, list):
        children = ((f"{path}[{i}]", v) for i, v in enumerate(node))
    for child_path, child in children:
        found = _find_repeated(child, child_path)
        if found is not None:
            return found
    return None


def _repeated_key(file: Path, path: str, key: str) -> ConfigurationError:
    return ConfigurationError(
        f"{file}: {path}: the key {_short(key, 60)!r} appears more than once",
        fix="keep one of them; a job file names each field once.",
    )


class _Collection:
    """An open YAML mapping or sequence while its events are walked."""

    __slots__ = ("as_key", "expect_key", "index", "key", "keys", "path")

    def __init__(self, path: str, mapping: bool, as_key: bool) -> None:
        self.path = path
        self.keys: set[str] | None = set() if mapping else None
        self.index = 0
        self.key = ""
        self.expect_key = mapping
        self.as_key = as_key

    def item_path(self) -> str:
        return f"{self.path}.{self.key}" if self.keys is not None else f"{self.path}[{self.index}]"

    def item_done(self) -> None:
        if self.keys is None:
            self.index += 1
        else:
            self.expect_key = True


def _syntax_errors() -> tuple[type[BaseException], ...]:
    """What a file that is no valid TOML, JSON or YAML raises; PyYAML's error only once
    a YAML file loaded PyYAML (nothing raised it before)."""
    yaml = sys.modules.get("yaml")
    found: tuple[type[BaseException], ...] = (
        msgspec.DecodeError,
        tomllib.TOMLDecodeError,
        UnicodeDecodeError,
        RecursionError,
    )
    return found if yaml is None else (*found, yaml.YAMLError)


def _check_yaml(file: Path, data: bytes) -> None:
    """Walk the YAML event stream (no objects built): bound nesting, refuse repeated keys."""
    import yaml  # only a YAML job file needs it: `import vyre_async` stays lean

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    stack: list[_Collection] = []
    for event in yaml.parse(data, Loader=loader):
        top = stack[-1] if stack else None
        if isinstance(event, yaml.ScalarEvent):
            digits = long_yaml_integer(event.value, event.implicit[0], event.tag)
            if digits:
                as_key = top is not None and top.keys is not None and top.expect_key
                where = "$" if top is None else f"{top.path}.?" if as_key else top.item_path()
                raise long_integer(file, where, digits)
        if isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
            if top is not None and top.keys is not None and top.expect_key:
                key = event.value if isinstance(event, yaml.ScalarEvent) else "*"
                if key in top.keys:
                    raise _repeated_key(file, top.path, key)
                top.keys.add(key)
                top.key, top.expect_key = key, False
            elif top is not None:
                top.item_done()
        elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            if len(stack) >= MAX_NESTING:
                raise _too_deep(file)
            as_key = top is not None and top.keys is not None and top.expect_key
            path = "$" if top is None else f"{top.path}.?" if as_key else top.item_path()
            stack.append(_Collection(path, isinstance(event, yaml.MappingStartEvent), as_key))
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            done = stack.pop()
            if stack and done.as_key:
                stack[-1].key, stack[-1].expect_key = "?", False
            elif stack:
                stack[-1].item_done()


def _short(text: str, limit: int = _MESSAGE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
