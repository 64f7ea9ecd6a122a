"""Job specs: the frozen msgspec structs a job file (TOML, JSON or YAML) decodes into.

Unknown fields are refused everywhere and numbers carry bounds, so a typo or an
impossible value fails at load time with the path inside the file
(``$.workload[0].sources``), never half-way through a run. A constrained string says
its rule in words in its ``msgspec.Meta`` ``description`` (errors quote it, not the
regex). A rule across a section's fields is checked in that section's
``__post_init__``, which reports every broken rule, one per line, each starting with
the field it is about (``.path: ...``; the loader puts the section's path in front).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, Union

import msgspec

from ...algorithms import Params, QueryKind, lookup, query_kinds
from ...sessions import BatchingConfig

Positive = Annotated[int, msgspec.Meta(ge=1)]
NonNegative = Annotated[int, msgspec.Meta(ge=0)]
#: A vertex id: vertex ids are int32 and a graph has at most 2**31 - 1 vertices.
VertexId = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 2)]
#: A file path: not empty, no NUL byte (no file system takes one).
#: (Its NUL rule is checked by the sections holding one, not by a Meta pattern: msgspec
#: 0.21-0.22 crash converting a string to a pattern-constrained type after converting a
#: value to a union holding that type.)
FilePath = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=4096,
        description="a path of 1 to 4096 characters without a NUL byte",
    ),
]


def _nul_in_path(name: str, value: object) -> list[str]:
    """The rule a path field breaks with a NUL byte (no file system takes one)."""
    if isinstance(value, str) and "\x00" in value:
        return [f".{name}: a path may not hold a NUL byte"]
    return []


#: A job's name: it names files and log lines, so a few safe characters only.
JobName = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=200,
        pattern=r"^[\w.\-]+$",
        description="a name of 1 to 200 characters, each a letter, a digit, '_', '.' or '-'",
    ),
]


def _broken_rules(problems: list[str]) -> None:
    """Raise the rules a section breaks, one per line (msgspec reports the message)."""
    if problems:
        raise ValueError("\n".join(problems))


class JobSection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[job]``: the job's name, the backend it runs on and its devices.

    ``devices`` is a device ordinal, ``"all"`` (every GPU of the host, the graph
    replicated on each, batches spread over them) or a list of ordinals.
    ``executor = "ray"`` runs blocks on Ray actors, one per GPU of the cluster at
    ``ray_address`` (else ``RAY_ADDRESS``, else a local Ray instance), or
    ``ray_workers`` of them. ``ray_keep_actors_s > 0`` keeps them alive that many
    idle seconds after the job, with the graph on their devices, for a later job of
    the same graph and backend to take at once.
    """

    name: JobName
    backend: Literal["auto", "cuda", "cpu"] = "auto"
    devices: (
        Literal["all"]
        | Annotated[list[NonNegative], msgspec.Meta(min_length=1, max_length=1024)]
        | NonNegative
    ) = 0
    executor: Literal["local", "ray"] = "local"
    ray_address: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    ray_workers: Annotated[int, msgspec.Meta(ge=1, le=4096)] | None = None
    ray_keep_actors_s: Annotated[float, msgspec.Meta(ge=0, le=86400)] = 0.0


class GraphSection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[graph]``: a generated R-MAT graph or a graph file.

    ``path`` is relative to the job file; it is required for the file kinds and
    refused for ``rmat``, whose ``scale`` is required instead. File kinds: ``edges``
    (a text edge list), ``mtx`` (Matrix Market), ``npz`` (``graphs.save_npz``),
    ``scipy_npz`` (``scipy.sparse.save_npz`` of the adjacency matrix; needs SciPy) and
    ``table`` (a Parquet, Feather/Arrow IPC or CSV edge table, by suffix; needs
    pyarrow) whose integer id columns ``src_column`` and ``dst_column`` (and optional
    ``weight_column``) are read; the three column fields are for ``table`` only.
    ``symmetric`` adds every edge reversed. ``weights = "uniform"`` gives an R-MAT
    graph seeded float32 weights in (0, 1] (see ``graphs.with_uniform_weights``); file
    graphs carry the weights their files hold.
    """

    kind: Literal["rmat", "edges", "mtx", "npz", "scipy_npz", "table"]
    scale: Annotated[int, msgspec.Meta(ge=1, le=30)] | None = None
    edge_factor: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 16
    seed: NonNegative = 0
    path: FilePath | None = None
    symmetric: bool = False
    src_column: Annotated[str, msgspec.Meta(min_length=1)] = "src"
    dst_column: Annotated[str, msgspec.Meta(min_length=1)] = "dst"
    weight_column: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    weights: Literal["uniform"] | None = None

    def __post_init__(self) -> None:
        """Check the rules across the fields (each broken one on a line of the error)."""
        problems: list[str] = []
        if self.kind == "rmat" and (self.scale is None or self.path is not None):
            problems.append("kind 'rmat' needs scale and takes no path")
        if self.kind != "rmat" and self.path is None:
            problems.append(f".path: kind {self.kind!r} needs a path to the file")
        if self.kind != "table":
            for name, default in (("src_column", "src"), ("dst_column", "dst")):
                if getattr(self, name) != default:
                    problems.append(f".{name}: only kind 'table' reads columns")
            if self.weight_column is not None:
                problems.append(".weight_column: only kind 'table' reads columns")
        if self.kind != "rmat" and self.weights is not None:
            problems.append(".weights: only kind 'rmat' draws weights; a file's graph has its own")
        problems += _nul_in_path("path", self.path)
        _broken_rules(problems)


class RandomSources(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``sources = { random = N, seed = S, min_out_degree = D }``: N sources, seeded.

    Drawn uniformly among the vertices with at least ``D`` out-edges (``D = 0``, the
    default: all vertices). ``D = 1`` leaves out the vertices with no out-edge, whose
    traversals reach only themselves (about a quarter of an R-MAT graph's vertices).
    """

    random: Annotated[int, msgspec.Meta(ge=1, le=100_000_000)]
    seed: NonNegative = 0
    min_out_degree: NonNegative = 0


