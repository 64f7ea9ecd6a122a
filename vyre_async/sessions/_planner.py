"""The multi-query planner: which traversal queries share a multi-source traversal.

Queries are grouped by what must be equal inside one traversal (graph, kind,
parameters, readback), then each group is cut into chunks that fit the device
memory budget: the resident graph counts against every chunk, since it stays
resident while the chunk runs. The plan is deterministic: the same queries in the
same order give the same chunks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal

import msgspec

from ..errors import ValidationError

TraversalKind = Literal["bfs", "khop", "reach"]
Readback = Literal["levels", "counts", "targets"]

#: Queries one 64-bit word per vertex carries (one bit lane each).
LANES_PER_WORD = 64


class TraversalQuery(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One single-source traversal request.

    Attributes:
        id: Caller's identifier, unique within one plan.
        source: Source vertex.
        kind: ``"bfs"`` (all levels), ``"khop"`` (levels up to ``k``) or ``"reach"``.
        k: Hop limit of a ``"khop"`` query.
        readback: What comes back: every vertex's level, the reached count, or the
            levels of ``targets`` only.
        targets: Vertices whose levels a ``"targets"`` readback returns.
        graph: Key of the resident graph the query runs on.
    """

    id: int | str
    source: Annotated[int, msgspec.Meta(ge=0)]
    kind: TraversalKind = "bfs"
    k: Annotated[int, msgspec.Meta(ge=0)] | None = None
    readback: Readback = "levels"
    targets: tuple[int, ...] = ()
    graph: str = "default"

    @property
    def group(self) -> tuple[object, ...]:
        """What queries sharing one traversal must agree on."""
        return (self.graph, self.kind, self.k, self.readback, self.targets)


class QueryChunk(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Queries that run as one multi-source traversal.

    Attributes:
        queries: The queries, one bit lane each, in plan order.
        words: 64-bit words per vertex (``64 * words`` lanes >= ``len(queries)``).
        scratch_bytes: Device bytes the traversal needs besides the graph.
    """

    queries: tuple[TraversalQuery, ...]
    words: int
    scratch_bytes: int


class MultiQueryPlan(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Chunks in execution order, and the budget they were planned for."""

    chunks: tuple[QueryChunk, ...]
    graph_bytes: int
    budget_bytes: int

    @property
    def num_queries(self) -> int:
        """Queries across all chunks."""
        return sum(len(c.queries) for c in self.chunks)


def chunk_bytes(num_vertices: int, words: int, queries: Iterable[TraversalQuery]) -> int:
    """Device bytes one traversal of these queries needs besides the graph.

    Three bitsets (visited and two frontiers) of ``words`` per vertex, the sources,
    a state block, and each query's readback buffer.
    """
    lanes = LANES_PER_WORD * words
    total = 3 * 8 * num_vertices * words + 4 * lanes + 64
    for q in queries:
        if q.readback == "levels":
            total += 4 * num_vertices
        elif q.readback == "targets":
            total += 4 * len(q.targets)
        else:
            total += 4
    return total


def plan_multi_query(
    queries: Iterable[TraversalQuery],
    *,
    num_vertices: int,
    graph_bytes: int,
    budget_bytes: int,
    max_words: int = 16,
) -> MultiQueryPlan:
    """Group queries and cut groups into chunks that fit the memory budget.

    Args:
        queries: The queries, in the caller's order.
        num_vertices: Vertices of the graph.
        graph_bytes: Device bytes of the resident graph (counted in every chunk).
        budget_bytes: Device bytes the graph plus one chunk may use.
        max_words: Most 64-bit words per vertex (lanes = 64 * words).

    Returns:
        The plan: groups in first-appearance order, each split into chunks of as many
        queries as fit, both lanes and bytes.

    Raises:
        ValidationError: A duplicate id, a source or target out of range, a k-hop
            query without ``k``, or a query that fits no chunk within the budget.
    """
    if max_words < 1:
        raise ValueError(f"max_words must be >= 1, got {max_words}")
    groups: dict[tuple[object, ...], list[TraversalQuery]] = {}
    seen: set[int | str] = set()
    for q in queries:
        _check_query(q, num_vertices, seen)
        groups.setdefault(q.group, []).append(q)
    chunks: list[QueryChunk] = []
    for members in groups.values():
        chunks.extend(_split(members, num_vertices, graph_bytes, budget_bytes, max_words))
    return MultiQueryPlan(tuple(chunks), graph_bytes, budget_bytes)


def _check_query(q: TraversalQuery, num_vertices: int, seen: set[int | str]) -> None:
    if q.id in seen:
        raise ValidationError(
            f"query id {q.id!r} appears more than once",
            fix="give every query its own id (results are keyed by it).",
        )
    seen.add(q.id)
    if not 0 <= q.source < num_vertices:
        raise ValidationError(
            f"query {q.id!r}: source {q.source} is out of range for {num_vertices} vertices",
            fix=f"use a source in [0, {num_vertices - 1}].",
        )
    if (q.kind == "khop") != (q.k is not None):
        raise ValidationError(
            f"query {q.id!r}: k is {'missing' if q.k is None else 'set'} for kind {q.kind!r}",
            fix="set k for 'khop' queries and only for them.",
        )
    if q.readback == "targets":
        bad = [t for t in q.targets if not 0 <= t < num_vertices]
        if not q.targets or bad:
            raise ValidationError(
                f"query {q.id!r}: a 'targets' readback needs targets in [0, {num_vertices - 1}]"
                f", got {list(q.targets)[:5]}",
                fix="pass the vertices whose levels you want, or readback='levels'.",
            )


def _split(
    members: list[TraversalQuery],
    num_vertices: int,
    graph_bytes: int,
    budget_bytes: int,
    max_words: int,
) -> list[QueryChunk]:
    chunks: list[QueryChunk] = []
    start = 0
    while start < len(members):
        # Largest word count whose lanes the remaining queries can use and whose chunk
        # fits; then as many queries as both lanes and bytes allow.
        remaining = len(members) - start
        words = min(max_words, -(-remaining // LANES_PER_WORD))
        while True:
            take = min(remaining, LANES_PER_WORD * words)
            while (
                take
                and graph_bytes + chunk_bytes(num_vertices, words, members[start : start + take])
                > budget_bytes
            ):
                take -= 1
            if take or words == 1:
                break
            words -= 1
        if take == 0:
            first = members[start]
            need = graph_bytes + chunk_bytes(num_vertices, 1, [first])
            raise ValidationError(
                f"query {first.id!r} needs {need} bytes with the graph ({graph_bytes} bytes "
                f"resident), over the budget of {budget_bytes} bytes",
                fix="raise the memory budget, use a smaller graph, or ask for readback="
                "'counts' or 'targets' instead of full levels.",
            )
        words = max(1, -(-take // LANES_PER_WORD))
        group = tuple(members[start : start + take])
        chunks.append(QueryChunk(group, words, chunk_bytes(num_vertices, words, group)))
        start += take
    return chunks
