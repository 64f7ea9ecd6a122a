"""``vyre-async serve``'s config file: the graphs to load, their batching, limits, the
address and the token.

A serve config (TOML, JSON or YAML) decodes into a frozen :class:`ServeConfig` with
unknown fields refused and bounds on every number, read as a job file is
(:func:`vyre_async.jobs.load_config`): a bad file gives one
:class:`~vyre_async.errors.ConfigurationError` naming the file and every path inside
it at fault (``$.graphs[0].batching.queue_size``), each with a fix. A graph is named
by the same ``[graph]`` section a job file has (generated R-MAT or a file, relative
to the config file's folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import msgspec

from ..jobs import GraphSection, load_config
from ..sessions import BatchingConfig

#: A graph's name: it is a path segment of its endpoints, so a few safe characters.
GraphName = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="a name of 1 to 64 characters, each a letter, a digit, '_', '.' or "
        "'-', starting with a letter or a digit",
    ),
]
#: An environment variable's name.
EnvName = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="an environment variable's name: letters, digits and '_', not "
        "starting with a digit",
    ),
]
NonNegative = Annotated[int, msgspec.Meta(ge=0)]


def _broken_rules(problems: list[str]) -> None:
    """Raise the rules a section breaks, one per line (msgspec reports the message)."""
    if problems:
        raise ValueError("\n".join(problems))


class ServerSection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[server]``: where the server listens, its event loop, and its devices.

    ``host`` is ``127.0.0.1`` (this machine only) unless the file names another
    address (``0.0.0.0`` or ``::`` for every interface: set a token first). ``port``
    0 picks a free port (the command prints it). ``worker`` is the event loop
    Hypercorn runs on: ``asyncio``, ``uvloop`` (needs the uvloop package) or
    ``trio``. ``backend`` and ``devices`` are as a job's ``[job]`` section's: every
    graph is replicated on each device. On SIGTERM or SIGINT the server stops
    accepting, and in-flight and queued queries get ``drain_timeout_s`` seconds to
    finish before the sessions close.
    """

    host: Annotated[str, msgspec.Meta(min_length=1, max_length=255)] = "127.0.0.1"
    port: Annotated[int, msgspec.Meta(ge=0, le=65535)] = 8000
    worker: Literal["asyncio", "uvloop", "trio"] = "asyncio"
    backend: Literal["auto", "cuda", "cpu"] = "auto"
    devices: (
        Literal["all"]
        | Annotated[list[NonNegative], msgspec.Meta(min_length=1, max_length=1024)]
        | NonNegative
    ) = 0
    drain_timeout_s: Annotated[float, msgspec.Meta(gt=0.0, le=3600.0)] = 30.0


class AuthSection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[auth]``: the bearer token every endpoint but liveness asks for.

    The token comes from the environment variable ``token_env`` names, or from the
    file ``token_file`` names (relative to the config file; its whitespace around the
    token is dropped), never from the config file or the command line itself. Neither
    set: no token is asked for (keep the server on loopback then).
    """

    token_env: EnvName | None = None
    token_file: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)] | None = None

    def __post_init__(self) -> None:
        """Check the rules across the fields (each broken one on a line of the error)."""
        problems: list[str] = []
        if self.token_env is not None and self.token_file is not None:
            problems.append(".token_file: name the token's variable or its file, not both")
        if self.token_file is not None and "\x00" in self.token_file:
            problems.append(".token_file: a path may not hold a NUL byte")
        _broken_rules(problems)


class LimitsSection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[limits]``: what one request may ask, and what a refusal asks of the client.

    A request body holds at most ``max_body_bytes`` (413 beyond) and a batch request
    at most ``max_queries_per_request`` sources (413 beyond). A query without a
    ``timeout`` of its own waits in its graph's queue at most ``default_timeout_s``
    (no limit when unset). A 429 or 503 answer says ``Retry-After: retry_after_s``.
    """

    max_body_bytes: Annotated[int, msgspec.Meta(ge=64, le=1 << 30)] = 1 << 20
    max_queries_per_request: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 1024
    default_timeout_s: Annotated[float, msgspec.Meta(gt=0.0, le=86_400.0)] | None = None
    retry_after_s: Annotated[int, msgspec.Meta(ge=1, le=3600)] = 1


class ServeBatching(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``batching`` of one graph: how its concurrent queries share runs.

    With ``enabled`` (the default) queries of a kind that coalesces (the traversals,
    personalized PageRank, shortest paths) queue in the graph's batcher, at most
    ``queue_size`` of them: a full queue answers 429 at once, never an unbounded
    backlog. ``max_batch``, ``max_delay_ms`` and ``in_flight`` are the session's
    :class:`~vyre_async.BatchingConfig`'s. With ``enabled = false`` every query runs
    alone (its own traversal), at most ``queue_size`` of them at once on the graph
    (429 beyond).
    """

    enabled: bool = True
    max_batch: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 1024
    max_delay_ms: Annotated[float, msgspec.Meta(ge=0.0, le=60_000.0)] = 0.5
    queue_size: Annotated[int, msgspec.Meta(ge=1, le=10_000_000)] = 4096
    in_flight: Annotated[int, msgspec.Meta(ge=1, le=8)] = 1

    def session_config(self) -> BatchingConfig | None:
        """The session's batching (``None``: each query runs alone)."""
        if not self.enabled:
            return None
        return BatchingConfig(
            max_batch=self.max_batch,
            max_delay=self.max_delay_ms / 1000,
            queue_size=self.queue_size,
            reject_when_full=True,
            in_flight=self.in_flight,
        )


class ServedGraphSection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[[graphs]]``: one graph the server keeps resident, by name.

    ``name`` is its endpoints' path segment (``/v1/graphs/<name>/...``); ``graph``
    is a job file's ``[graph]`` section (``kind = "rmat"`` with ``scale``, or a file
    kind with ``path`` relative to the config file); ``batching`` as
    :class:`ServeBatching` says.
    """

    name: GraphName
    graph: GraphSection
    batching: ServeBatching = ServeBatching()


class ServeLogging(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[logging]``: console or JSON lines on standard error, and the level."""

    format: Literal["console", "json"] = "console"
    level: Literal["debug", "info", "warning", "error"] = "info"


class ServeConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A whole serve config: its graphs, and the server's sections."""

    graphs: Annotated[list[ServedGraphSection], msgspec.Meta(min_length=1, max_length=256)]
    server: ServerSection = ServerSection()
    auth: AuthSection = AuthSection()
    limits: LimitsSection = LimitsSection()
    logging: ServeLogging = ServeLogging()

    def __post_init__(self) -> None:
        """Check the rules across the fields (each broken one on a line of the error)."""
        seen: set[str] = set()
        problems: list[str] = []
        for index, entry in enumerate(self.graphs):
            if entry.name in seen:
                problems.append(
                    f".graphs[{index}].name: the name {entry.name!r} is taken by an earlier graph"
                )
            seen.add(entry.name)
        _broken_rules(problems)


def load_serve_config(path: str | Path) -> ServeConfig:
    """Decode and check a serve config file.

    Args:
        path: A ``.toml``, ``.json``, ``.yaml`` or ``.yml`` file.

    Returns:
        The frozen config (file paths in it stay relative to the file's folder).

    Raises:
        ConfigurationError: The file cannot be read or is not a valid serve config.
    """
    return load_config(path, ServeConfig, noun="serve config")