#: A workload's sources: listed vertex ids, random ones, or a file of them.
Sources = list[VertexId] | RandomSources | FilePath


class WorkloadSection(Protocol):
    """``[[workload]]``: one kind of query over a set of sources (or the whole graph).

    ``kind`` names a registered query kind (:func:`vyre_async.algorithms.kind_names`);
    the other fields are the kind's parameters (its ``params`` struct: ``readback``
    for ``bfs``, ``k`` for ``khop``, ``damping`` for ``pagerank``...) and, for a kind
    whose queries have a source, ``sources``: a list of vertex ids, ``{ random = N,
    seed = S }``, or the path (relative to the job file) of a ``.npy`` file holding a
    1-D integer array or of a text file of integers separated by whitespace, ``#``
    starting a comment; ``load_job`` reads such a file and the spec it returns holds
    the list. A kind without sources (``pagerank``) is one item and takes none.

    Each kind's workload is its own struct (:func:`workload_type`), decoded by
    ``kind``; this protocol is what every one of them offers.
    """

    @property
    def kind(self) -> str:
        """The kind's name."""
        ...

    @property
    def sources(self) -> Sources | None:
        """The workload's sources (``None`` for a kind without them)."""
        ...

    @property
    def unit(self) -> QueryKind[Any]:
        """The registered kind."""
        ...

    @property
    def params(self) -> Params:
        """The kind's parameters, without ``sources``."""
        ...


def _workload_struct(unit: QueryKind[Any]) -> type[msgspec.Struct]:
    """The ``[[workload]]`` struct of one kind: its parameters plus ``sources``."""
    names = tuple(unit.params.__struct_fields__)

    def params(self: Any) -> Params:
        return unit.params(**{name: getattr(self, name) for name in names})

    def rules(self: Any) -> None:
        """Check the rules across the fields (each broken one on a line of the error)."""
        problems: list[str] = []
        if not unit.takes_sources and self.sources is not None:
            problems.append(f".sources: {unit.name} takes no sources")
        if unit.takes_sources and not self.sources:
            problems.append(f".sources: {unit.name!r} needs at least one source")
        problems += _nul_in_path("sources", self.sources)
        _broken_rules(problems)

    return msgspec.defstruct(
        f"{unit.params.__name__.removesuffix('Params')}Workload",
        [("sources", Sources | None, None)],
        bases=(unit.params,),
        tag=unit.name,
        tag_field="kind",
        frozen=True,
        forbid_unknown_fields=True,
        kw_only=True,
        namespace={
            "kind": property(lambda self: unit.name, doc="The kind's name."),
            "unit": property(lambda self: unit, doc="The registered kind."),
            "params": property(params, doc="The kind's parameters, without sources."),
            "__post_init__": rules,
        },
    )


_WORKLOADS: dict[str, type[msgspec.Struct]] = {
    unit.name: _workload_struct(unit) for unit in query_kinds()
}


def workload_type(kind: str) -> type[msgspec.Struct]:
    """The ``[[workload]]`` struct of a registered kind (make one with its fields)."""
    try:
        return _WORKLOADS[kind]
    except KeyError:
        lookup(kind)  # raises, naming the kinds there are
        raise


if TYPE_CHECKING:
    AnyWorkload = WorkloadSection
else:
    AnyWorkload = Union[tuple(_WORKLOADS.values())]  # noqa: UP007 (a runtime union)


