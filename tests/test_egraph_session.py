"""E-graph canonicalization on the CPU backend, against a plain-Python congruence closure."""

from __future__ import annotations

import anyio
import numpy as np
import numpy.testing as npt
import pytest
from egraph_references import (
    assert_same_partition,
    congruence_closure,
    random_egraph,
    signature,
)

import vyre_async as va
from vyre_async.algorithms.egraph import (
    EGRAPH_STATE_WORDS,
    Canonicalization,
    EGraphSnapshot,
    egraph_merge,
    plan_egraph_upload,
)
from vyre_async.testing import assert_no_resident_leaks

SHAPES = {
    "chains": {"base_classes": 60, "ops": 6, "chains": 4, "depth": 6},
    "dense_congruences": {"base_classes": 25, "ops": 2, "duplicates": 40, "chains": 1},
    "many_ops_few_merges": {"base_classes": 200, "ops": 40, "duplicates": 5, "chains": 0},
    "tiny": {"base_classes": 3, "ops": 1, "duplicates": 2, "chains": 1, "depth": 1},
}


def _check(result: Canonicalization, rows: list, num_classes: int, deepest: int) -> None:
    want, rounds = congruence_closure(rows, num_classes)
    assert result.class_map.dtype == np.uint32
    assert_same_partition(result.class_map, want)
    # Canonical ids are each class's smallest member, whatever order rows came in.
    assert (result.class_map <= np.arange(num_classes)).all()
    npt.assert_array_equal(result.class_map[result.class_map], result.class_map)
    assert result.rounds == rounds
    assert result.rounds >= deepest + 2  # a depth-d chain merges in round d + 1, then one more
    assert result.num_canonical_classes == len(set(want))


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_fixed_point_equals_python_congruence_closure(
    rng: np.random.Generator, shape: str
) -> None:
    """canonicalize() gives the congruence closure's partition, in the same rounds."""
    rows, num_classes, deepest = random_egraph(rng, **SHAPES[shape])
    snapshot = EGraphSnapshot.from_rows(rows, num_classes=num_classes)
    async with va.open_backend("cpu") as backend:
        async with va.egraph_session(backend, snapshot) as session:
            _check(await session.canonicalize(), rows, num_classes, deepest)
            signatures = await session.read_signatures()
            again = await session.canonicalize()  # a second run starts from scratch
        assert_no_resident_leaks(backend.telemetry())
    final = again.class_map
    assert [int(s) for s in signatures] == [
        signature(op, [int(final[k]) for k in kids]) for _, op, kids in rows
    ]
    _check(again, rows, num_classes, deepest)


async def test_classes_without_rows_and_empty_graphs_stay_apart(rng: np.random.Generator) -> None:
    """Unused class ids map to themselves; an e-graph with no rows takes one round."""
    rows, num_classes, deepest = random_egraph(rng, base_classes=30, chains=1, depth=2)
    extra = int(rng.integers(1, 20))
    snapshot = EGraphSnapshot.from_rows(rows, num_classes=num_classes + extra)
    async with va.open_backend("cpu") as backend:
        async with va.egraph_session(backend, plan_egraph_upload(snapshot)) as session:
            result = await session.canonicalize()
        _check(result, rows, num_classes + extra, deepest)
        npt.assert_array_equal(
            result.class_map[num_classes:], np.arange(num_classes, num_classes + extra)
        )
        empty = EGraphSnapshot([], [], [0], [], num_classes=extra)
        async with va.egraph_session(backend, empty) as session:
            result = await session.canonicalize()
        npt.assert_array_equal(result.class_map, np.arange(extra))
        assert (result.rounds, result.merges) == (1, 0)
        assert_no_resident_leaks(backend.telemetry())


async def test_concurrent_canonicalizations_share_the_session_one_at_a_time(
    rng: np.random.Generator,
) -> None:
    """Tasks calling canonicalize() at once all get the same, correct result."""
    rows, num_classes, deepest = random_egraph(rng, base_classes=50, chains=2, depth=3)
    results: list[Canonicalization] = []
    async with (
        va.open_backend("cpu") as backend,
        va.egraph_session(backend, EGraphSnapshot.from_rows(rows)) as session,
    ):

        async def one() -> None:
            results.append(await session.canonicalize())

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(one)
    for result in results:
        _check(result, rows, num_classes, deepest)


