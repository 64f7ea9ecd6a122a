"""Upload plans, upload_egraph and checked kernel views, on the CPU backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.testing as npt
import pytest
from egraph_references import random_egraph

import vyre_async as va
from vyre_async.algorithms.egraph import (
    EGRAPH_COLUMNS,
    EGraphHostView,
    EGraphLayout,
    EGraphSnapshot,
    ResidentEGraph,
    WordSpan,
    borrow_egraph_image,
    pack_egraph,
    plan_egraph_upload,
    resolve_device_view,
    unpack_egraph,
)
from vyre_async.errors import DispatchError, ValidationError
from vyre_async.testing import assert_no_resident_leaks


def _snapshot(rng: np.random.Generator, base_classes: int = 60) -> EGraphSnapshot:
    rows, num_classes, _ = random_egraph(rng, base_classes=base_classes)
    return EGraphSnapshot.from_rows(rows, num_classes=num_classes)


@pytest.mark.parametrize("source", ["snapshot", "owned", "borrowed"])
async def test_upload_round_trips_through_the_backend(
    rng: np.random.Generator, source: str
) -> None:
    """What upload_egraph puts in the buffer unpacks to the snapshot, in LE bytes."""
    snap = _snapshot(rng)
    words, layout = pack_egraph(snap)
    given: Any = {
        "snapshot": snap,
        "owned": plan_egraph_upload(snap),
        "borrowed": borrow_egraph_image(words, layout),
    }[source]
    async with va.open_backend("cpu") as backend:
        resident = await va.upload_egraph(backend, given, chunk_bytes=1024)
        stored = await backend.read(resident.buffer)
        assert stored.dtype == np.dtype("<u4")
        assert resident.layout.nbytes == resident.buffer.nbytes == words.nbytes
        assert stored.tobytes() == b"".join(int(w).to_bytes(4, "little") for w in words)
        assert unpack_egraph(stored, resident.layout.words) == snap
        assert (resident.num_rows, resident.num_classes) == (snap.num_rows, snap.num_classes)
        await backend.free(resident.buffer)
        assert_no_resident_leaks(backend.telemetry())


def test_borrowed_plan_views_the_callers_words_and_owned_plan_copies(
    rng: np.random.Generator,
) -> None:
    """A borrowed plan shares the caller's memory (read-only); an owned one does not."""
    snap = _snapshot(rng)
    words, layout = pack_egraph(snap)
    borrowed = borrow_egraph_image(words, layout)
    assert np.shares_memory(borrowed.words, words)
    assert not borrowed.owned
    assert not borrowed.words.flags.writeable
    owned = plan_egraph_upload(snap)
    assert owned.owned
    assert owned.nbytes == borrowed.nbytes == words.nbytes
    npt.assert_array_equal(owned.words, words)


def test_borrowing_refuses_words_that_would_need_a_copy_or_read_out_of_bounds(
    rng: np.random.Generator,
) -> None:
    """Big-endian or strided words, or ids past num_classes, cannot be borrowed."""
    words, layout = pack_egraph(_snapshot(rng))
    with pytest.raises(ValidationError, match=r"this one is >u4, which would need a copy"):
        borrow_egraph_image(words.astype(">u4"), layout)
    strided = np.repeat(words, 2)[::2]
    with pytest.raises(ValidationError, match="strided"):
        borrow_egraph_image(strided, layout)
    bad = words.copy()
    bad[layout.spans["row_eclass_ids"].offset] = layout.num_classes
    with pytest.raises(ValidationError, match="column 'row_eclass_ids' holds e-class id"):
        borrow_egraph_image(bad, layout)


