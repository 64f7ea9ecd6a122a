"""The traversal kinds: ``bfs`` (levels), ``khop`` (within k hops) and ``reach`` (counts).

All three are breadth-first traversals from a source. One query alone runs the
single-source, direction-optimizing BFS of this package; many queries (a batch of
concurrent callers, ``bfs_many``, a job's block) run as multi-source traversals
(:mod:`..msbfs`), up to 1,024 sources per pass, cut into passes that fit the device
memory budget. A ``"parents"`` readback adds a BFS parent per vertex, pulled from the
in-edges on the device after the traversal (:mod:`._parents`); a lone k-hop query's
vertex set is compacted on the device (:mod:`._compact`), into a device array if the
caller gives one.
"""

from __future__ import annotations

from collections.abc import Hashable
from functools import partial
from typing import Annotated, Any, ClassVar, Literal

import anyio
import msgspec
import numpy as np

from ...backends import ResidentBuffer
from ...errors import ValidationError
from ...graphs import VertexRanges
from ...kernels import Kernel
from .._kind import (
    DEFAULT_QUERY_BUDGET,
    Params,
    Partition,
    QueryKind,
    RecordField,
    Replica,
    Summary,
)
from ..msbfs import (
    MSBFS_KERNELS,
    MSBFS_LANES_PER_WORD,
    MSBFS_MAX_WORDS,
    MsbfsScratch,
    MultiSourceTraversal,
    ScratchShape,
    allocate_scratch,
    check_parted_readback,
    lane_chunks,
    minimal_parted_bytes,
    minimal_replica_bytes,
    run_parted_traversals,
)
from ._compact import CompactScratch, check_vertex_out, compact_buffer_sizes, deliver_reached
from ._compact_kernels import KHOP_KERNELS
from ._kernels import BFS_KERNELS
from ._parents import ParentsScratch, traverse_with_parents
from ._run import BfsScratch, traverse
from ._state import BFS_STATE_WORDS, BFS_UNLIMITED, STATE_LEVELS_RUN, STATE_REACHED

__all__ = ["BFS", "KHOP", "REACH", "BfsParams", "KhopParams", "ReachParams", "reached_vertices"]

#: A vertex id: vertex ids are int32 and a graph has at most 2**31 - 1 vertices.
VertexId = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 2)]
#: What a traversal brings back per query: every vertex's level, the reached count,
#: the levels of ``targets`` only, or every vertex's level and BFS parent.
Readback = Literal["levels", "counts", "targets", "parents"]

#: The pool keys of a single-source traversal's scratch: plain, with parents, with the
#: k-hop compaction.
_SINGLE_KEY = ("bfs", "single")
_PARENTS_KEY = ("bfs", "single", "parents")
_COMPACT_KEY = ("bfs", "single", "compact")


class BfsParams(Params, frozen=True, kw_only=True):
    """``bfs``: a full traversal.

    Attributes:
        readback: ``"counts"`` (reached vertices), ``"levels"`` (every vertex's
            level), ``"targets"`` (the levels of ``targets``) or ``"parents"`` (every
            vertex's level and BFS parent: a row is an int32 ``(2, V)`` array, the
            levels then the parents; a parent is an in-neighbour one level closer to
            the source, -1 for the source and where unreached).
        targets: The vertices a ``"targets"`` readback returns the levels of.
    """

    readback: Readback = "counts"
    targets: tuple[VertexId, ...] = ()


class KhopParams(BfsParams, frozen=True, kw_only=True):
    """``khop``: a traversal at most ``k`` levels deep (readback as for ``bfs``).

    Attributes:
        k: The hop limit.
    """

    k: VertexId


class ReachParams(Params, frozen=True, kw_only=True):
    """``reach``: how many vertices a source reaches (no parameters)."""


def reached_vertices(levels: np.ndarray) -> np.ndarray:
    """The vertices a levels row reached, sorted int32."""
    return np.flatnonzero(levels >= 0).astype(np.int32)


