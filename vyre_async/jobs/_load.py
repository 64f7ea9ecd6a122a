"""Reading a job file: TOML, JSON or YAML by extension, into a :class:`JobSpec`.

Every way a file can be wrong (unreadable, not TOML/JSON/YAML, a wrong type, an
unknown field, a number out of bounds, a missing rule) becomes one
:class:`ConfigurationError` naming the file and the path inside it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import msgspec

from ..errors import ConfigurationError
from ._choices import with_choices
from ._graph_source import resolve_sources
from ._spec import JobSpec

SUFFIXES = {".toml": "toml", ".json": "json", ".yaml": "yaml", ".yml": "yaml"}
_FIX = "correct the field named above."


def load_job(path: str | Path) -> JobSpec:
    """Decode and check a job file.

    Args:
        path: A ``.toml``, ``.json``, ``.yaml`` or ``.yml`` file.

    Returns:
        The frozen spec, with sources named by a file path read into lists.

    Raises:
        ConfigurationError: The file cannot be read or does not describe a valid job.
    """
    file = Path(path)
    kind = SUFFIXES.get(file.suffix.lower())
    if kind is None:
        raise ConfigurationError(
            f"{file}: unknown job file type {file.suffix or '(no extension)'!r}",
            fix="name the file .toml, .json, .yaml or .yml.",
        )
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ConfigurationError(
            f"{file}: cannot be read ({exc.strerror or exc})",
            fix="check the path and that the file is readable.",
        ) from exc
    try:
        if kind == "toml":
            spec = msgspec.convert(tomllib.loads(data.decode("utf-8")), JobSpec)
        elif kind == "json":
            spec = msgspec.json.decode(data, type=JobSpec)
        else:
            spec = msgspec.yaml.decode(data, type=JobSpec)
    except msgspec.ValidationError as exc:
        message = with_choices(_path_first(str(exc)), JobSpec)
        raise ConfigurationError(f"{file}: {message}", fix=_FIX) from None
    except (msgspec.DecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(
            f"{file}: not valid {kind.upper()}: {exc}",
            fix=f"fix the {kind.upper()} syntax at the place named.",
        ) from None
    return resolve_sources(spec, file)  # sources listed in a .npy or text file


def _path_first(message: str) -> str:
    """``"Expected int - at `$.a`"`` -> ``"$.a: Expected int"``; rules name their path."""
    text, sep, where = message.rpartition(" - at `")
    if sep and where.endswith("`"):
        return f"{where[:-1]}: {text}"
    if message.startswith("$"):  # a cross-field rule names its own path
        return message
    return f"$: {message}"  # msgspec names no path for the top level