async def test_failed_write_part_way_frees_the_buffer(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write failing after the first chunk raises, and nothing stays resident."""
    snap = _snapshot(rng, base_classes=200)
    async with va.open_backend("cpu") as backend:
        real_write = backend._write
        calls: list[int] = []

        async def failing_write(storage: Any, byte_offset: int, data: np.ndarray) -> None:
            calls.append(byte_offset)
            if len(calls) == 3:
                raise DispatchError("injected write failure", fix="none: this is a test.")
            await real_write(storage, byte_offset, data)

        monkeypatch.setattr(backend, "_write", failing_write)
        with pytest.raises(DispatchError, match="injected"):
            await va.upload_egraph(backend, snap, chunk_bytes=256)
        assert len(calls) >= 3  # it did fail part way, after chunks had landed
        assert_no_resident_leaks(backend.telemetry())
        calls.clear()
        with pytest.raises(DispatchError, match="injected"):
            async with va.egraph_session(backend, snap, chunk_bytes=256):
                pass
        assert_no_resident_leaks(backend.telemetry())


async def test_session_frees_the_image_when_scratch_allocation_fails(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error after the upload (allocating scratch) still frees everything."""
    async with va.open_backend("cpu") as backend:
        real_alloc = backend.alloc
        count = 0

        async def failing_alloc(nbytes: int, dtype: Any = np.uint8) -> va.ResidentBuffer:
            nonlocal count
            count += 1
            if count == 3:  # the image, then parent, then this one
                raise va.OutOfMemoryError("injected", fix="none: this is a test.")
            return await real_alloc(nbytes, dtype)

        monkeypatch.setattr(backend, "alloc", failing_alloc)
        with pytest.raises(va.OutOfMemoryError, match="injected"):
            async with va.egraph_session(backend, _snapshot(rng)):
                pass
        assert_no_resident_leaks(backend.telemetry())


async def test_host_view_columns_are_read_only_views_of_the_buffer(
    rng: np.random.Generator,
) -> None:
    """On the CPU backend each column view equals the snapshot's column, without a copy."""
    snap = _snapshot(rng)
    async with va.open_backend("cpu") as backend:
        resident = await va.upload_egraph(backend, snap)
        view = va.egraph_view(backend, resident)
        assert isinstance(view, EGraphHostView)
        npt.assert_array_equal(view["row_eclass_ids"], snap.eclass_ids)
        npt.assert_array_equal(view["children"], snap.children)
        npt.assert_array_equal(view["row_children_lens"], np.diff(snap.children_offsets))
        for name in EGRAPH_COLUMNS:
            assert not view[name].flags.writeable
            offset = resident.layout.spans[name].offset
            assert view[name].__array_interface__["data"][0] == view.base_ptr + offset
        await backend.free(resident.buffer)


def _shifted(layout: EGraphLayout, column: str, words: int) -> EGraphLayout:
    spans = dict(layout.spans)
    spans[column] = WordSpan(spans[column].offset + words, spans[column].length)
    return EGraphLayout(spans, layout.num_classes)


@pytest.mark.parametrize("column", EGRAPH_COLUMNS)
async def test_a_span_outside_the_buffer_is_refused_naming_it(
    rng: np.random.Generator, column: str
) -> None:
    """A layout reaching past the resident buffer fails to resolve, naming the byte range."""
    async with va.open_backend("cpu") as backend:
        resident = await va.upload_egraph(backend, _snapshot(rng))
        words = resident.layout.words
        beyond = words.total_words - words.spans[column].offset
        moved = _shifted(words, column, beyond).to_bytes()
        span = moved.spans[column]
        with pytest.raises(ValidationError, match=f"column '{column}' spans bytes") as info:
            va.egraph_view(backend, ResidentEGraph(resident.buffer, moved))
        message = str(info.value)
        assert f"[{span.offset}, {span.end})" in message
        assert f"buffer of {resident.buffer.nbytes} bytes" in message
        assert "Fix:" in message
        await backend.free(resident.buffer)


@pytest.mark.parametrize("column", ["row_eclass_ids", "children", "group_rows"])
def test_pointer_arithmetic_overflow_is_refused_naming_the_column(
    rng: np.random.Generator, column: str
) -> None:
    """A base pointer near 2**64 overflows at a column's end; the error names the column."""
    words, layout = pack_egraph(_snapshot(rng))
    byte_layout = layout.to_bytes()
    span = byte_layout.spans[column]
    # Columns are checked in packing order, each ending after the one before: this
    # base makes the named column the first to overflow.
    base = 2**64 - span.end + int(rng.integers(1, 64))
    with pytest.raises(ValidationError, match=f"column '{column}' at bytes") as info:
        resolve_device_view(base, words.nbytes, byte_layout)
    assert f"[{span.offset}, {span.end})" in str(info.value)
    assert "overflows a 64-bit address" in str(info.value)
    highest = 2**64 - 1 - byte_layout.nbytes  # the last base at which nothing overflows
    view = resolve_device_view(highest, words.nbytes, byte_layout)
    assert view[column].ptr == highest + span.offset


def test_device_view_points_at_base_plus_offset(rng: np.random.Generator) -> None:
    """Each column's device pointer is the base plus its byte offset; sizes in words."""
    words, layout = pack_egraph(_snapshot(rng))
    byte_layout = layout.to_bytes()
    base = int(rng.integers(1, 2**40)) * 256
    view = resolve_device_view(base, words.nbytes, byte_layout)
    for name in EGRAPH_COLUMNS:
        assert view[name].ptr == base + byte_layout.spans[name].offset
        assert view[name].count == layout.spans[name].length
    with pytest.raises(ValidationError, match="spans bytes"):
        resolve_device_view(base, words.nbytes - 4, byte_layout)
    with pytest.raises(ValidationError, match="not a 64-bit address"):
        resolve_device_view(-1, words.nbytes, byte_layout)


async def test_chunk_size_must_be_whole_words(rng: np.random.Generator) -> None:
    """chunk_bytes that is not a positive multiple of 4 is a ValueError; nothing leaks."""
    async with va.open_backend("cpu") as backend:
        for bad in (0, 6, -4):
            with pytest.raises(ValueError, match="chunk_bytes"):
                await va.upload_egraph(backend, _snapshot(rng), chunk_bytes=bad)
        with pytest.raises(TypeError, match="EGraphSnapshot or an upload plan"):
            await va.upload_egraph(backend, np.zeros(4, np.uint32))  # type: ignore[arg-type]
        assert_no_resident_leaks(backend.telemetry())