class _Traversal(QueryKind[Any]):
    """What the three traversal kinds share; they differ in depth and readback."""

    lanes: ClassVar[int] = MSBFS_LANES_PER_WORD * MSBFS_MAX_WORDS
    record_fields: ClassVar[tuple[RecordField, ...]] = (("reached", "int"), ("max_level", "int"))

    def max_level(self, params: Any) -> int:
        """The deepest level a query of ``params`` discovers."""
        return BFS_UNLIMITED

    def readback(self, params: Any) -> Readback:
        """What a query of ``params`` brings back."""
        readback: Readback = params.readback
        return readback

    def targets(self, params: Any) -> tuple[int, ...]:
        """The target vertices of a ``"targets"`` readback."""
        targets: tuple[int, ...] = params.targets
        return targets

    # ------------------------------------------------------------------ sessions
    def kernels(self, params: Any) -> tuple[Kernel, ...]:
        """The single-source traversal's and the multi-source traversal's."""
        return (*BFS_KERNELS, *MSBFS_KERNELS)

    def check_params(self, params: Any, num_vertices: int) -> None:
        """Refuse a ``"targets"`` readback without targets, or with one out of range."""
        targets = self.targets(params)
        if self.readback(params) == "targets" and (
            not targets or not all(0 <= t < num_vertices for t in targets)
        ):
            raise ValidationError(
                f"a 'targets' readback needs targets in [0, {num_vertices - 1}], got "
                f"{list(targets)[:5]}",
                fix="pass the vertices whose levels you want, or readback='levels'.",
            )

    async def run_one(
        self, replica: Replica, params: Any, source: int | None, out: Any = None
    ) -> Any:
        """One query: the single-source, direction-optimizing traversal."""
        if source is None:
            raise ValueError(f"a {self.name!r} query needs a source")
        readback = self.readback(params)
        if readback == "targets":
            rows = await self.run_many(replica, params, np.array([source], np.int32))
            return rows[0]
        if readback == "parents":
            if out is not None:
                raise ValidationError(
                    "a 'parents' query returns two arrays and takes no out=",
                    fix="leave out= out (or ask for readback='levels' to fill out).",
                )
            row = await _single_parents(replica, source, self.max_level(params))
            return await self.unpack(params, row)
        # _single's steps, inlined: one query's path is the per-query host overhead.
        key: Hashable = _SINGLE_KEY
        scratch: BfsScratch | None = replica.pooled(key)
        if scratch is None:
            scratch = await replica.scratch(key, lambda: _single_scratch(replica))
        try:
            async with replica.measure() as run:
                words, run.device_ns = await traverse(
                    replica.backend,
                    replica.buffers,
                    scratch,
                    source,
                    self.max_level(params),
                    replica.check,
                )
                run.levels = int(words[STATE_LEVELS_RUN])
                if readback == "counts":
                    return int(words[STATE_REACHED])
                levels = await replica.backend.read(scratch.levels, out=out)
        finally:
            # Kept even after an error: the next traversal on it is ordered after this one.
            if not replica.give_back(key, scratch):
                await replica.release(key, scratch, keep=True)
        return await self.unpack(params, levels)

    async def run_many(
        self,
        replica: Replica,
        params: Any,
        sources: np.ndarray,
        budget_bytes: int | None = None,
    ) -> np.ndarray:
        """One row per source: levels ``(n, V)``, target levels ``(n, T)`` or counts ``(n,)``.

        A lone source (not a ``"targets"`` readback) runs the single-source traversal;
        more run as multi-source traversals cut to the lanes and the budget.
        """
        readback = self.readback(params)
        max_level = self.max_level(params)
        if len(sources) == 1 and readback == "parents":
            return (await _single_parents(replica, int(sources[0]), max_level))[None]
        if len(sources) == 1 and readback != "targets":
            answer = await _single(replica, int(sources[0]), max_level, readback, None)
            return np.array([answer], np.int32) if readback == "counts" else answer[None, :]
        return await _many(
            replica, sources, max_level, readback, self.targets(params), budget_bytes
        )

    def replica_scratch_bytes(self, num_vertices: int) -> int:
        """The smallest multi-source traversal's bitsets (one lane word)."""
        return minimal_replica_bytes(num_vertices)

    def part_scratch_bytes(self, ranges: VertexRanges, part: int) -> int:
        """The smallest partitioned traversal's buffers on ``part`` (one lane word)."""
        return minimal_parted_bytes(ranges, part)

    async def run_partitioned(
        self,
        partition: Partition,
        params: Any,
        sources: np.ndarray | None,
        budget_bytes: int | None = None,
    ) -> np.ndarray:
        """One row per source on a graph split over several devices: levels ``(n, V)``
        or counts ``(n,)``, as :meth:`run_many` gives them; every query (a lone one too)
        runs as a partitioned multi-source traversal.

        Raises:
            UnsupportedFeatureError: A ``"targets"`` or ``"parents"`` readback.
        """
        if sources is None:
            raise ValueError(f"a {self.name!r} query needs a source")
        readback = check_parted_readback(self.readback(params))
        return await run_parted_traversals(
            partition,
            sources,
            max_level=self.max_level(params),
            readback=readback,
            budget_bytes=budget_bytes,
        )

    async def unpack(self, params: Any, row: np.ndarray) -> Any:
        """A ``"parents"`` row becomes ``(levels, parents)``; the others stay rows."""
        if self.readback(params) == "parents":
            return row[0], row[1]
        return row

    def no_rows(self, params: Any, num_vertices: int) -> np.ndarray:
        """Empty rows of the readback's width."""
        readback = self.readback(params)
        if readback == "counts":
            return np.zeros(0, np.int32)
        if readback == "parents":
            return np.zeros((0, 2, num_vertices), np.int32)
        width = len(self.targets(params)) if readback == "targets" else num_vertices
        return np.zeros((0, width), np.int32)

    # ---------------------------------------------------------------------- jobs
    def row_bytes(self, params: Any, num_vertices: int) -> int:
        """4 bytes per level (or per count, or per target); 8 per vertex with parents."""
        readback = self.readback(params)
        if readback == "levels":
            return 4 * num_vertices
        if readback == "parents":
            return 8 * num_vertices
        return 4 * len(self.targets(params)) if readback == "targets" else 4

    def keeps_arrays(self, params: Any) -> bool:
        """All but a ``"counts"`` readback."""
        return self.readback(params) != "counts"

    def summarize(self, params: Any, sources: np.ndarray, result: np.ndarray) -> Summary:
        """Reached counts; with levels also the deepest level and each item's array."""
        readback = self.readback(params)
        if readback == "counts":
            return Summary({"reached": result.astype(np.int64, copy=False)})
        levels = result[:, 0] if readback == "parents" else result
        reached = (levels >= 0).sum(axis=1, dtype=np.int64)
        deepest = (
            levels.max(axis=1).astype(np.int64)
            if levels.shape[1]
            else np.full(len(levels), -1, np.int64)
        )
        return Summary({"reached": reached, "max_level": deepest}, self.item_arrays(params, result))

    def item_arrays(self, params: Any, rows: np.ndarray) -> list[np.ndarray]:
        """Each item's full result: its levels row (its parents with parents)."""
        if self.readback(params) == "parents":
            return [row[1] for row in rows]
        return list(rows)


