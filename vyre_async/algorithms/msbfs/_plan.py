"""The multi-query planner: which traversal queries share a multi-source traversal.

Queries are grouped by what must be equal inside one traversal (graph, kind,
parameters, readback), then each group is cut into chunks that fit the device
memory budget: the resident graph counts against every chunk, since it stays
resident while the chunk runs. The plan is deterministic: the same queries in the
same order give the same chunks. :mod:`vyre_async.sessions` re-exports the planner,
and sessions cut their own multi-source runs with :func:`lane_chunks`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal

import msgspec

from ...errors import ValidationError
from ._layout import MSBFS_LANES_PER_WORD as LANES_PER_WORD

TraversalKind = Literal["bfs", "khop", "reach"]
Readback = Literal["levels", "counts", "targets"]


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

    @property
    def shape(self) -> TraversalShape:
        """The query without its id and source: what its traversal runs."""
        return TraversalShape(self.kind, self.k, self.readback, self.targets, self.graph)


class TraversalShape(msgspec.Struct, frozen=True):
    """What every query of one multi-source traversal shares (all but id and source).

    Attributes:
        kind: As :attr:`TraversalQuery.kind`.
        k: As :attr:`TraversalQuery.k`.
        readback: As :attr:`TraversalQuery.readback`.
        targets: As :attr:`TraversalQuery.targets`.
        graph: As :attr:`TraversalQuery.graph`.
    """

    kind: TraversalKind = "bfs"
    k: int | None = None
    readback: Readback = "levels"
    targets: tuple[int, ...] = ()
    graph: str = "default"

    def query_bytes(self, num_vertices: int) -> int:
        """Device bytes of one query's readback buffer."""
        if self.readback == "levels":
            return 4 * num_vertices
        if self.readback == "targets":
            return 4 * len(self.targets)
        return 4


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
    total = _fixed_bytes(num_vertices, words)
    for q in queries:
        total += q.shape.query_bytes(num_vertices)
    return total


def _fixed_bytes(num_vertices: int, words: int) -> int:
    """The bytes of a traversal of ``words`` per vertex that do not grow per query."""
    return 3 * 8 * num_vertices * words + 4 * LANES_PER_WORD * words + 64


def lane_chunks(
    count: int,
    per_query: int,
    *,
    num_vertices: int,
    graph_bytes: int,
    budget_bytes: int,
    max_words: int,
    first: str = "the first query",
) -> list[tuple[int, int, int]]:
    """Cut ``count`` queries of one shape into traversals that fit lanes and budget.

    Args:
        count: Queries, all of one shape.
        per_query: Device bytes of one query's readback buffer.
        num_vertices: Vertices of the graph.
        graph_bytes: Device bytes of the resident graph (counted in every chunk).
        budget_bytes: Device bytes the graph plus one chunk may use.
        max_words: Most 64-bit words per vertex (lanes = 64 * words).
        first: How an error names the first query.

    Returns:
        ``(start, stop, words)`` per chunk, in order: each as many queries as fit,
        with the fewest words that hold them.

    Raises:
        ValidationError: Not even one query fits the budget.
    """
    room_for_chunks = budget_bytes - graph_bytes
    chunks: list[tuple[int, int, int]] = []
    start = 0
    while start < count:
        # The most words the remaining queries can use whose chunk fits; then as many
        # queries as both lanes and bytes allow.
        remaining = count - start
        words = min(max_words, -(-remaining // LANES_PER_WORD))
        while True:
            room = room_for_chunks - _fixed_bytes(num_vertices, words)
            take = min(remaining, LANES_PER_WORD * words, room // per_query if room > 0 else 0)
            if take or words == 1:
                break
            words -= 1
        if take == 0:
            need = graph_bytes + _fixed_bytes(num_vertices, 1) + per_query
            raise ValidationError(
                f"{first} needs {need} bytes with the graph ({graph_bytes} bytes "
                f"resident), over the budget of {budget_bytes} bytes",
                fix="raise the memory budget, use a smaller graph, or ask for readback="
                "'counts' or 'targets' instead of full levels.",
            )
        stop = start + take
        chunks.append((start, stop, -(-take // LANES_PER_WORD)))
        start = stop
    return chunks


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
        for start, stop, words in lane_chunks(
            len(members),
            members[0].shape.query_bytes(num_vertices),
            num_vertices=num_vertices,
            graph_bytes=graph_bytes,
            budget_bytes=budget_bytes,
            max_words=max_words,
            first=f"query {members[0].id!r}",
        ):
            group = tuple(members[start:stop])
            chunks.append(QueryChunk(group, words, chunk_bytes(num_vertices, words, group)))
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
