"""The ``ppr`` kind: personalized PageRank of one seed per query, many seeds per pass.

Concurrent single queries (``session.ppr(seed)``) coalesce in the batcher into one run
of many (:attr:`PprKind.lanes` seeds), which carries its seeds as the columns of one
power iteration (:mod:`._kernels`), in passes that fit the device memory budget. A
query without a seed runs a dense personalization (``session.pagerank(
personalization=...)``), carried by :class:`PersonalizedParams`. What every run shares
is made once per replica: each in-edge's share of its source's rank (4 bytes per
edge), and on the host the vertices without out-edges.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
import numpy as np

from ...backends import SequenceStep
from ...errors import ValidationError
from ...kernels import Kernel
from .._kind import DEFAULT_QUERY_BUDGET, Params, QueryKind, RecordField, Replica, Summary
from ._kernels import PPR_KERNELS, ppr_shares
from ._layout import MAX_COLUMNS, PPR_MAX_ITER_LIMIT
from ._results import TopRanks, top_pairs, top_ranks
from ._run import (
    GRAPH_BUFFERS,
    PprRun,
    PprScratch,
    PprShape,
    Teleport,
    allocate_scratch,
    personalized_ranks,
    plan_columns,
)
from ._top_kernels import PPR_TOP_KERNELS

__all__ = ["PPR", "PersonalizedParams", "PprParams"]

_SHARES_KEY = ("ppr", "shares")
_DANGLING_KEY = ("ppr", "dangling")


class PprParams(Params, frozen=True, kw_only=True):
    """``ppr``: personalized PageRank of each source (its seed), float32.

    A walk restarts at the seed with probability ``1 - damping`` at each step, and
    always from a vertex without out-edges (NetworkX's ``dangling=None``), so each
    seed's ranks sum to 1.

    Attributes:
        damping: Probability of following an edge, in (0, 1).
        tol: A seed stops iterating once its L1 change is below ``tol``.
        max_iter: Every seed stops after this many iterations at the latest.
        top_k: Return each seed's ``top_k`` highest-ranked vertices (at most V) and
            their ranks, best first, ties to the smaller vertex; ``None``: every
            vertex's rank.
    """

    damping: Annotated[float, msgspec.Meta(gt=0.0, lt=1.0)] = 0.85
    tol: Annotated[float, msgspec.Meta(gt=0.0, le=1.0)] = 1e-6
    max_iter: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 100
    top_k: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)] | None = None


class PersonalizedParams(PprParams, frozen=True, kw_only=True):
    """A query without a seed: PageRank teleporting to a dense distribution.

    What ``session.pagerank(personalization=...)`` runs for a list of vertices or a
    weight vector; not a job workload's field.

    Attributes:
        personalization: The distribution's float32 values, little-endian bytes, one
            per vertex, summing to 1 (``teleport_vector`` makes them).
    """

    personalization: bytes = b""

    def vector(self) -> np.ndarray:
        """The distribution as a float32 array."""
        return np.frombuffer(self.personalization, dtype="<f4").astype(np.float32)


class PprKind(QueryKind[PprParams]):
    """Personalized PageRank: float32 ranks summing to 1 per seed, or its top k."""

    name = "ppr"
    params = PprParams
    lanes: ClassVar[int] = MAX_COLUMNS
    record_fields: ClassVar[tuple[RecordField, ...]] = (
        ("top_vertex", "int"),
        ("top_rank", "float"),
    )

    # ------------------------------------------------------------------ sessions
    def kernels(self, params: PprParams) -> tuple[Kernel, ...]:
        """The power iteration's, and with ``top_k`` the selection's."""
        top = PPR_TOP_KERNELS if params.top_k is not None else ()
        return (*PPR_KERNELS, *top)

    def check_params(self, params: PprParams, num_vertices: int) -> None:
        """Damping in (0, 1), a positive tolerance, at least one iteration, a positive
        ``top_k``, and a personalization of one value per vertex."""
        damping, tol = params.damping, params.tol
        if not isinstance(damping, int | float) or not 0.0 < damping < 1.0:
            raise ValidationError(
                f"damping must be in (0, 1), got {damping!r}", fix="pass e.g. damping=0.85."
            )
        if not isinstance(tol, int | float) or not tol > 0:
            raise ValidationError(f"tol must be positive, got {tol!r}", fix="pass e.g. tol=1e-6.")
        for name, value in (("max_iter", params.max_iter), ("top_k", params.top_k)):
            if name == "top_k" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(
                    f"{name} must be a positive int, got {value!r}",
                    fix=f"pass {name} >= 1"
                    + (", or None for every rank." if name == "top_k" else "."),
                )
        if (
            isinstance(params, PersonalizedParams)
            and len(params.personalization) != 4 * num_vertices
        ):
            raise ValidationError(
                f"the personalization holds {len(params.personalization) // 4} values for a "
                f"graph of {num_vertices} vertices",
                fix="make it with teleport_vector(value, num_vertices).",
            )

    async def run_one(
        self, replica: Replica, params: PprParams, source: int | None, out: Any = None
    ) -> Any:
        """One seed (``source``), or the dense personalization of :class:`PersonalizedParams`
        (``source`` ``None``): the ranks (into ``out``), or the top k."""
        if source is None:
            if not isinstance(params, PersonalizedParams):
                raise ValueError("a 'ppr' query without a seed needs PersonalizedParams")
            rows = await _run(replica, params, np.zeros(0, np.int32), None, out)
        else:
            rows = await _run(replica, params, np.array([source], np.int32), None, out)
        if out is not None and params.top_k is None:
            return rows
        return await self.unpack(params, rows[0])

    async def run_many(
        self,
        replica: Replica,
        params: PprParams,
        sources: np.ndarray,
        budget_bytes: int | None = None,
    ) -> np.ndarray:
        """One row per seed: ranks ``(n, V)`` float32, or packed top-k ``(n, 2, k)``
        int32 (:func:`~._results.top_ranks` unpacks them)."""
        rows: np.ndarray = await _run(replica, params, sources, budget_bytes, None)
        return rows

    async def unpack(self, params: PprParams, row: np.ndarray) -> Any:
        """The ranks as they are; a top-k row as a :class:`~._results.TopRanks`."""
        return row if params.top_k is None else top_ranks(row)

    def no_rows(self, params: PprParams, num_vertices: int) -> np.ndarray:
        """Empty rows of the result's width."""
        if params.top_k is None:
            return np.zeros((0, num_vertices), np.float32)
        return np.zeros((0, 2, min(params.top_k, num_vertices)), np.int32)

    # ---------------------------------------------------------------------- jobs
    def row_bytes(self, params: PprParams, num_vertices: int) -> int:
        """4 bytes per rank, or 8 per top-k pair."""
        if params.top_k is None:
            return 4 * num_vertices
        return 8 * min(params.top_k, num_vertices)

    def keeps_arrays(self, params: PprParams) -> bool:
        """Always: the ranks, or the top-k pairs."""
        return True

    def summarize(self, params: PprParams, sources: np.ndarray, result: np.ndarray) -> Summary:
        """The top vertex and its rank; the item's array is its ranks (float32), or its
        top-k (vertex, rank) pairs (:data:`~._results.TOP_PAIR`)."""
        if params.top_k is None:
            if result.shape[1] == 0:
                top = np.full(len(result), -1, np.int64)
                return Summary({"top_vertex": top, "top_rank": np.full(len(result), np.nan)})
            top = np.argmax(result, axis=1)
            best = result[np.arange(len(result)), top].astype(np.float64)
            return Summary({"top_vertex": top.astype(np.int64), "top_rank": best}, list(result))
        found: TopRanks = top_ranks(result)
        return Summary(
            {
                "top_vertex": found.vertices[:, 0].astype(np.int64),
                "top_rank": found.ranks[:, 0].astype(np.float64),
            },
            [top_pairs(row) for row in result],
        )


#: The registered personalized PageRank kind.
PPR = PprKind()


async def _run(
    replica: Replica,
    params: PprParams,
    seeds: np.ndarray,
    budget_bytes: int | None,
    out: Any,
) -> Any:
    """Seeds (or the dense personalization) in passes on ``replica``."""
    shares = await replica.derived(_SHARES_KEY, lambda: _shares(replica))
    graph = {name: replica.buffers[name] for name in GRAPH_BUFFERS[:3]} | {"shares": shares}
    num_vertices = replica.num_vertices
    top_k = min(params.top_k, num_vertices) if params.top_k is not None else 0
    max_iter = min(params.max_iter, PPR_MAX_ITER_LIMIT)  # the state counts no further
    teleport = Teleport(params.damping, params.tol, max_iter)
    if isinstance(params, PersonalizedParams):
        personal = params.vector()
        dangling = await replica.host_derived(
            _DANGLING_KEY, lambda: replica.graph.out_degree() == 0
        )
        mass = float(personal[dangling].sum(dtype=np.float64))
        teleport = Teleport(params.damping, params.tol, max_iter, personal, mass)
    budget = (
        DEFAULT_QUERY_BUDGET
        if budget_bytes is None
        else budget_bytes - replica.graph_bytes - shares.nbytes
    )
    dense = teleport.personal is not None
    columns = plan_columns(num_vertices, top_k, 1 if dense else len(seeds), budget)
    shape: PprShape = ("ppr", num_vertices, 1 if dense else columns, top_k, dense)
    scratch: PprScratch | None = replica.pooled(shape)
    if scratch is None:
        scratch = await replica.scratch(shape, lambda: allocate_scratch(replica.backend, shape))
    done = False
    try:
        async with replica.measure() as measure:
            run = PprRun()
            rows = await personalized_ranks(
                replica.backend, graph, scratch, seeds, teleport, replica.check, run=run, out=out
            )
            measure.levels, measure.device_ns = run.iterations, run.device_ns
        done = True
    finally:
        await replica.release(shape, scratch, keep=done)
    return rows


async def _shares(replica: Replica) -> Any:
    """Each in-edge's share of its source's rank, made on the device once per replica."""
    backend = replica.backend
    in_indices = replica.buffers["in_indices"]
    shares = replica.hold(await backend.alloc(4 * in_indices.size, np.float32))
    buffers = {"in_indices": in_indices, "out_degree": replica.buffers["out_degree"]}
    await backend.submit_sequence([SequenceStep(ppr_shares, {**buffers, "shares": shares})])
    return shares
