"""The ``bfs_path`` kind: one shortest path (fewest edges) from a source to a target.

A query is a BFS from the source that stops at the target's level, then a walk back
over in-edges (:func:`~._run.find_path`): only the path comes back. A job workload
names one ``target`` and many ``sources``: item ``i`` is the path from ``sources[i]``
to the target (a job's items carry a source each, and the workload's fields are what
its items share). Queries do not coalesce: each runs alone, one after another.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Annotated, Any, ClassVar

import msgspec
import numpy as np

from ...backends import ResidentBuffer
from ...errors import ValidationError
from ...kernels import Kernel
from .._kind import Params, QueryKind, RecordField, Replica, Summary
from ..bfs import BFS_KERNELS, BFS_STATE_WORDS, STATE_LEVELS_RUN
from ._kernels import BFS_PATH_KERNELS
from ._run import PathScratch, find_path

__all__ = ["BFS_PATH", "BfsPathParams"]

#: A vertex id: vertex ids are int32 and a graph has at most 2**31 - 1 vertices.
VertexId = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 2)]
_KEY: Hashable = ("bfs_path", "single")


class BfsPathParams(Params, frozen=True, kw_only=True):
    """``bfs_path``: the path from each source to one target.

    Attributes:
        target: The vertex every path ends at.
    """

    target: VertexId


class BfsPathKind(QueryKind[BfsPathParams]):
    """One shortest path from a source to ``target``: int32 vertex ids from the source
    to the target, empty where the target is unreachable."""

    name = "bfs_path"
    params = BfsPathParams
    record_fields: ClassVar[tuple[RecordField, ...]] = (("hops", "int"),)

    def kernels(self, params: BfsPathParams) -> tuple[Kernel, ...]:
        """The BFS levels' kernels and the path's."""
        return (*BFS_KERNELS, *BFS_PATH_KERNELS)

    def check_params(self, params: BfsPathParams, num_vertices: int) -> None:
        """A target that is a vertex of the graph."""
        target = params.target
        if isinstance(target, bool) or not isinstance(target, int | np.integer):
            raise ValidationError(
                f"target must be an int vertex id, got {type(target).__name__}",
                fix="pass target=<vertex id>.",
            )
        if not 0 <= int(target) < num_vertices:
            raise ValidationError(
                f"target vertex {target} is out of range for a graph of {num_vertices} vertices",
                fix=f"pass a vertex id in [0, {num_vertices - 1}]."
                if num_vertices
                else "the graph has no vertices.",
            )

    async def run_one(
        self, replica: Replica, params: BfsPathParams, source: int | None, out: Any = None
    ) -> Any:
        """The path from ``source`` to the target (the source alone when they are one)."""
        if source is None:
            raise ValueError("a 'bfs_path' query needs a source")
        target = int(params.target)
        if source == target:
            replica.check()
            return np.array([source], np.int32)
        scratch: PathScratch | None = replica.pooled(_KEY)
        if scratch is None:
            scratch = await replica.scratch(_KEY, lambda: _path_scratch(replica))
        try:
            async with replica.measure() as run:
                path, words, run.device_ns = await find_path(
                    replica.backend, replica.buffers, scratch, source, target, replica.check
                )
                run.levels = int(words[STATE_LEVELS_RUN])
        finally:
            # Kept even after an error: the next query on it is ordered after this one.
            if not replica.give_back(_KEY, scratch):
                await replica.release(_KEY, scratch, keep=True)
        return path

    async def run_many(
        self,
        replica: Replica,
        params: BfsPathParams,
        sources: np.ndarray,
        budget_bytes: int | None = None,
    ) -> np.ndarray:
        """One row per source: its path, padded with -1 to the longest of the rows."""
        paths = [await self.run_one(replica, params, int(s)) for s in sources]
        rows = np.full((len(paths), max((p.size for p in paths), default=0)), -1, np.int32)
        for row, path in zip(rows, paths, strict=True):
            row[: path.size] = path
        return rows

    async def unpack(self, params: BfsPathParams, row: np.ndarray) -> Any:
        """The path without its padding."""
        return row[row >= 0]

    def no_rows(self, params: BfsPathParams, num_vertices: int) -> np.ndarray:
        """No rows, no width."""
        return np.zeros((0, 0), np.int32)

    # ---------------------------------------------------------------------- jobs
    def row_bytes(self, params: BfsPathParams, num_vertices: int) -> int:
        """A path holds at most every vertex."""
        return 4 * num_vertices

    def keeps_arrays(self, params: BfsPathParams) -> bool:
        """Each item's array is its path."""
        return True

    def summarize(self, params: BfsPathParams, sources: np.ndarray, result: np.ndarray) -> Summary:
        """Hops (edges on the path, -1 where unreachable) and each item's path."""
        lengths = (result >= 0).sum(axis=1, dtype=np.int64)
        paths = [row[:length] for row, length in zip(result, lengths, strict=True)]
        return Summary({"hops": lengths - 1}, paths)


#: The registered shortest-path (fewest edges) kind.
BFS_PATH = BfsPathKind()


async def _path_scratch(replica: Replica) -> PathScratch:
    backend = replica.backend
    n = replica.num_vertices
    made: list[ResidentBuffer] = []
    try:
        for count in (n, BFS_STATE_WORDS, 1, n):
            made.append(await backend.alloc(4 * max(count, 1), np.int32))
    except BaseException:
        for buffer in made:
            await backend.free(buffer)
        raise
    return PathScratch(*made)
