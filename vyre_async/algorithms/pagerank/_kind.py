"""The ``pagerank`` kind: the whole graph's PageRank, one query (one job item) per run.

The first run on each replica uploads the order the shares are stored in (hubs
first, 4 bytes per vertex, worked out once per session on the host) and renumbers a
copy of the in-lists to it on the device (4 bytes per edge), both kept until the
session closes; where that copy does not fit, PageRank runs in the graph's own order
and logs a warning.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
import numpy as np

from ...backends import SequenceStep
from ...errors import OutOfMemoryError, ValidationError
from ...graphs import VertexRanges
from ...kernels import Kernel
from ...logging import get_logger
from .._kind import Params, Partition, QueryKind, RecordField, Replica, Summary
from ._kernels import PAGERANK_KERNELS, pr_renumber
from ._part_run import part_pagerank_bytes, run_parted_pagerank
from ._run import PagerankInputs, PagerankScratch, run_pagerank, shares_order
from ._state import PR_STATE_WORDS

__all__ = ["PAGERANK", "PagerankParams"]

_log = get_logger("vyre_async.sessions")
_SCRATCH_KEY = ("pagerank", "run")
_INPUTS_KEY = ("pagerank", "inputs")
_ORDER_KEY = ("pagerank", "order")


class PagerankParams(Params, frozen=True, kw_only=True):
    """``pagerank``: pull iteration in float32, dangling mass spread uniformly.

    Attributes:
        damping: Probability of following an edge, in (0, 1).
        tol: Stop once the L1 change of one iteration is below ``tol``.
        max_iter: Stop after this many iterations at the latest.
    """

    damping: Annotated[float, msgspec.Meta(gt=0.0, lt=1.0)] = 0.85
    tol: Annotated[float, msgspec.Meta(gt=0.0, le=1.0)] = 1e-6
    max_iter: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 100


class PagerankKind(QueryKind[PagerankParams]):
    """PageRank of the whole graph: float32 ranks summing to 1."""

    name = "pagerank"
    params = PagerankParams
    takes_sources = False
    record_fields: ClassVar[tuple[RecordField, ...]] = (
        ("top_vertex", "int"),
        ("top_rank", "float"),
    )

    def kernels(self, params: PagerankParams) -> tuple[Kernel, ...]:
        """The power iteration's, and the renumbering of the in-lists."""
        return PAGERANK_KERNELS

    def check_params(self, params: PagerankParams, num_vertices: int) -> None:
        """Damping in (0, 1), a positive tolerance, at least one iteration."""
        if not 0.0 < params.damping < 1.0:
            raise ValidationError(
                f"damping must be in (0, 1), got {params.damping}", fix="pass e.g. damping=0.85."
            )
        if not params.tol > 0:
            raise ValidationError(
                f"tol must be positive, got {params.tol}", fix="pass e.g. tol=1e-6."
            )
        max_iter = params.max_iter
        if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
            raise ValidationError(
                f"max_iter must be a positive int, got {max_iter!r}", fix="pass max_iter >= 1."
            )

    async def run_one(
        self, replica: Replica, params: PagerankParams, source: int | None, out: Any = None
    ) -> np.ndarray:
        """Run PageRank on ``replica`` (into ``out``, as ``Backend.read`` takes one).

        The first run's upload and renumbering count in its measurement.
        """
        async with replica.measure() as run:
            inputs = await replica.derived(_INPUTS_KEY, lambda: _renumbered(replica))
            scratch: PagerankScratch | None = replica.pooled(_SCRATCH_KEY)
            if scratch is None:
                scratch = await replica.scratch(_SCRATCH_KEY, lambda: _scratch(replica))
            keep = False
            try:
                ranks, run.levels, run.device_ns = await run_pagerank(
                    replica.backend,
                    replica.buffers,
                    inputs,
                    scratch,
                    (params.damping, params.tol, params.max_iter),
                    replica.check,
                    out,
                )
                keep = True
            finally:
                await replica.release(_SCRATCH_KEY, scratch, keep=keep)
        return ranks

    def part_scratch_bytes(self, ranges: VertexRanges, part: int) -> int:
        """A split run's ranks, sums, slots and state on ``part``."""
        return part_pagerank_bytes(ranges, part)

    async def run_partitioned(
        self,
        partition: Partition,
        params: PagerankParams,
        sources: np.ndarray | None,
        budget_bytes: int | None = None,
    ) -> np.ndarray:
        """PageRank on a graph split over several devices: the float32 ranks, as
        :meth:`run_one` gives them (``sources`` and ``budget_bytes`` are not used)."""
        async with partition.measure() as run:
            ranks, run.levels = await run_parted_pagerank(
                partition, params.damping, params.tol, params.max_iter
            )
        return ranks

    def row_bytes(self, params: PagerankParams, num_vertices: int) -> int:
        """4 bytes per vertex."""
        return 4 * num_vertices

    def summarize(self, params: PagerankParams, sources: np.ndarray, result: np.ndarray) -> Summary:
        """The top vertex and its rank; the ranks are the item's array."""
        top = int(np.argmax(result)) if result.size else -1
        return Summary(
            {
                "top_vertex": np.array([top], np.int64),
                "top_rank": np.array([float(result[top]) if top >= 0 else np.nan]),
            },
            [result],
        )


#: The registered PageRank kind.
PAGERANK = PagerankKind()


async def _scratch(replica: Replica) -> PagerankScratch:
    """Two rank buffers, the shares buffer and the state words."""
    backend = replica.backend
    made = []
    try:
        for _ in range(3):
            made.append(await backend.alloc(4 * replica.num_vertices, np.float32))
        made.append(await backend.alloc(4 * PR_STATE_WORDS, np.float32))
    except BaseException:
        for buffer in made:
            await backend.free(buffer)
        raise
    return PagerankScratch(*made)


async def _renumbered(replica: Replica) -> PagerankInputs:
    """The shares order uploaded and the in-lists renumbered to it, kept by the replica.

    Where the renumbered copy does not fit, the graph's own order (an identity
    ``rank_of``): slower gathers, no extra memory.
    """
    backend = replica.backend
    graph = replica.graph
    in_indices = replica.buffers["in_indices"]
    if in_indices.size == 0:  # no edges: nothing to renumber, any order will do
        order = await replica.host_derived(_ORDER_KEY, lambda: shares_order(graph.out_degree()))
        return PagerankInputs(in_indices, replica.hold(await backend.upload(order)))
    try:
        renumbered = replica.hold(await backend.alloc(in_indices.nbytes, np.int32))
    except OutOfMemoryError as exc:
        _log.warning(
            "pagerank_in_graph_order",
            device=backend.device_name,
            needed=in_indices.nbytes,
            error=exc.what,
        )
        identity = np.arange(replica.num_vertices, dtype=np.int32)
        return PagerankInputs(in_indices, replica.hold(await backend.upload(identity)))
    order = await replica.host_derived(_ORDER_KEY, lambda: shares_order(graph.out_degree()))
    rank_of = replica.hold(await backend.upload(order))
    step = SequenceStep(
        pr_renumber, {"in_indices": in_indices, "rank_of": rank_of, "renumbered": renumbered}
    )
    await backend.submit_sequence([step])
    return PagerankInputs(renumbered, rank_of)
