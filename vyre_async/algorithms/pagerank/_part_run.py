"""Running PageRank on a graph split over the devices of a group.

Every device runs its kernels over its own vertices (see :mod:`._part_kernels`); between
the two halves of an iteration each device's ``send`` slot is copied into every other
device's ``recv`` device to device (:class:`~vyre_async.backends.DeviceLinks`). The host
enqueues several iterations on every device, copies included, then waits once: it reads
device 0's state, which every device keeps the same; batches double.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import anyio
import numpy as np

from ...backends import Backend, PreparedSequence, ResidentBuffer
from ...backends import SequenceStep as Step
from ...graphs import VertexRanges
from ...streams import Completion, PendingDispatch
from .._kind import Partition
from ._part_kernels import (
    pr_part_check,
    pr_part_gather,
    pr_part_header,
    pr_part_init,
    pr_part_share,
    pr_part_update,
)
from ._part_state import PART_DONE, PART_HEADER, PART_ITERATIONS, PART_STATE_WORDS

__all__ = ["PartedPagerankScratch", "part_pagerank_bytes", "run_parted_pagerank"]

#: Iterations enqueued before the first host wait; later batches double up to the cap.
FIRST_ITERATIONS = 8
MAX_ITERATIONS = 64
_KEY: Hashable = ("pagerank", "parts")


def part_pagerank_bytes(ranges: VertexRanges, part: int) -> int:
    """Device bytes a run needs on device ``part`` besides its part of the graph."""
    slot = ranges.chunk + PART_HEADER
    return 4 * (2 * max(ranges.size(part), 1) + slot + ranges.parts * slot + PART_STATE_WORDS)


class PartedPagerankScratch:
    """A split PageRank's buffers on every device, and its sequences bound over them."""

    def __init__(
        self,
        backends: Sequence[Backend],
        buffers: list[dict[str, ResidentBuffer]],
        sequences: list[dict[str, PreparedSequence]],
    ) -> None:
        self._backends = tuple(backends)
        self.buffers = buffers
        self.sequences = sequences
        self.nbytes = sum(b.nbytes for each in buffers for b in each.values())

    async def free(self) -> None:
        """Free every buffer once no unfinished work uses it; runs even when cancelled."""
        await _free(self._backends, self.buffers)


async def _free(backends: Sequence[Backend], buffers: list[dict[str, ResidentBuffer]]) -> None:
    with anyio.CancelScope(shield=True):
        for backend, mine in zip(backends, buffers, strict=False):
            owned = [b for b in mine.values() if backend.owns(b)]
            if owned:
                await backend.settle(owned)
                for buffer in owned:
                    await backend.free(buffer)


async def _allocate(partition: Partition) -> PartedPagerankScratch:
    """Allocate a run's buffers on every device and bind its sequences.

    Raises:
        OutOfMemoryError: A device has no room (nothing is left allocated).
    """
    ranges = partition.ranges
    slot = ranges.chunk + PART_HEADER
    made: list[dict[str, ResidentBuffer]] = []
    sequences: list[dict[str, PreparedSequence]] = []
    try:
        for d, (backend, graph) in enumerate(zip(partition.backends, partition.parts, strict=True)):
            mine: dict[str, ResidentBuffer] = {}
            made.append(mine)
            nd = max(ranges.size(d), 1)
            for name, count in (
                ("rank", nd),
                ("sums", nd),
                ("send", slot),
                ("recv", ranges.parts * slot),
                ("state", PART_STATE_WORDS),
            ):
                mine[name] = await backend.alloc(4 * count, np.float32)
            sequences.append(_bind(backend, graph, mine, ranges, d))
    except BaseException:
        await _free(partition.backends, made)
        raise
    return PartedPagerankScratch(partition.backends, made, sequences)


