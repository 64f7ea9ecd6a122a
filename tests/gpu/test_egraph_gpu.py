"""E-graph images and canonicalization on a real GPU, against plain-Python references."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.testing as npt
import pytest
from egraph_references import assert_same_partition, congruence_closure, random_egraph, signature

import vyre_async as va
from vyre_async.algorithms.egraph import (
    EGRAPH_STATE_WORDS,
    EGraphDeviceView,
    EGraphSnapshot,
    egraph_merge,
    pack_egraph,
    plan_egraph_upload,
)
from vyre_async.errors import DispatchError

SHAPES = {
    "chains": {"base_classes": 300, "ops": 6, "chains": 8, "depth": 12},
    "dense_congruences": {"base_classes": 200, "ops": 2, "duplicates": 400, "chains": 2},
    "many_ops_few_merges": {"base_classes": 3000, "ops": 60, "duplicates": 50, "chains": 1},
    "large": {"base_classes": 40000, "ops": 8, "duplicates": 2000, "chains": 20, "depth": 9},
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_gpu_fixed_point_equals_python_congruence_closure(
    cuda: va.Backend, rng: np.random.Generator, shape: str
) -> None:
    """The device's fixed point is the closure's partition, in the same rounds."""
    rows, num_classes, deepest = random_egraph(rng, **SHAPES[shape])
    snapshot = EGraphSnapshot.from_rows(rows, num_classes=num_classes)
    async with va.egraph_session(cuda, snapshot) as session:
        result = await session.canonicalize()
        signatures = await session.read_signatures()
    want, rounds = congruence_closure(rows, num_classes)
    assert_same_partition(result.class_map, want)
    assert (result.class_map <= np.arange(num_classes)).all()
    assert result.rounds == rounds >= deepest + 2
    assert result.merges == num_classes - len(set(want))
    final = result.class_map
    picks = rng.choice(len(rows), min(len(rows), 3000), replace=False)
    for i in picks:
        _, op, kids = rows[i]
        assert int(signatures[i]) == signature(op, [int(final[k]) for k in kids])


async def test_gpu_and_cpu_backends_give_identical_class_maps(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """Both backends map every class to the smallest id of its merged class: equal arrays."""
    rows, num_classes, _ = random_egraph(rng, base_classes=20000, ops=5, duplicates=500, chains=5)
    plan = plan_egraph_upload(EGraphSnapshot.from_rows(rows, num_classes=num_classes))
    async with va.egraph_session(cuda, plan) as session:
        gpu = await session.canonicalize()
    async with va.open_backend("cpu") as cpu, va.egraph_session(cpu, plan) as session:
        host = await session.canonicalize()
    npt.assert_array_equal(gpu.class_map, host.class_map)
    assert (gpu.rounds, gpu.merges) == (host.rounds, host.merges)


async def test_gpu_upload_round_trips_little_endian_words(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """The resident image reads back as the packed words; the view points into it."""
    rows, num_classes, _ = random_egraph(rng, base_classes=500)
    words, _ = pack_egraph(EGraphSnapshot.from_rows(rows, num_classes=num_classes))
    resident = await va.upload_egraph(cuda, plan_egraph_upload(EGraphSnapshot.from_rows(rows)))
    try:
        stored = await cuda.read(resident.buffer)
        assert stored.tobytes() == b"".join(int(w).to_bytes(4, "little") for w in words)
        view = va.egraph_view(cuda, resident)
        assert isinstance(view, EGraphDeviceView)
        assert view.base_ptr != 0
        for name, span in resident.layout.spans.items():
            assert view[name].ptr == view.base_ptr + span.offset
            assert view[name].nbytes == span.nbytes
    finally:
        await cuda.free(resident.buffer)


async def test_gpu_upload_failing_part_way_frees_the_buffer(
    cuda: va.Backend, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing chunk write frees the device buffer (the fixture checks allocations)."""
    rows, _, _ = random_egraph(rng, base_classes=2000)
    real_write = cuda._write  # type: ignore[attr-defined]
    calls = 0

    async def failing_write(storage: Any, byte_offset: int, data: np.ndarray) -> None:
        nonlocal calls
        calls += 1
        if calls == 4:
            raise DispatchError("injected write failure", fix="none: this is a test.")
        await real_write(storage, byte_offset, data)

    monkeypatch.setattr(cuda, "_write", failing_write)
    with pytest.raises(DispatchError, match="injected"):
        await va.upload_egraph(cuda, EGraphSnapshot.from_rows(rows), chunk_bytes=4096)
    assert calls >= 4


async def test_gpu_merge_verifies_keys_when_every_signature_collides(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """One signature for every row: the hash table still merges only equal keys."""
    rows, num_classes, _ = random_egraph(rng, base_classes=300, ops=3, chains=0)
    snapshot = EGraphSnapshot.from_rows(rows, num_classes=num_classes)
    plan = plan_egraph_upload(snapshot)
    spans = plan.layout.words.spans
    table = 1 << (2 * snapshot.num_rows - 1).bit_length()
    out = await cuda.dispatch(
        egraph_merge,
        {
            "image": plan.words.copy(),
            "parent": np.arange(num_classes, dtype=np.uint32),
            "canon": snapshot.children.copy(),
            "signatures": np.zeros(snapshot.num_rows, np.uint32),
            "table": np.full(table, 0xFFFFFFFF, np.uint32),
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
    want = list(range(num_classes))

    def find(x: int) -> int:
        while want[x] != x:
            x = want[x]
        return x

    first: dict[tuple[int, tuple[int, ...]], int] = {}
    for eclass, op, kids in rows:
        a, b = find(first.setdefault((op, kids), eclass)), find(eclass)
        want[max(a, b)] = min(a, b)
    assert_same_partition(parent, [find(c) for c in range(num_classes)])
