"""What a query kind is: the unit that one folder of ``algorithms/`` holds and registers.

A *query kind* (BFS, k-hop, reachability, PageRank, ...) is everything that is
specific to one kind of question over a resident graph:

- how it runs on one device's copy of the graph (a :class:`Replica`): one query
  (:meth:`QueryKind.run_one`) and many at once (:meth:`QueryKind.run_many`), as
  resident sequences whose host waits once per several rounds;
- the scratch it needs there, asked for by a hashable key so a replica can pool it
  without knowing the kind;
- whether concurrent single queries coalesce into one run of many
  (:attr:`QueryKind.lanes`), and how a lone caller's answer is cut from a batch's
  rows (:meth:`QueryKind.unpack`);
- the kernels a run may launch (:meth:`QueryKind.kernels`), which a job loads on each
  device before its first block;
- its job workload: the fields a ``[[workload]]`` of this kind adds
  (:attr:`QueryKind.fields`), how one block's results become record columns and
  full-result arrays (:meth:`QueryKind.summarize`), and what it asks of the graph
  (:meth:`QueryKind.graph_problem`).

Everything above this package (sessions, the batcher's executor, jobs, the Ray
executor) looks kinds up in the registry (:mod:`._registry`) and never names one;
only the sessions' typed methods (``session.bfs(...)``) do, as thin calls into their
unit. Results cross between processes as named arrays, so no layer above needs a
field per kind.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

import msgspec
import numpy as np

from ..backends import Backend, DeviceLinks, ResidentBuffer
from ..errors import UnsupportedFeatureError
from ..graphs import CsrGraph, VertexRanges
from ..kernels import Kernel

__all__ = [
    "DEFAULT_QUERY_BUDGET",
    "Params",
    "PartScratch",
    "Partition",
    "QueryKind",
    "RecordField",
    "Replica",
    "RunMeasure",
    "Scratch",
    "Summary",
]

T = TypeVar("T")
S = TypeVar("S", bound="Scratch")

#: Device bytes one run of many queries may use besides the graph, by default.
DEFAULT_QUERY_BUDGET = 4 << 30


class Params(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A kind's parameters: what every query of one run shares (hashable, frozen).

    Queries of one kind coalesce only with queries of equal parameters. A kind's job
    workload fields are its parameters' fields (see :attr:`QueryKind.fields`).
    """


P = TypeVar("P", bound=Params)


class Scratch(Protocol):
    """Device buffers one run uses, pooled by a replica between runs of the same key."""

    @property
    def buffers(self) -> Sequence[ResidentBuffer]:
        """Every buffer it holds (freed by the replica, never by the kind)."""
        ...

    @property
    def nbytes(self) -> int:
        """Their bytes (what the replica's idle pool counts)."""
        ...


class RunMeasure(Protocol):
    """What one run reports for the session's statistics (``async with``)."""

    levels: int
    device_ns: int

    async def __aenter__(self) -> RunMeasure: ...

    async def __aexit__(self, *exc_info: object) -> None: ...


class Replica(Protocol):
    """What a kind sees of one device's copy of a resident graph.

    Attributes:
        backend: The open backend holding the copy.
        buffers: The graph's device arrays: ``offsets`` (int64), ``indices``
            (int32), ``out_degree`` (int32) and the transpose ``in_offsets`` and
            ``in_indices`` (the same buffers for a symmetric graph). Anything else
            a kind needs (weights, a renumbering) it makes once with
            :meth:`derived`.
        graph: The graph on the host (read it, never change it).
        num_vertices: Vertices of the graph.
        graph_bytes: Device bytes of the copy.
    """

    @property
    def backend(self) -> Backend: ...

    @property
    def buffers(self) -> Mapping[str, ResidentBuffer]: ...

    @property
    def graph(self) -> CsrGraph: ...

    @property
    def num_vertices(self) -> int: ...

    @property
    def graph_bytes(self) -> int: ...

    def check(self) -> None:
        """Raise unless the session is still open (call it before each submission)."""
        ...

    def measure(self) -> RunMeasure:
        """A run's measurement, added to the session's statistics when it exits."""
        ...

    def pooled(self, key: Hashable) -> Any | None:
        """An idle scratch made for ``key``, taken from the pool (``None``: none idle).

        Synchronous, so the common case costs no coroutine round trip.
        """
        ...

    async def scratch(self, key: Hashable, make: Callable[[], Awaitable[S]]) -> S:
        """An idle scratch made for ``key``, else ``make()``'s; give it back with
        :meth:`release`. Where a new one does not fit, idle ones are freed first."""
        ...

    def give_back(self, key: Hashable, scratch: Scratch) -> bool:
        """Keep ``scratch`` idle for the next run of ``key`` if the pool has room now
        (synchronous: the common case costs no coroutine); ``False``: not kept, call
        :meth:`release`."""
        ...

    async def release(self, key: Hashable, scratch: Scratch, *, keep: bool) -> None:
        """Take back a scratch: kept idle for the next run of ``key`` when ``keep`` (and
        within the pool's bounds), else freed once no unfinished work uses it."""
        ...

    async def derived(self, key: Hashable, make: Callable[[], Awaitable[T]]) -> T:
        """Something made once per replica from the graph (``make`` runs once; later
        callers wait for it), kept until the session closes."""
        ...

    async def host_derived(self, key: Hashable, make: Callable[[], T]) -> T:
        """Something made once per session on the host, off the event loop (``make``
        runs in a worker thread once for all replicas)."""
        ...

    def hold(self, buffer: ResidentBuffer) -> ResidentBuffer:
        """Keep ``buffer`` until the session closes (then it is freed); returns it."""
        ...


