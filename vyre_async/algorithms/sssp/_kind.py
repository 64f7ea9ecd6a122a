"""The ``sssp`` kind: single-source shortest paths on a weighted resident graph.

One query runs :func:`~._run.shortest_paths`; many (a batch of concurrent callers,
``sssp_many``, a job's block) run as :func:`~._plan.plan_many` plans them: as lanes of
one traversal where the degrees are even (grids, road networks), one source at a time
where they are skewed (R-MAT), where lanes were measured slower. What every run
shares is made once per replica: the weights on the device (the graph's own, checked
non-negative once per session), the graph's statistics and bucket width, and the
light graph for that width.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

import msgspec
import numpy as np

from ...errors import ValidationError
from ...graphs import CsrGraph
from ...kernels import Kernel
from .._kind import DEFAULT_QUERY_BUDGET, Params, QueryKind, RecordField, Replica, Summary
from ._delta import choose_delta
from ._graph import GraphStats, build_light_graph, measure_graph
from ._kernels import SSSP_KERNELS
from ._layout import STATE_REACHED, STATE_ROUND
from ._many import ManyRun, shortest_paths_many
from ._many_kernels import SSSP_MANY_KERNELS
from ._plan import allocate_shape, plan_many
from ._run import ScratchShape, SsspScratch, allocate_scratch, shortest_paths

__all__ = ["SSSP", "SsspParams"]

#: What a query brings back: every vertex's distance, or how many are within the bound.
Readback = Literal["distances", "counts"]
_WEIGHTS_KEY = ("sssp", "weights")
_LIGHT_KEY = ("sssp", "light")
_STATS_KEY = ("sssp", "stats")
_CHECKED_KEY = ("sssp", "non-negative")


class SsspParams(Params, frozen=True, kw_only=True):
    """``sssp``: shortest distances over the graph's float32 weights.

    Attributes:
        readback: ``"counts"`` (vertices within ``max_distance``, the source included)
            or ``"distances"`` (every vertex's, +inf where unreached or beyond the
            bound).
        max_distance: Distances beyond it are not followed (``None``: no bound).
    """

    readback: Readback = "counts"
    max_distance: Annotated[float, msgspec.Meta(ge=0.0)] | None = None

    @property
    def bound(self) -> float:
        """``max_distance`` as the engine takes it (``inf``: no bound)."""
        return math.inf if self.max_distance is None else float(self.max_distance)


class SsspKind(QueryKind[SsspParams]):
    """Shortest distances from a source: float32, 0 at the source, +inf where unreached."""

    name = "sssp"
    params = SsspParams
    lanes: ClassVar[int] = 1024
    record_fields: ClassVar[tuple[RecordField, ...]] = (
        ("reached", "int"),
        ("max_distance", "float"),
    )
    graph_fix: ClassVar[str] = (
        "give the graph weights: weights= when you build it (CsrGraph.from_edges, "
        'graphs.rmat(..., weights="uniform")), or in a job [graph] weights = "uniform" for '
        "R-MAT, a weight_column, or a file with weights."
    )

    def kernels(self, params: SsspParams) -> tuple[Kernel, ...]:
        """One source's engine and many sources' engine (with the light graph's build)."""
        return (*SSSP_KERNELS, *SSSP_MANY_KERNELS)

    def check_params(self, params: SsspParams, num_vertices: int) -> None:
        """A bound that is a number >= 0."""
        bound = params.max_distance
        if bound is not None and not (isinstance(bound, int | float) and bound >= 0):
            raise ValidationError(
                f"max_distance must be a number >= 0 or None, got {bound!r}",
                fix="pass e.g. max_distance=2.5, or None for no bound.",
            )

    def graph_problem(self, params: SsspParams, *, weighted: bool) -> str | None:
        """Shortest paths need edge weights."""
        return None if weighted else "kind 'sssp' needs edge weights, and the graph has none"

    async def run_one(
        self, replica: Replica, params: SsspParams, source: int | None, out: Any = None
    ) -> Any:
        """One source: the distances (into ``out``), or the count within the bound."""
        if source is None:
            raise ValueError("an 'sssp' query needs a source")
        graph, delta = await _prepared(replica)
        key: ScratchShape = ("sssp", replica.num_vertices, replica.graph.num_edges)
        scratch: SsspScratch | None = replica.pooled(key)
        if scratch is None:
            scratch = await replica.scratch(key, lambda: _one_scratch(replica, key))
        try:
            async with replica.measure() as run:
                words, run.device_ns = await shortest_paths(
                    replica.backend,
                    graph,
                    scratch,
                    source,
                    replica.check,
                    max_distance=params.bound,
                    delta=delta,
                )
                run.levels = int(words[STATE_ROUND])
                if params.readback == "counts":
                    return int(words[STATE_REACHED])
                return await replica.backend.read(scratch.dist, out=out)
        finally:
            await replica.release(key, scratch, keep=True)

    async def run_many(
        self,
        replica: Replica,
        params: SsspParams,
        sources: np.ndarray,
        budget_bytes: int | None = None,
    ) -> np.ndarray:
        """One row per source: distances ``(n, V)`` or counts ``(n,)``, as lanes or one
        at a time (:func:`~._plan.plan_many`)."""
        if len(sources) == 1:
            answer = await self.run_one(replica, params, int(sources[0]))
            return np.array([answer], np.int32) if params.readback == "counts" else answer[None]
        graph, delta = await _prepared(replica)
        stats: GraphStats = await replica.derived(_STATS_KEY, lambda: _stats(replica))
        budget = (
            DEFAULT_QUERY_BUDGET if budget_bytes is None else budget_bytes - replica.graph_bytes
        )
        shape = plan_many(stats, len(sources), params.readback, max(budget, 0))
        scratch = replica.pooled(shape)
        if scratch is None:
            scratch = await replica.scratch(shape, lambda: allocate_shape(replica.backend, shape))
        done = False
        try:
            async with replica.measure() as run:
                many = ManyRun()
                rows = await shortest_paths_many(
                    replica.backend,
                    graph,
                    scratch,
                    sources,
                    replica.check,
                    readback=params.readback,
                    max_distance=params.bound,
                    delta=delta if isinstance(scratch, SsspScratch) else None,
                    run=many,
                )
                run.levels, run.device_ns = many.steps, many.device_ns
            done = True
        finally:
            await replica.release(shape, scratch, keep=done)
        return rows

    async def unpack(self, params: SsspParams, row: np.ndarray) -> Any:
        """A count as an int; distances as they are."""
        return int(row) if params.readback == "counts" else row

    def no_rows(self, params: SsspParams, num_vertices: int) -> np.ndarray:
        """Empty rows of the readback's width."""
        if params.readback == "counts":
            return np.zeros(0, np.int32)
        return np.zeros((0, num_vertices), np.float32)

    # ---------------------------------------------------------------------- jobs
    def row_bytes(self, params: SsspParams, num_vertices: int) -> int:
        """4 bytes per distance (or per count)."""
        return 4 * num_vertices if params.readback == "distances" else 4

    def keeps_arrays(self, params: SsspParams) -> bool:
        """Distances are each item's array."""
        return params.readback == "distances"

    def summarize(self, params: SsspParams, sources: np.ndarray, result: np.ndarray) -> Summary:
        """Counts; with distances also the largest finite distance and each row."""
        if params.readback == "counts":
            return Summary({"reached": result.astype(np.int64, copy=False)})
        finite = np.isfinite(result)
        reached = finite.sum(axis=1, dtype=np.int64)
        farthest = np.where(finite, result, -np.inf).max(axis=1, initial=-np.inf)
        farthest = np.where(reached > 0, farthest, np.nan).astype(np.float64)
        return Summary({"reached": reached, "max_distance": farthest}, list(result))


#: The registered shortest-paths kind.
SSSP = SsspKind()


async def _prepared(replica: Replica) -> tuple[dict[str, Any], float]:
    """The graph's buffers with its weights and light graph, and the bucket width."""
    await replica.host_derived(_CHECKED_KEY, lambda: _check_lengths(replica.graph))
    weights = await replica.derived(_WEIGHTS_KEY, lambda: _upload_weights(replica))
    base = {"offsets": replica.buffers["offsets"], "indices": replica.buffers["indices"]}
    base["weights"] = weights
    stats: GraphStats = await replica.derived(_STATS_KEY, lambda: _stats(replica))
    delta = choose_delta(stats.num_vertices, stats.num_edges, stats.weight_sum, stats.max_degree)
    light = await replica.derived(_LIGHT_KEY, lambda: _light(replica, base, delta))
    return {**base, **light}, delta


def _check_lengths(graph: CsrGraph) -> bool:
    """Refuse a graph without weights, or with a negative one (naming the edge)."""
    weights = graph.weights
    if weights is None:
        raise ValidationError(
            "shortest paths need edge weights, and this graph has none", fix=SSSP.graph_fix
        )
    if weights.size and float(weights.min()) < 0:
        edge = int(np.argmax(weights < 0))
        row = int(np.searchsorted(graph.offsets, edge, side="right")) - 1
        raise ValidationError(
            f"edge {edge} ({row} -> {int(graph.indices[edge])}) has weight "
            f"{float(weights[edge])!r}: shortest paths need weights >= 0",
            fix="shift or drop the negative weights, or use another kind of query.",
        )
    return True


async def _one_scratch(replica: Replica, shape: ScratchShape) -> SsspScratch:
    return await allocate_scratch(replica.backend, shape[1], shape[2])


async def _upload_weights(replica: Replica) -> Any:
    weights = replica.graph.weights
    if weights is None:  # _check_lengths refused it already
        raise ValueError("a graph without weights")
    return replica.hold(await replica.backend.upload(weights))


async def _stats(replica: Replica) -> GraphStats:
    weights = await replica.derived(_WEIGHTS_KEY, lambda: _upload_weights(replica))
    graph = {name: replica.buffers[name] for name in ("offsets", "indices")}
    return await measure_graph(replica.backend, {**graph, "weights": weights})


async def _light(replica: Replica, graph: dict[str, Any], delta: float) -> dict[str, Any]:
    light = await build_light_graph(replica.backend, graph, delta)
    if light.owned:
        for buffer in light.buffers.values():
            replica.hold(buffer)
    return dict(light.buffers)
