"""The host path of one resident query stays short: a deterministic call count.

Performance is measured by ``bench/level_overhead_ab.py``; this guards the number of
Python calls a lone ``reach_count`` makes around its traversal (the traversal itself
stubbed out), so a layer added to every query shows up here, not only on a GPU.
"""

from __future__ import annotations

import cProfile
import pstats
from typing import Any

import numpy as np
import pytest

import vyre_async as va
from vyre_async.algorithms.bfs import STATE_LEVELS_RUN, STATE_REACHED

#: Calls per lone reach_count around its traversal, measured 40 (the code before the
#: query kinds became units made 33); a little room for the event loop's variants.
MAX_CALLS_PER_QUERY = 44
QUERIES = 200


async def test_a_lone_query_makes_few_python_calls_around_its_traversal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """reach_count's own work (checks, replica choice, scratch, accounting): <= 44 calls."""
    from vyre_async.algorithms.bfs import _kinds

    words = np.zeros(8, np.int32)
    words[STATE_REACHED], words[STATE_LEVELS_RUN] = 5, 3

    async def traversed(*args: Any, **kwargs: Any) -> tuple[np.ndarray, int]:
        return words, 1000

    monkeypatch.setattr(_kinds, "traverse", traversed)
    graph = va.graphs.rmat(6, 4, 1)
    async with va.open_backend("cpu") as backend, va.resident_graph(backend, graph) as session:
        assert await session.reach_count(1) == 5  # the scratch is made, then pooled
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(QUERIES):
            await session.reach_count(1)
        profile.disable()
    calls = pstats.Stats(profile).total_calls / QUERIES  # type: ignore[attr-defined]
    assert calls <= MAX_CALLS_PER_QUERY, calls