class PartScratch(Protocol):
    """Device buffers one run on a split graph uses on every device, pooled between runs."""

    @property
    def nbytes(self) -> int:
        """Their bytes, all devices together."""
        ...

    async def free(self) -> None:
        """Free every buffer on its device, once no unfinished work uses it."""
        ...


PS = TypeVar("PS", bound=PartScratch)


class Partition(Protocol):
    """What a kind sees of a graph split over the devices of a group (1-D: each device
    holds a contiguous vertex range with its vertices' out- and in-edges).

    Attributes:
        backends: The open backends, one per part, in part order.
        parts: Each device's arrays: ``offsets`` (int64, from 0), ``indices``
            (int32 global ids of the out-neighbours), ``out_degree`` and the in-lists
            ``in_offsets`` and ``in_indices`` (the same buffers for a symmetric graph).
        ranges: Which vertices each device owns.
        links: Ordered copies between the devices.
        graph: The graph on the host (read it, never change it).
        num_vertices: Vertices of the graph.
    """

    @property
    def backends(self) -> Sequence[Backend]: ...

    @property
    def parts(self) -> Sequence[Mapping[str, ResidentBuffer]]: ...

    @property
    def ranges(self) -> VertexRanges: ...

    @property
    def links(self) -> DeviceLinks: ...

    @property
    def graph(self) -> CsrGraph: ...

    @property
    def num_vertices(self) -> int: ...

    def check(self) -> None:
        """Raise unless the session is still open (call it before each submission)."""
        ...

    def measure(self) -> RunMeasure:
        """A run's measurement, added to the session's statistics when it exits."""
        ...

    def pooled(self, key: Hashable) -> Any | None:
        """An idle scratch made for ``key``, taken from the pool (``None``: none idle)."""
        ...

    async def scratch(self, key: Hashable, make: Callable[[], Awaitable[PS]]) -> PS:
        """An idle scratch made for ``key``, else ``make()``'s (idle ones are freed first
        where a new one does not fit); give it back with :meth:`release`."""
        ...

    async def release(self, key: Hashable, scratch: PartScratch, *, keep: bool) -> None:
        """Keep ``scratch`` idle for the next run of ``key`` when ``keep`` (while the
        session is open and the pool has room), else free it."""
        ...


#: A record column a kind fills: its name and type (``"int"`` or ``"float"``).
RecordField = tuple[str, Literal["int", "float"]]


class Summary(msgspec.Struct, frozen=True):
    """What one block of a job's items computed, as its records will hold it.

    Attributes:
        columns: One value per item for each of the kind's record fields it fills
            (int64 or float64 arrays; NaN or -1 are values, not gaps).
        arrays: Each item's full result (written to the chunk's array file), or
            ``None`` when the items keep no array.
    """

    columns: Mapping[str, np.ndarray]
    arrays: Sequence[np.ndarray] | None = None