class BfsKind(_Traversal):
    """BFS levels from a source: int32, 0 at the source, -1 where unreachable."""

    name = "bfs"
    params = BfsParams


class KhopKind(_Traversal):
    """The vertices within ``k`` hops of a source (sorted int32, the source included)."""

    name = "khop"
    params = KhopParams

    def max_level(self, params: Any) -> int:
        """``k``."""
        k: int = params.k
        return k

    def kernels(self, params: Any) -> tuple[Kernel, ...]:
        """The traversals', and with a ``"levels"`` readback the compaction's."""
        compaction = KHOP_KERNELS if self.readback(params) == "levels" else ()
        return (*super().kernels(params), *compaction)

    async def run_one(
        self, replica: Replica, params: Any, source: int | None, out: Any = None
    ) -> Any:
        """One query; with a ``"levels"`` readback its vertex set is compacted on the
        device: returned as a new array, or written into ``out`` (a NumPy array, a
        ``ResidentBuffer``, a device array) and its length returned."""
        if source is None or self.readback(params) != "levels":
            return await super().run_one(replica, params, source, out)
        if out is not None:
            check_vertex_out(out, replica.num_vertices, replica.backend)
        return await _single_compact(replica, source, self.max_level(params), out)

    async def unpack(self, params: Any, row: np.ndarray) -> Any:
        """A levels row becomes the vertices it reached (off the event loop)."""
        if self.readback(params) == "levels":
            return await anyio.to_thread.run_sync(reached_vertices, row)
        return await super().unpack(params, row)

    def item_arrays(self, params: Any, rows: np.ndarray) -> list[np.ndarray]:
        """A levels item keeps the vertex ids it reached; the others as for ``bfs``."""
        if self.readback(params) == "levels":
            return [reached_vertices(row) for row in rows]
        return super().item_arrays(params, rows)


