"""One device's copy of a resident graph: its buffers, scratch pools and load.

A session keeps one replica per device of its backend (one for a single-device
backend). Each analysis runs on one replica, chosen by load; a replica whose device
is lost is taken out and its work runs again on the others.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import anyio
import numpy as np

from .._lifecycle import LifecycleState
from ..algorithms import bfs, msbfs, pagerank
from ..algorithms.bfs import BfsScratch
from ..algorithms.msbfs import MsbfsScratch, ScratchShape
from ..algorithms.pagerank import PagerankInputs, PagerankScratch
from ..backends import Backend, ResidentBuffer, SequenceStep
from ..errors import OutOfMemoryError
from ..graphs import CsrGraph
from ..logging import get_logger

_log = get_logger("vyre_async.sessions")

#: Idle multi-source scratches a replica keeps for later traversals of their shape...
MSBFS_IDLE_SETS = 4
#: ...holding at most this many device bytes together (a larger one is freed after use).
MSBFS_IDLE_BYTES = 4 << 30


class GraphReplica:
    """A graph uploaded to one backend, and the scratch buffers runs there reuse.

    Args:
        backend: An open backend.
        index: The replica's position in its session (a device number in messages).
    """

    def __init__(self, backend: Backend, index: int) -> None:
        self.backend = backend
        self.index = index
        self.buffers: dict[str, ResidentBuffer] = {}
        self.free_bfs: list[BfsScratch] = []
        self.free_pr: list[PagerankScratch] = []
        #: Idle multi-source scratches, the least recently used first.
        self.free_msbfs: list[MsbfsScratch] = []
        self.scratch: list[ResidentBuffer] = []
        self.graph_bytes = 0
        self.graph_allocations = 0
        #: Analyses (single runs or batches) running on this replica now.
        self.busy = 0
        #: Why the replica was taken out (its device was lost), or None.
        self.lost: BaseException | None = None
        self._pagerank_inputs: PagerankInputs | None = None
        self._pagerank_lock = anyio.Lock()

    async def upload(self, graph: CsrGraph, arrays: Mapping[str, np.ndarray]) -> None:
        """Upload the graph's device arrays in one group (one allocation)."""
        backend = self.backend
        before = backend.telemetry()
        try:
            buffers = await backend.upload_group(list(arrays.values()))
        except OutOfMemoryError as exc:
            needed = sum(a.nbytes for a in arrays.values())
            raise OutOfMemoryError(
                f"the graph ({graph.num_vertices} vertices, {graph.num_edges} edges) needs "
                f"{needed} bytes on {backend.device_name}, which could not be "
                f"allocated ({exc.what})",
                fix="use a smaller graph or a device with more memory, or free other "
                "resident buffers first.",
            ) from exc
        after = backend.telemetry()
        self.buffers = dict(zip(arrays, buffers, strict=True))
        if graph.symmetric:
            self.buffers["in_offsets"] = self.buffers["offsets"]
            self.buffers["in_indices"] = self.buffers["indices"]
        self.graph_bytes = after.bytes_uploaded - before.bytes_uploaded
        self.graph_allocations = after.resident_allocations - before.resident_allocations

    async def bfs_scratch(self, num_vertices: int) -> tuple[BfsScratch, bool]:
        """Levels and state buffers for one traversal; ``True`` when reused."""
        if self.free_bfs:
            return self.free_bfs.pop(), True
        levels = await self.backend.alloc(4 * num_vertices, np.int32)
        state = await self.backend.alloc(4 * bfs.BFS_STATE_WORDS, np.int32)
        self.scratch += [levels, state]
        return BfsScratch(levels, state), False

    async def pr_scratch(self, num_vertices: int) -> tuple[PagerankScratch, bool]:
        """Two rank buffers, the shares buffer and the state; ``True`` when reused."""
        if self.free_pr:
            return self.free_pr.pop(), True
        nbytes = 4 * num_vertices
        buffers = [await self.backend.alloc(nbytes, np.float32) for _ in range(3)]
        buffers.append(await self.backend.alloc(4 * pagerank.PR_STATE_WORDS, np.float32))
        self.scratch += buffers
        return PagerankScratch(*buffers), False

    async def msbfs_scratch(
        self, num_vertices: int, shape: ScratchShape
    ) -> tuple[MsbfsScratch, bool]:
        """A multi-source scratch of ``shape`` for one traversal; ``True`` when reused.

        Give it back with :meth:`return_msbfs`. Where a new one does not fit, the idle
        ones are freed and it is tried once more.
        """
        free = self.free_msbfs
        for i in range(len(free) - 1, -1, -1):
            if free[i].shape == shape:
                return free.pop(i), True
        try:
            scratch = await msbfs.allocate_scratch(self.backend, self.buffers, num_vertices, shape)
        except OutOfMemoryError:
            if not free:
                raise
            idle, free[:] = free[:], []
            for old in idle:
                await self._drop_msbfs(old)
            scratch = await msbfs.allocate_scratch(self.backend, self.buffers, num_vertices, shape)
        self.scratch += scratch.buffers
        return scratch, False

    async def return_msbfs(self, scratch: MsbfsScratch, *, keep: bool) -> None:
        """Take back a scratch :meth:`msbfs_scratch` gave: kept idle when ``keep`` and
        within :data:`MSBFS_IDLE_SETS` / :data:`MSBFS_IDLE_BYTES`, else freed (once no
        unfinished work uses it: a cancelled traversal's may still run)."""
        free = self.free_msbfs
        if keep and self.buffers and self.lost is None and scratch.nbytes <= MSBFS_IDLE_BYTES:
            free.append(scratch)
            while len(free) > MSBFS_IDLE_SETS or sum(s.nbytes for s in free) > MSBFS_IDLE_BYTES:
                await self._drop_msbfs(free.pop(0))
            return
        await self._drop_msbfs(scratch)

    async def _drop_msbfs(self, scratch: MsbfsScratch) -> None:
        """Free a scratch's buffers, unless :meth:`free_all` freed them already."""
        gone = {b.id for b in scratch.buffers}
        mine = [b for b in self.scratch if b.id in gone]
        if mine:
            self.scratch = [b for b in self.scratch if b.id not in gone]
        if mine and self.backend.state is LifecycleState.OPEN and self.lost is None:
            await msbfs.free_scratch_buffers(self.backend, mine)

    async def pagerank_inputs(self, order: Callable[[], Awaitable[np.ndarray]]) -> PagerankInputs:
        """PageRank's renumbered in-lists and shares order, made by the first call.

        ``order`` gives the host ``rank_of`` (see ``algorithms.pagerank.shares_order``); it is
        uploaded (4 bytes per vertex) and the in-lists renumbered on the device into
        a copy of ``in_indices`` kept until the session closes. Where that copy does
        not fit, PageRank keeps the graph's own order (an identity ``rank_of``): slower
        gathers, no extra memory.
        """
        if self._pagerank_inputs is not None:
            return self._pagerank_inputs
        async with self._pagerank_lock:
            if self._pagerank_inputs is None:
                self._pagerank_inputs = await self._renumber(order)
        return self._pagerank_inputs

    async def _renumber(self, order: Callable[[], Awaitable[np.ndarray]]) -> PagerankInputs:
        backend = self.backend
        in_indices = self.buffers["in_indices"]
        if in_indices.size == 0:  # no edges: nothing to renumber, any order will do
            return PagerankInputs(in_indices, await self._keep(backend.upload(await order())))
        try:
            renumbered = await self._keep(backend.alloc(in_indices.nbytes, np.int32))
        except OutOfMemoryError as exc:
            _log.warning(
                "pagerank_in_graph_order",
                replica=self.index,
                device=backend.device_name,
                needed=in_indices.nbytes,
                error=exc.what,
            )
            identity = np.arange(self.buffers["out_degree"].size, dtype=np.int32)
            return PagerankInputs(in_indices, await self._keep(backend.upload(identity)))
        rank_of = await self._keep(backend.upload(await order()))
        step = SequenceStep(
            pagerank.pr_renumber,
            {"in_indices": in_indices, "rank_of": rank_of, "renumbered": renumbered},
        )
        await backend.submit_sequence([step])
        return PagerankInputs(renumbered, rank_of)

    async def _keep(self, made: Awaitable[ResidentBuffer]) -> ResidentBuffer:
        """Await a new buffer and keep it with the scratch, freed when the session closes."""
        buffer = await made
        self.scratch.append(buffer)
        return buffer

    async def free_all(self) -> None:
        """Free the graph and every scratch buffer; runs even when cancelled."""
        buffers = list({b.id: b for b in (*self.buffers.values(), *self.scratch)}.values())
        self.buffers.clear()
        self.scratch.clear()
        self.free_bfs.clear()
        self.free_pr.clear()
        self.free_msbfs.clear()
        if self.backend.state is not LifecycleState.OPEN or self.lost is not None:
            return  # the backend freed everything when it closed, or cannot any more
        with anyio.CancelScope(shield=True):
            # A cancelled query's sequence may still be running on these buffers.
            await self.backend.settle(buffers)
            for buffer in buffers:
                await self.backend.free(buffer)