class QueryKind(ABC, Generic[P]):
    """One kind of question over a resident graph; see the module description.

    Subclasses set the class attributes and implement :meth:`run_many` (kinds whose
    queries have a source) or :meth:`run_one` (kinds without), and
    :meth:`summarize`. One instance per kind is registered
    (:func:`~vyre_async.algorithms.register`).

    Attributes:
        name: The kind's name: a job's ``kind = "..."``, a record's ``kind``.
        params: Its parameters' type.
        takes_sources: Each query has a source vertex (one job item per source);
            otherwise a query is the whole graph's (one job item).
        lanes: Queries one :meth:`run_many` carries at most (1: single queries never
            coalesce; they run alone).
        record_fields: The record columns its items fill.
    """

    name: ClassVar[str]
    params: ClassVar[type[Params]]
    takes_sources: ClassVar[bool] = True
    lanes: ClassVar[int] = 1
    record_fields: ClassVar[tuple[RecordField, ...]] = ()

    # ------------------------------------------------------------------ sessions
    async def run_one(
        self, replica: Replica, params: P, source: int | None, out: Any = None
    ) -> Any:
        """One query alone on ``replica``: its caller's answer (written to ``out`` too,
        where the kind supports one).

        The default runs :meth:`run_many` for the one source and :meth:`unpack`s it.
        """
        if source is None:
            raise NotImplementedError(f"kind {self.name!r} needs run_one for sourceless queries")
        rows = await self.run_many(replica, params, np.array([source], np.int32))
        return await self.unpack(params, rows[0])

    async def run_many(
        self,
        replica: Replica,
        params: P,
        sources: np.ndarray,
        budget_bytes: int | None = None,
    ) -> np.ndarray:
        """Many queries of ``params`` on ``replica``: one row per source, in order.

        Args:
            replica: The copy of the graph to run on.
            params: What every query shares.
            sources: int32 source vertices (checked against the graph; duplicates
                allowed), at least one.
            budget_bytes: Device bytes the graph plus one run may use (``None``: the
                kind's default); more queries than fit run as several passes.
        """
        raise NotImplementedError(f"kind {self.name!r} has no queries with sources")

    async def unpack(self, params: P, row: np.ndarray) -> Any:
        """A lone caller's answer from its row of a batch (default: the row itself)."""
        return row

    def replica_scratch_bytes(self, num_vertices: int) -> int:
        """Device bytes the smallest run of this kind needs on a whole copy of a graph
        of ``num_vertices``, besides the copy: what placing a graph on a device group
        leaves free on every device for it (default 0)."""
        return 0

    def part_scratch_bytes(self, ranges: VertexRanges, part: int) -> int:
        """Device bytes the smallest run of this kind on a split graph needs on device
        ``part``, besides its part (default 0: a kind that cannot run on a split graph
        needs none)."""
        return 0

    async def run_partitioned(
        self,
        partition: Partition,
        params: P,
        sources: np.ndarray | None,
        budget_bytes: int | None = None,
    ) -> Any:
        """Queries of ``params`` on a graph split over several devices: one row per
        source, as :meth:`run_many` gives them (``sources`` is ``None`` for a kind
        without sources: then :meth:`run_one`'s answer).

        ``budget_bytes`` is each device's budget for one pass besides its part of the
        graph (``None``: the kind's default). The default refuses: a kind runs on a
        split graph only where it says how.

        Raises:
            UnsupportedFeatureError: This kind (or these parameters) cannot run on a
                graph split over several devices.
        """
        raise UnsupportedFeatureError(
            f"a {self.name!r} query cannot run on a graph split over several devices",
            fix="raise the devices' memory_limit so that the graph is replicated (every "
            "device a whole copy), or run it on one device.",
        )

    def no_rows(self, params: P, num_vertices: int) -> np.ndarray:
        """What :meth:`run_many` returns for no sources (the shape of its rows)."""
        return np.zeros((0, num_vertices), np.int32)

    def kernels(self, params: P) -> tuple[Kernel, ...]:
        """The kernels a run of ``params`` may launch, single queries and many at once.

        A job loads these on each of its devices while its graph is prepared (a
        kernel it did not name still loads at its first launch, a moment later).
        Default: none.
        """
        return ()

    def check_params(self, params: P, num_vertices: int) -> None:
        """Refuse parameters that cannot run on a graph of ``num_vertices`` vertices
        (a :class:`~vyre_async.errors.ValidationError` with a fix). Default: none."""

    # ---------------------------------------------------------------------- jobs
    #: How to mend what :meth:`graph_problem` reports.
    graph_fix: ClassVar[str] = "use another graph."

    def graph_problem(self, params: P, *, weighted: bool) -> str | None:
        """Why this kind cannot run on a graph (``weighted`` or not), or ``None``."""
        return None

    def row_bytes(self, params: P, num_vertices: int) -> int:
        """Host bytes of one query's row (a job sizes its blocks by it)."""
        return 4

    def keeps_arrays(self, params: P) -> bool:
        """Whether each job item of ``params`` writes a full-result array."""
        return False

    @abstractmethod
    def summarize(self, params: P, sources: np.ndarray, result: np.ndarray) -> Summary:
        """A block's records: ``result`` is :meth:`run_many`'s rows for ``sources``
        (or :meth:`run_one`'s answer for a sourceless kind). Called in a worker
        thread."""