class ReachKind(_Traversal):
    """How many vertices a source reaches, itself included (reads back 32 bytes)."""

    name = "reach"
    params = ReachParams

    def readback(self, params: Any) -> Readback:
        """Always ``"counts"``."""
        return "counts"

    def targets(self, params: Any) -> tuple[int, ...]:
        """None."""
        return ()

    async def unpack(self, params: Any, row: np.ndarray) -> Any:
        """The count as an int."""
        return int(row)


#: The registered traversal kinds.
BFS, KHOP, REACH = BfsKind(), KhopKind(), ReachKind()


async def _single(
    replica: Replica, source: int, max_level: int, readback: Readback, out: Any
) -> Any:
    """A single-source traversal on ``replica``: the levels (into ``out``), or the count."""
    key: Hashable = _SINGLE_KEY
    scratch: BfsScratch | None = replica.pooled(key)
    if scratch is None:
        scratch = await replica.scratch(key, lambda: _single_scratch(replica))
    try:
        async with replica.measure() as run:
            words, run.device_ns = await traverse(
                replica.backend, replica.buffers, scratch, source, max_level, replica.check
            )
            run.levels = int(words[STATE_LEVELS_RUN])
            if readback == "counts":
                return int(words[STATE_REACHED])
            return await replica.backend.read(scratch.levels, out=out)
    finally:
        # Kept even after an error: the next traversal on it is ordered after this one.
        if not replica.give_back(key, scratch):
            await replica.release(key, scratch, keep=True)


async def _single_parents(replica: Replica, source: int, max_level: int) -> np.ndarray:
    """A single-source traversal with parents: its ``(2, V)`` levels and parents."""
    key: Hashable = _PARENTS_KEY
    scratch: ParentsScratch | None = replica.pooled(key)
    if scratch is None:
        scratch = await replica.scratch(key, lambda: _parents_scratch(replica))
    try:
        async with replica.measure() as run:
            words, row, run.device_ns = await traverse_with_parents(
                replica.backend, replica.buffers, scratch, source, max_level, replica.check
            )
            run.levels = int(words[STATE_LEVELS_RUN])
    finally:
        if not replica.give_back(key, scratch):
            await replica.release(key, scratch, keep=True)
    return row