async def test_round_limit_before_the_fixed_point_is_a_configuration_error(
    rng: np.random.Generator,
) -> None:
    """max_rounds too small for a planted chain raises with a fix; bad values are refused."""
    rows, _, deepest = random_egraph(rng, base_classes=10, ops=9, duplicates=0, chains=1, depth=3)
    async with (
        va.open_backend("cpu") as backend,
        va.egraph_session(backend, EGraphSnapshot.from_rows(rows)) as session,
    ):
        with pytest.raises(va.ConfigurationError, match=r"max_rounds=2.*Fix:"):
            await session.canonicalize(max_rounds=2)
        with pytest.raises(ValueError, match="max_rounds"):
            await session.canonicalize(max_rounds=0)
        result = await session.canonicalize(max_rounds=deepest + 40)
        assert result.rounds >= deepest + 2


async def test_session_lifecycle_is_open_once_then_closed(rng: np.random.Generator) -> None:
    """A session opens once; use after exit and re-entry are refused; close is idempotent."""
    rows, num_classes, _ = random_egraph(rng, base_classes=8)
    async with va.open_backend("cpu") as backend:
        session = va.egraph_session(backend, EGraphSnapshot.from_rows(rows))
        assert session.state is va.LifecycleState.UNOPENED
        with pytest.raises(va.LifecycleError, match="Fix:"):
            session.view  # noqa: B018 - the property access is what is refused
        async with session:
            assert session.state is va.LifecycleState.OPEN
            assert session.resident.num_classes == num_classes
            with pytest.raises(va.LifecycleError, match="no signatures yet"):
                await session.read_signatures()
        assert session.state is va.LifecycleState.CLOSED
        await session.aclose()
        with pytest.raises(va.LifecycleError, match="closed"):
            await session.canonicalize()
        with pytest.raises(va.LifecycleError, match="cannot be opened again"):
            async with session:
                pass
        assert_no_resident_leaks(backend.telemetry())
        with pytest.raises(TypeError, match="EGraphSnapshot or an upload plan"):
            va.egraph_session(backend, rows)  # type: ignore[arg-type]


async def test_merge_verifies_keys_when_every_signature_collides(
    rng: np.random.Generator,
) -> None:
    """egraph_merge, fed one signature for all rows, still merges only equal keys."""
    rows, num_classes, _ = random_egraph(rng, base_classes=40, ops=3, chains=0)
    snapshot = EGraphSnapshot.from_rows(rows, num_classes=num_classes)
    plan = plan_egraph_upload(snapshot)
    spans = plan.layout.words.spans
    async with va.open_backend("cpu") as backend:
        out = await backend.dispatch(
            egraph_merge,
            {
                "image": plan.words.copy(),
                "parent": np.arange(num_classes, dtype=np.uint32),
                "canon": snapshot.children.copy(),
                "signatures": np.zeros(snapshot.num_rows, np.uint32),
                "table": np.zeros(2 * 64, np.uint32),
                "egraph_state": np.zeros(EGRAPH_STATE_WORDS, np.int32),
            },
            eclass_at=spans["row_eclass_ids"].offset,
            ops_at=spans["row_language_op_ids"].offset,
            starts_at=spans["row_children_offsets"].offset,
            lens_at=spans["row_children_lens"].offset,
        )
    parent = out["parent"]
    while not np.array_equal(parent[parent], parent):
        parent = parent[parent]
    # One round of merging: classes of rows with equal (op, children as given).
    groups: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    for eclass, op, kids in rows:
        groups.setdefault((op, kids), []).append(eclass)
    want = list(range(num_classes))
    for members in groups.values():
        for m in members[1:]:
            a, b = _find(want, members[0]), _find(want, m)
            want[max(a, b)] = min(a, b)
    assert_same_partition(parent, [_find(want, c) for c in range(num_classes)])
    assert out["egraph_state"][4] == num_classes - len(set(parent.tolist()))


def _find(parent: list[int], x: int) -> int:
    while parent[x] != x:
        x = parent[x]
    return x
