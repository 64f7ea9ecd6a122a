"""Each query kind names the kernels its runs launch, which a job loads ahead of them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import vyre_async as va
from vyre_async.algorithms import Params, QueryKind, lookup
from vyre_async.backends import _cpu
from vyre_async.graphs import with_uniform_weights
from vyre_async.kernels import Kernel, builtin_kernels

#: Every kind with the parameters whose runs take each path of it (readbacks, top-k).
CASES: list[tuple[str, dict[str, Any]]] = [
    ("bfs", {}),
    ("bfs", {"readback": "levels"}),
    ("bfs", {"readback": "parents"}),
    ("bfs", {"readback": "targets", "targets": (0, 1)}),
    ("khop", {"k": 2}),
    ("khop", {"k": 2, "readback": "levels"}),
    ("reach", {}),
    ("bfs_path", {"target": 3}),
    ("components", {}),
    ("pagerank", {}),
    ("ppr", {"max_iter": 5}),
    ("ppr", {"max_iter": 5, "top_k": 4}),
    ("sssp", {}),
    ("sssp", {"readback": "distances"}),
]


def test_every_registered_kind_is_covered() -> None:
    """A new kind gets a case here, so its kernels are checked too."""
    assert {name for name, _ in CASES} == set(va.algorithms.kind_names())


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch) -> list[Kernel]:
    """The kernels the CPU backend runs, in order."""
    seen: list[Kernel] = []
    reference_of = _cpu._reference_of

    def noting(call: Any) -> Any:
        seen.append(call.kernel)
        return reference_of(call)

    monkeypatch.setattr(_cpu, "_reference_of", noting)
    return seen


@pytest.mark.parametrize(("name", "fields"), CASES, ids=[f"{n}-{f}" for n, f in CASES])
async def test_a_kinds_runs_launch_only_the_kernels_it_names(
    name: str, fields: dict[str, Any], launched: list[Kernel], rng: np.random.Generator
) -> None:
    """One query alone and a batch of them launch kernels the kind's ``kernels()`` lists."""
    kind: QueryKind[Any] = lookup(name)
    params: Params = kind.params(**fields)
    graph = with_uniform_weights(va.graphs.rmat(7, 4, seed=int(rng.integers(1 << 16))), 3)
    sources = rng.integers(0, graph.num_vertices, 5).astype(np.int32)
    async with (
        va.open_backend("cpu") as backend,
        va.resident_graph(backend, graph) as session,
    ):
        if kind.takes_sources:
            await session.query(kind, int(sources[0]), params)
            await session.query_many(kind, sources, params)
        else:
            await session.query(kind, None, params)
    named = set(kind.kernels(params))
    assert launched, "the runs launched nothing"
    assert {k.name for k in launched} <= {k.name for k in named}
    assert named <= set(builtin_kernels())  # the simulated driver and the caches know them