class OutputSection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[output]``: where results go, in which format, and how often they are committed.

    ``dir`` is relative to the job file and must stay inside the job file's folder
    (``--out`` on the command line may name any folder, and replaces ``dir``; with
    ``--out`` the section may be left out). A chunk of records is committed once it
    holds its size in records or ``commit_interval_s`` passed: a run's first chunk
    holds ``first_commit_items`` (so results, and something for a resume to keep,
    come early), each next one twice the one before, up to ``commit_items``. ``format`` is
    ``"jsonl"`` (JSON lines) or ``"parquet"`` (needs pyarrow: the ``parquet`` extra);
    a resumed run writes the format its folder was started with.
    """

    dir: FilePath | None = None
    format: Literal["jsonl", "parquet"] = "jsonl"
    commit_items: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 65536
    first_commit_items: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 1024
    commit_interval_s: Annotated[float, msgspec.Meta(gt=0.0, le=3600.0)] = 2.0

    def __post_init__(self) -> None:
        """Check the rules across the fields (each broken one on a line of the error)."""
        _broken_rules(_nul_in_path("dir", self.dir))


class BatchingSection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[batching]``: how items are coalesced into multi-source traversals."""

    max_batch: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 1024
    max_delay_ms: Annotated[float, msgspec.Meta(ge=0.0, le=60_000.0)] = 0.5
    #: Batches running at once per device; 2 overlaps one batch's host work with the
    #: other's traversal (see :class:`~vyre_async.BatchingConfig`).
    in_flight: Annotated[int, msgspec.Meta(ge=1, le=8)] = 2

    def session_config(self) -> BatchingConfig:
        """The resident-graph session's batching for this section."""
        return BatchingConfig(
            max_batch=self.max_batch, max_delay=self.max_delay_ms / 1000, in_flight=self.in_flight
        )


class LimitsSection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[limits]``: timeouts, retries of retryable errors, the failure budget.

    Retry ``n`` of a block waits between half and all of ``min(retry_backoff_max_s,
    retry_backoff_s * 2**(n - 1))`` seconds, drawn at random so blocks that failed
    together do not retry together. A job stops (exit 1) once more than
    ``max_failed_items`` items failed. A lost
    device is reopened, and the graph uploaded again, at most ``max_reopens`` times.
    On the first SIGINT/SIGTERM in-flight work gets ``drain_timeout_s`` to finish.
    A job whose graph or item bookkeeping is estimated to need more host memory than
    ``max_host_memory_gib`` (default: what the machine has) is refused before it starts.
    ``max_device_memory_gib`` is each local device's budget for the graph (default:
    its free memory): a graph whose copy and smallest scratch do not fit it is split
    over the job's devices (``devices = "all"`` or a list) instead of copied to each,
    and a job whose graph does not fit its devices' budgets together is refused when
    it opens them. Ray actors always hold whole copies and ignore it.
    A workload's sources file may list at most ``max_sources_per_file`` ids (and, as
    text, hold at most 64 bytes per id allowed).
    """

    item_timeout_s: Annotated[float, msgspec.Meta(gt=0.0)] = 60.0
    retries: Annotated[int, msgspec.Meta(ge=0, le=100)] = 2
    retry_backoff_s: Annotated[float, msgspec.Meta(ge=0.0, le=600.0)] = 0.1
    retry_backoff_max_s: Annotated[float, msgspec.Meta(ge=0.0, le=3600.0)] = 30.0
    max_failed_items: NonNegative = 0
    max_reopens: Annotated[int, msgspec.Meta(ge=0, le=100)] = 2
    drain_timeout_s: Annotated[float, msgspec.Meta(gt=0.0, le=3600.0)] = 30.0
    max_host_memory_gib: Annotated[float, msgspec.Meta(gt=0.0, le=1 << 20)] | None = None
    max_device_memory_gib: Annotated[float, msgspec.Meta(gt=0.0, le=1 << 20)] | None = None
    max_sources_per_file: Annotated[int, msgspec.Meta(ge=1, le=100_000_000)] = 1_000_000

    @property
    def device_memory_limit(self) -> int | None:
        """``max_device_memory_gib`` in bytes (``None``: each device's free memory)."""
        gib = self.max_device_memory_gib
        return None if gib is None else int(gib * (1 << 30))


class LoggingSection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[logging]``: console or JSON lines, the level, and how often a progress line
    is logged when standard error is not a terminal."""

    format: Literal["console", "json"] = "console"
    level: Literal["debug", "info", "warning", "error"] = "info"
    progress_interval_s: Annotated[float, msgspec.Meta(gt=0.0, le=3600.0)] = 5.0


class JobSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A whole job file."""

    job: JobSection
    graph: GraphSection
    workload: Annotated[list[AnyWorkload], msgspec.Meta(min_length=1)]
    output: OutputSection = OutputSection()
    batching: BatchingSection = BatchingSection()
    limits: LimitsSection = LimitsSection()
    logging: LoggingSection = LoggingSection()
