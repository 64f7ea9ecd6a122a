"""Piecewise reads: how a large read is split, and copying pieces out as they land."""

from __future__ import annotations

import anyio
import numpy as np
import pytest
from numpy.testing import assert_array_equal

from vyre_async.backends.cuda._readback import (
    MAX_PIECES,
    PIECE_BYTES,
    ReadPiece,
    copy_out_pieces,
    plan_read_pieces,
)
from vyre_async.errors import DeviceLostError
from vyre_async.streams._completion import Completion


def _covered(pieces: list[ReadPiece], sizes: list[int], staged_at: list[int]) -> None:
    for index, (size, at) in enumerate(zip(sizes, staged_at, strict=True)):
        mine = [p for p in pieces if p.range_index == index]
        assert [p.start for p in mine] == sorted(p.start for p in mine)
        assert sum(p.nbytes for p in mine) == size
        position = 0
        for p in mine:
            assert (p.start, p.staged) == (position, at + position)
            position += p.nbytes


def test_pieces_cover_every_range_in_order_without_straddling() -> None:
    """Pieces tile each range exactly, in order, and never cross into the next range."""
    sizes = [3 * PIECE_BYTES + 5, 0, 17, PIECE_BYTES]
    staged_at = [0, 3 * PIECE_BYTES + 256, 3 * PIECE_BYTES + 256, 3 * PIECE_BYTES + 512]
    pieces = plan_read_pieces(sizes, staged_at)
    assert all(0 < p.nbytes <= PIECE_BYTES for p in pieces)
    assert len(pieces) == 4 + 1 + 1
    _covered(pieces, sizes, staged_at)


def test_huge_reads_use_bigger_pieces_not_more_of_them() -> None:
    """A read of many pieces' worth is split into at most MAX_PIECES 256-byte-aligned pieces."""
    sizes = [1000 * PIECE_BYTES + 3]
    pieces = plan_read_pieces(sizes, [0])
    assert len(pieces) <= MAX_PIECES
    assert all(p.start % 256 == 0 for p in pieces)
    _covered(pieces, sizes, [0])


def test_piece_size_must_be_positive() -> None:
    """A zero piece size is a programming error, reported as ValueError."""
    with pytest.raises(ValueError, match="piece_bytes"):
        plan_read_pieces([10], [0], piece_bytes=0)


async def test_pieces_are_copied_out_as_they_land(rng: np.random.Generator) -> None:
    """Every byte reaches its range, whatever order the pieces land in."""
    sizes = [5000, 1, 777]
    staged_at = [0, 5120, 5376]
    staged = rng.integers(0, 256, 6400, dtype=np.uint8)
    pieces = plan_read_pieces(sizes, staged_at, piece_bytes=512)
    landed = [Completion() for _ in pieces]
    outs = [np.zeros(size, np.uint8) for size in sizes]
    for completion in reversed(landed):
        completion.complete()
    await copy_out_pieces(pieces, landed, staged, outs, anyio.CapacityLimiter(2))
    for out, size, at in zip(outs, sizes, staged_at, strict=True):
        assert_array_equal(out, staged[at : at + size])


async def test_a_failed_piece_raises_its_own_error_unwrapped() -> None:
    """The first failed transfer's error comes out as itself, not in an exception group."""
    staged = np.zeros(2048, np.uint8)
    pieces = plan_read_pieces([2048], [0], piece_bytes=512)
    landed = [Completion() for _ in pieces]
    landed[0].complete()
    landed[1].complete(DeviceLostError("an illegal address", fix="restart the process."))
    with pytest.raises(DeviceLostError, match="illegal address"):
        await copy_out_pieces(
            pieces, landed, staged, [np.zeros(2048, np.uint8)], anyio.CapacityLimiter(2)
        )
