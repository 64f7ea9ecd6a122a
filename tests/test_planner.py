"""The multi-query planner: grouping, chunking to lanes and memory, refusals."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_async as va
from vyre_async.algorithms.msbfs import TraversalQuery, chunk_bytes, plan_multi_query

V = 1000


def _queries(n: int, **fields: object) -> list[TraversalQuery]:
    return [TraversalQuery(id=i, source=i % V, **fields) for i in range(n)]  # type: ignore[arg-type]


def test_groups_never_mix_and_keep_first_appearance_order() -> None:
    """Queries of different kinds or parameters land in different chunks, in order."""
    queries = [
        TraversalQuery(id="a", source=1),
        TraversalQuery(id="b", source=2, kind="khop", k=2),
        TraversalQuery(id="c", source=3),
        TraversalQuery(id="d", source=4, kind="khop", k=3),
        TraversalQuery(id="e", source=5, kind="khop", k=2),
    ]
    plan = plan_multi_query(queries, num_vertices=V, graph_bytes=0, budget_bytes=1 << 40)
    assert [[q.id for q in c.queries] for c in plan.chunks] == [["a", "c"], ["b", "e"], ["d"]]


@pytest.mark.parametrize(
    ("count", "sizes", "words"),
    [
        (1, [1], [1]),
        (64, [64], [1]),
        (65, [65], [2]),
        (130, [130], [3]),
        (1100, [1024, 76], [16, 2]),
    ],
)
def test_chunks_fill_lanes_up_to_max_words(count: int, sizes: list[int], words: list[int]) -> None:
    """Without memory pressure a chunk takes up to 64 * max_words queries."""
    plan = plan_multi_query(
        _queries(count, readback="counts"), num_vertices=V, graph_bytes=0, budget_bytes=1 << 40
    )
    assert [len(c.queries) for c in plan.chunks] == sizes
    assert [c.words for c in plan.chunks] == words


def test_budget_splits_chunks_and_counts_the_graph_in_each(rng: np.random.Generator) -> None:
    """Every chunk plus the resident graph fits the budget, and every query is planned once."""
    queries = _queries(int(rng.integers(50, 400)))
    graph_bytes = int(rng.integers(0, 200_000))
    budget = graph_bytes + chunk_bytes(V, 1, queries[:7])
    plan = plan_multi_query(queries, num_vertices=V, graph_bytes=graph_bytes, budget_bytes=budget)
    assert all(graph_bytes + c.scratch_bytes <= budget for c in plan.chunks)
    assert [q.id for c in plan.chunks for q in c.queries] == [q.id for q in queries]
    assert max(len(c.queries) for c in plan.chunks) == 7


def test_duplicate_ids_are_refused() -> None:
    """Two queries with one id raise ValidationError with a fix."""
    queries = [TraversalQuery(id=7, source=1), TraversalQuery(id=7, source=2)]
    with pytest.raises(va.ValidationError, match=r"7.*more than once.*Fix:"):
        plan_multi_query(queries, num_vertices=V, graph_bytes=0, budget_bytes=1 << 40)


def test_query_over_budget_is_refused_with_sizes() -> None:
    """A query that fits no chunk names its bytes, the graph's and the budget."""
    with pytest.raises(va.ValidationError, match=r"needs \d+ bytes.*budget of 5000 bytes.*Fix:"):
        plan_multi_query(_queries(1), num_vertices=V, graph_bytes=4000, budget_bytes=5000)


@pytest.mark.parametrize(
    "query",
    [
        TraversalQuery(id=1, source=V),
        TraversalQuery(id=1, source=0, kind="khop"),
        TraversalQuery(id=1, source=0, k=2),
        TraversalQuery(id=1, source=0, readback="targets"),
        TraversalQuery(id=1, source=0, readback="targets", targets=(V,)),
    ],
)
def test_malformed_queries_are_refused(query: TraversalQuery) -> None:
    """Out-of-range sources/targets and k set or missing for the kind raise with a fix."""
    with pytest.raises(va.ValidationError, match="Fix:"):
        plan_multi_query([query], num_vertices=V, graph_bytes=0, budget_bytes=1 << 40)