async def _single_compact(replica: Replica, source: int, max_level: int, out: Any) -> Any:
    """A single-source traversal whose vertex set is compacted on the device: a new
    array, or its length once written into ``out``."""
    key: Hashable = _COMPACT_KEY
    scratch: CompactScratch | None = replica.pooled(key)
    if scratch is None:
        scratch = await replica.scratch(key, lambda: _compact_scratch(replica))
    try:
        async with replica.measure() as run:
            words, run.device_ns = await traverse(
                replica.backend, replica.buffers, scratch, source, max_level, replica.check
            )
            run.levels = int(words[STATE_LEVELS_RUN])
            count = int(words[STATE_REACHED])
            vertices = await deliver_reached(replica.backend, scratch, count, out)
    finally:
        if not replica.give_back(key, scratch):
            await replica.release(key, scratch, keep=True)
    return count if vertices is None else vertices


async def _allocate(replica: Replica, words: list[int]) -> list[ResidentBuffer]:
    """int32 buffers of ``words`` elements each; none is left allocated on an error."""
    backend = replica.backend
    made: list[ResidentBuffer] = []
    try:
        for count in words:
            made.append(await backend.alloc(4 * count, np.int32))
    except BaseException:
        for buffer in made:
            await backend.free(buffer)
        raise
    return made


async def _parents_scratch(replica: Replica) -> ParentsScratch:
    n = replica.num_vertices
    levels, state, parents = await _allocate(replica, [n, BFS_STATE_WORDS, n])
    return ParentsScratch(levels, state, parents)


async def _compact_scratch(replica: Replica) -> CompactScratch:
    n = replica.num_vertices
    tiles, vertices = compact_buffer_sizes(n)
    levels, state, counts, output = await _allocate(replica, [n, BFS_STATE_WORDS, tiles, vertices])
    return CompactScratch(levels, state, counts, output)


async def _single_scratch(replica: Replica) -> BfsScratch:
    backend = replica.backend
    levels = await backend.alloc(4 * replica.num_vertices, np.int32)
    try:
        state = await backend.alloc(4 * BFS_STATE_WORDS, np.int32)
    except BaseException:
        await backend.free(levels)
        raise
    return BfsScratch(levels, state)


async def _many_scratch(replica: Replica, shape: ScratchShape) -> MsbfsScratch:
    return await allocate_scratch(replica.backend, replica.buffers, replica.num_vertices, shape)


async def _many(
    replica: Replica,
    sources: np.ndarray,
    max_level: int,
    readback: Readback,
    targets: tuple[int, ...],
    budget_bytes: int | None,
) -> np.ndarray:
    """Multi-source traversals of ``sources``, cut into consecutive passes."""
    n, graph_bytes = replica.num_vertices, replica.graph_bytes
    per_query = {"levels": 4 * n, "parents": 8 * n, "targets": 4 * len(targets)}.get(readback, 4)
    chunks = lane_chunks(
        len(sources),
        per_query,
        num_vertices=n,
        graph_bytes=graph_bytes,
        budget_bytes=graph_bytes + DEFAULT_QUERY_BUDGET if budget_bytes is None else budget_bytes,
        max_words=MSBFS_MAX_WORDS,
        first="each query",
    )
    backend = replica.backend
    rows: list[np.ndarray] = []
    async with replica.measure() as run:
        runner = MultiSourceTraversal(backend, replica.buffers, n)
        for start, stop, words in chunks:
            shape: ScratchShape = (words, readback, len(targets))
            key: Hashable = ("msbfs", shape)
            scratch: MsbfsScratch | None = replica.pooled(key)
            if scratch is None:
                scratch = await replica.scratch(key, partial(_many_scratch, replica, shape))
            done = False
            try:
                rows.append(
                    await runner.run(
                        sources[start:stop],
                        words=words,
                        max_level=max_level,
                        readback=readback,
                        targets=targets,
                        scratch=scratch,
                    )
                )
                done = True
            finally:
                await replica.release(key, scratch, keep=done)
        run.levels, run.device_ns = runner.levels, runner.device_ns
    return rows[0] if len(rows) == 1 else np.concatenate(rows)