def _bind(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    mine: dict[str, ResidentBuffer],
    ranges: VertexRanges,
    part: int,
) -> dict[str, PreparedSequence]:
    split = {"parts": ranges.parts, "part": part, "chunk": ranges.chunk}
    n_total = {"n_total": ranges.num_vertices}
    in_offsets, state = graph["in_offsets"], mine["state"]
    init = Step(
        pr_part_init,
        {"in_offsets": in_offsets, "rank": mine["rank"], "sums": mine["sums"], "state": state},
        {"tol": 1e-6, "max_iter": 1, **n_total},
    )
    first_half = [
        Step(
            pr_part_share,
            {
                "in_offsets": in_offsets,
                "out_degree": graph["out_degree"],
                "rank": mine["rank"],
                "send": mine["send"],
                "recv": mine["recv"],
                "state": state,
            },
            {**split, **n_total},
        ),
        Step(
            pr_part_header,
            {"send": mine["send"], "recv": mine["recv"], "state": state},
            split,
        ),
    ]
    second_half = [
        Step(
            pr_part_check,
            {"recv": mine["recv"], "state": state},
            {"parts": ranges.parts, "chunk": ranges.chunk},
        ),
        Step(
            pr_part_gather,
            {
                "in_offsets": in_offsets,
                "in_indices": graph["in_indices"],
                "recv": mine["recv"],
                "sums": mine["sums"],
                "state": state,
            },
            {**split, **n_total},
        ),
        Step(
            pr_part_update,
            {"in_offsets": in_offsets, "rank": mine["rank"], "sums": mine["sums"], "state": state},
            {"damping": 0.85, **n_total},
        ),
    ]
    return {
        "init": backend.prepare_repeated([init], []),
        "first_half": backend.prepare_repeated(first_half, []),
        "second_half": backend.prepare_repeated(second_half, []),
    }


async def run_parted_pagerank(
    partition: Partition, damping: float, tol: float, max_iter: int
) -> tuple[np.ndarray, int]:
    """PageRank of the split graph: float32 ranks of every vertex, and the iterations run.

    Raises:
        VyreError: A kernel or a copy failed (raised once every device's work on the
            scratch has ended).
    """
    scratch: PartedPagerankScratch | None = partition.pooled(_KEY)
    if scratch is None:
        scratch = await partition.scratch(_KEY, lambda: _allocate(partition))
    keep = False
    try:
        ranks, iterations = await _run(partition, scratch, damping, tol, max_iter)
        keep = True
    finally:
        await partition.release(_KEY, scratch, keep=keep)
    return ranks, iterations


async def _run(
    partition: Partition,
    scratch: PartedPagerankScratch,
    damping: float,
    tol: float,
    max_iter: int,
) -> tuple[np.ndarray, int]:
    backends, ranges, links = partition.backends, partition.ranges, partition.links
    slot = ranges.chunk + PART_HEADER
    work: list[PendingDispatch[list[np.ndarray]] | Completion] = []
    try:
        for seqs in scratch.sequences:
            work.append(seqs["init"].submit(0, scalars={"tol": tol, "max_iter": max_iter}))
        batch = FIRST_ITERATIONS
        while True:
            partition.check()
            for _ in range(batch):
                for seqs in scratch.sequences:
                    work.append(seqs["first_half"].submit(0))
                for d in range(ranges.parts):
                    for e in range(ranges.parts):
                        if e != d:
                            work.append(
                                links.copy(
                                    e,
                                    scratch.buffers[e]["send"],
                                    d,
                                    scratch.buffers[d]["recv"],
                                    dst_offset=e * slot,
                                    count=slot,
                                )
                            )
                for seqs in scratch.sequences:
                    work.append(seqs["second_half"].submit(0, scalars={"damping": damping}))
            state = await backends[0].read(scratch.buffers[0]["state"])
            _raise_first(work)
            if state[PART_DONE]:
                break
            batch = min(batch * 2, MAX_ITERATIONS)
        ranks = np.empty(ranges.num_vertices, np.float32)
        for d, (backend, mine) in enumerate(zip(backends, scratch.buffers, strict=True)):
            first, stop = ranges.bounds(d)
            if stop > first:
                ranks[first:stop] = await backend.read(mine["rank"], 0, stop - first)
    finally:
        with anyio.CancelScope(shield=True):
            for backend, mine in zip(backends, scratch.buffers, strict=True):
                await backend.settle(list(mine.values()))
    _raise_first(work)
    return ranks, int(state[PART_ITERATIONS])


def _raise_first(work: list[PendingDispatch[list[np.ndarray]] | Completion]) -> None:
    """Raise the first failure among finished work (never waits)."""
    for item in work:
        error = item.error
        if error is not None:
            raise error
