"""E-graph snapshots, the packed u32 image and its word and byte layouts."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from egraph_references import random_egraph, signature

from vyre_async.algorithms.egraph import (
    EGRAPH_COLUMNS,
    EGraphLayout,
    EGraphSnapshot,
    WordSpan,
    pack_egraph,
    packed_words,
    unpack_egraph,
)
from vyre_async.errors import ValidationError


def _snapshot(rng: np.random.Generator, **kwargs: Any) -> EGraphSnapshot:
    rows, num_classes, _ = random_egraph(rng, **kwargs)
    return EGraphSnapshot.from_rows(rows, num_classes=num_classes)


@pytest.mark.parametrize("size", ["tiny", "medium", "no_children"])
def test_unpack_of_pack_equals_the_snapshot(rng: np.random.Generator, size: str) -> None:
    """Packing a random e-graph and unpacking the image gives the same snapshot back."""
    if size == "no_children":
        n = int(rng.integers(1, 50))
        snap = EGraphSnapshot(
            rng.integers(0, 9, n), rng.integers(0, 3, n), np.zeros(n + 1, int), []
        )
    else:
        snap = _snapshot(rng, base_classes=5 if size == "tiny" else 400)
    words, layout = pack_egraph(snap)
    assert words.dtype == np.dtype("<u4")
    back = unpack_egraph(words, layout)
    assert back == snap
    assert [back.row(i) for i in range(back.num_rows)] == [
        snap.row(i) for i in range(snap.num_rows)
    ]


def test_image_columns_hold_rows_groups_and_signatures(rng: np.random.Generator) -> None:
    """Every column holds what its name says, checked row by row in Python."""
    rows, num_classes, _ = random_egraph(rng, base_classes=40)
    words, layout = pack_egraph(EGraphSnapshot.from_rows(rows, num_classes=num_classes))

    def col(name: str) -> list[int]:
        span = layout.spans[name]
        return [int(w) for w in words[span.offset : span.end]]

    assert col("row_eclass_ids") == [c for c, _, _ in rows]
    assert col("row_language_op_ids") == [op for _, op, _ in rows]
    assert col("row_children_lens") == [len(kids) for _, _, kids in rows]
    starts, children = col("row_children_offsets"), col("children")
    assert [tuple(children[s : s + len(k)]) for s, (_, _, k) in zip(starts, rows, strict=True)] == [
        kids for _, _, kids in rows
    ]
    assert col("row_signatures") == [signature(op, kids) for _, op, kids in rows]
    groups, offsets, members = col("group_eclass_ids"), col("group_offsets"), col("group_rows")
    assert groups == sorted({c for c, _, _ in rows})
    for g, eclass in enumerate(groups):
        want = [i for i, (c, _, _) in enumerate(rows) if c == eclass]
        assert members[offsets[g] : offsets[g + 1]] == want
    assert all(layout.spans[n].offset % 64 == 0 for n in EGRAPH_COLUMNS)


def test_image_bytes_are_little_endian(rng: np.random.Generator) -> None:
    """The image's bytes are each word's little-endian encoding, whatever the host order."""
    snap = _snapshot(rng, base_classes=30)
    words, layout = pack_egraph(snap)
    span = layout.spans["row_eclass_ids"]
    raw = words.tobytes()[4 * span.offset : 4 * span.end]
    assert raw == b"".join(int(c).to_bytes(4, "little") for c in snap.eclass_ids)
    big = snap.eclass_ids[snap.eclass_ids > 255]
    if big.size:  # a multi-byte id is not its own byte reversal
        assert raw != b"".join(int(c).to_bytes(4, "big") for c in snap.eclass_ids)


def test_unpack_reads_a_byte_swapped_copy_of_the_image(rng: np.random.Generator) -> None:
    """Unpack reads words by value, so a big-endian copy of the image unpacks the same."""
    snap = _snapshot(rng, base_classes=20)
    words, layout = pack_egraph(snap)
    assert unpack_egraph(words.astype(">u4"), layout) == snap


BAD_SNAPSHOTS: dict[str, tuple[dict[str, Any], str]] = {
    "op_ids shorter": ({"op_ids": [1]}, "needs 2 op_ids"),
    "offsets too short": ({"children_offsets": [0, 1]}, "3 children_offsets"),
    "offsets start late": ({"children_offsets": [1, 1, 2]}, "starts at 1"),
    "offsets fall": ({"children_offsets": [0, 2, 1], "children": [0]}, "falls at row 1"),
    "offsets miss children": ({"children": [0, 1, 1]}, r"len\(children\)=3"),
    "class id past num_classes": ({"num_classes": 1}, "num_classes=1"),
    "negative id": ({"eclass_ids": [0, -1]}, "'eclass_ids'"),
    "id past u32": ({"children": [0, 2**32]}, "'children'.*u32"),
    "2-D column": ({"op_ids": [[1, 2]]}, "'op_ids' must be 1-D"),
    "float column": ({"op_ids": [1.0, 2.0]}, "'op_ids' must hold integers"),
}


@pytest.mark.parametrize("case", sorted(BAD_SNAPSHOTS))
def test_invalid_snapshots_raise_validation_errors_naming_the_column(case: str) -> None:
    """Bad lengths, offsets or ids are refused with a ValidationError and a fix."""
    fields: dict[str, Any] = {
        "eclass_ids": [0, 1],
        "op_ids": [1, 2],
        "children_offsets": [0, 1, 2],
        "children": [1, 0],
    }
    change, message = BAD_SNAPSHOTS[case]
    fields.update(change)
    num_classes = fields.pop("num_classes", None)
    with pytest.raises(ValidationError, match=message) as info:
        EGraphSnapshot(**fields, num_classes=num_classes)
    assert "Fix:" in str(info.value)


def test_snapshot_counts_classes_and_copies_its_columns() -> None:
    """num_classes defaults to the largest id + 1; columns are read-only copies."""
    eclass = np.array([3, 0], dtype=np.int64)
    snap = EGraphSnapshot(eclass, [1, 1], [0, 1, 1], [7])
    assert (snap.num_rows, snap.num_children, snap.num_classes) == (2, 1, 8)
    assert EGraphSnapshot([0], [0], [0, 0], [], num_classes=10).num_classes == 10
    assert EGraphSnapshot([], [], [0], []).num_classes == 0
    eclass[0] = 5
    assert snap.eclass_ids[0] == 3
    with pytest.raises(ValueError, match="read-only"):
        snap.children[0] = 1


def _layout(**changes: WordSpan) -> EGraphLayout:
    spans = {name: WordSpan(64 * i, 2) for i, name in enumerate(EGRAPH_COLUMNS)}
    spans["group_eclass_ids"] = WordSpan(spans["group_eclass_ids"].offset, 1)
    spans.update(changes)
    return EGraphLayout(spans, num_classes=4)


def test_layout_refuses_missing_columns_and_inconsistent_lengths() -> None:
    """A layout must name every column once, with row columns and groups consistent."""
    _layout()  # the base case is valid
    spans = dict(_layout().spans)
    del spans["children"]
    with pytest.raises(ValidationError, match=r"missing \['children'\]"):
        EGraphLayout(spans, num_classes=4)
    with pytest.raises(ValidationError, match="'row_signatures' has 3 words but the image has 2"):
        _layout(row_signatures=WordSpan(0, 3))
    with pytest.raises(ValidationError, match="'group_offsets' has 2 words for 2 groups"):
        _layout(group_eclass_ids=WordSpan(0, 2))
    with pytest.raises(ValidationError, match="'children' has span"):
        _layout(children=WordSpan(-4, 1))


@pytest.mark.parametrize("column", EGRAPH_COLUMNS)
def test_byte_conversion_overflow_names_the_column(column: str) -> None:
    """A span whose byte end passes 2**64 - 1 is refused, naming the column and the fix."""
    span = _layout().spans[column]
    huge = _layout(**{column: dataclasses.replace(span, offset=2**62 - 1)})
    assert huge.spans[column].end == 2**62 - 1 + span.length  # fits in words, not in bytes
    with pytest.raises(ValidationError, match=f"column '{column}'.*past the largest") as info:
        huge.to_bytes()
    assert str(info.value).endswith("Fix: shard the e-graph before upload, so each image stays "
                                    "far below 2**64 bytes.")  # fmt: skip


def test_byte_layout_is_four_bytes_per_word(rng: np.random.Generator) -> None:
    """Byte spans are the word spans times four; the image size is the furthest end."""
    words, layout = pack_egraph(_snapshot(rng, base_classes=10))
    byte_layout = layout.to_bytes()
    for name in EGRAPH_COLUMNS:
        assert byte_layout.spans[name].offset == 4 * layout.spans[name].offset
        assert byte_layout.spans[name].nbytes == 4 * layout.spans[name].length
    assert byte_layout.nbytes == words.nbytes == 4 * layout.total_words


def test_unpack_refuses_short_or_inconsistent_images(rng: np.random.Generator) -> None:
    """Unpack names what is wrong: too few words, wrong dtype, children out of column."""
    words, layout = pack_egraph(_snapshot(rng, base_classes=10))
    with pytest.raises(ValidationError, match=r"holds .* words but its layout reaches"):
        unpack_egraph(words[:-1], layout)
    with pytest.raises(ValidationError, match="1-D array of u32 words"):
        unpack_egraph(words.astype(np.int64), layout)
    broken = words.copy()
    lens = layout.spans["row_children_lens"]
    broken[lens.offset] = layout.num_children + 1
    with pytest.raises(ValidationError, match=r"past the .* words of 'children'"):
        unpack_egraph(broken, layout)
    broken = words.copy()
    broken[layout.spans["children"].offset] = layout.num_classes
    with pytest.raises(ValidationError, match="column 'children' holds e-class id"):
        unpack_egraph(broken, layout)


def test_packing_into_a_given_array_matches_a_fresh_pack(rng: np.random.Generator) -> None:
    """pack_egraph(out=...) fills the caller's words exactly as a fresh pack (padding zero)."""
    snapshot = _random_snapshot_for_out(rng)
    fresh, layout = pack_egraph(snapshot)
    assert packed_words(snapshot) == fresh.size
    out = np.full(fresh.size + 7, 0xDEADBEEF, dtype="<u4")  # poisoned, and longer
    words, same = pack_egraph(snapshot, out=out)
    assert (dict(same.spans), same.num_classes) == (dict(layout.spans), layout.num_classes)
    assert np.shares_memory(words, out)
    np.testing.assert_array_equal(words, fresh)
    assert (out[fresh.size :] == 0xDEADBEEF).all(), "words past the image are left alone"


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros(10, dtype="<u4"),  # too short
        np.zeros(100_000, dtype="<i4"),  # wrong dtype
        np.zeros((2, 50_000), dtype="<u4"),  # not 1-D
        np.zeros(200_000, dtype="<u4")[::2],  # strided
    ],
)
def test_packing_into_an_unsuitable_array_is_refused(
    rng: np.random.Generator, bad: np.ndarray
) -> None:
    """A short, mistyped, 2-D or strided out array raises ValidationError with a fix."""
    with pytest.raises(ValidationError, match="Fix:"):
        pack_egraph(_random_snapshot_for_out(rng), out=bad)


def _random_snapshot_for_out(rng: np.random.Generator) -> EGraphSnapshot:
    rows = [
        (
            int(rng.integers(0, 40)),
            int(rng.integers(0, 5)),
            [int(c) for c in rng.integers(0, 40, 2)],
        )
        for _ in range(120)
    ]
    return EGraphSnapshot.from_rows(rows, num_classes=40)
