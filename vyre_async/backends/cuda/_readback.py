"""Large reads in pieces: each piece is copied out of pinned memory while later ones land.

A read of several megabytes used to be one device-to-host copy into pinned memory,
one wait, then one host copy into the result on the event-loop thread: the PCIe
transfer and the host copy ran one after the other, and the host copy (with the
first touch of the fresh result's pages) held the loop for milliseconds.

Here the transfer is split into pieces, all enqueued at once on one stream, each
followed by its own completion event. As soon as a piece has landed, a worker
thread copies it into the result array while the device keeps sending the next
ones, and up to :data:`COPY_THREADS` pieces are copied at once. The read then takes
about the longer of the transfer and the host copy, and the loop only dispatches.
Pieces of 2 MiB land every ~40 µs on a PCIe 5 link, so the completion watcher stays
in its spinning phase for the whole read instead of sleeping through the end of it.

This path serves reads over 32 MiB only: from 2 to 32 MiB the driver's own pageable
copy is faster (``CudaBackend._read_pageable``, measured by ``bench/readback_sweep.py``),
above it slower.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import anyio
import numpy as np

from ...streams import Completion

__all__ = ["COPY_THREADS", "PIECE_BYTES", "ReadPiece", "copy_out_pieces", "plan_read_pieces"]

#: Bytes per device-to-host piece, unless the read would need more than MAX_PIECES.
PIECE_BYTES = 2 << 20
#: Pieces per read at most: each costs one event and one wake-up of the loop.
MAX_PIECES = 64
#: Worker threads copying pieces out of pinned memory at once, per backend.
COPY_THREADS = 4


@dataclass(frozen=True, slots=True)
class ReadPiece:
    """One device-to-host copy of a piecewise read.

    Attributes:
        range_index: Which of the read's ranges the piece belongs to.
        start: Byte offset of the piece inside its range.
        staged: Byte offset of the piece inside the pinned staging block.
        nbytes: Bytes in the piece (never 0).
    """

    range_index: int
    start: int
    staged: int
    nbytes: int


def plan_read_pieces(
    sizes: Sequence[int], staged_at: Sequence[int], piece_bytes: int = PIECE_BYTES
) -> list[ReadPiece]:
    """Split ranges of ``sizes`` bytes, staged at ``staged_at``, into transfer pieces.

    Pieces follow the ranges in order and never straddle two ranges. Pieces grow past
    ``piece_bytes`` (in 256-byte steps) when the read would otherwise need more than
    :data:`MAX_PIECES` of them.

    Args:
        sizes: Bytes of each range.
        staged_at: Byte offset of each range in the staging block.
        piece_bytes: Preferred piece size.

    Returns:
        The pieces, in the order their copies are enqueued.

    Raises:
        ValueError: ``piece_bytes`` is not positive.
    """
    if piece_bytes <= 0:
        raise ValueError(f"piece_bytes must be positive, got {piece_bytes}")
    fewest = -(-sum(sizes) // MAX_PIECES)
    step = max(piece_bytes, -(-fewest // 256) * 256)
    pieces: list[ReadPiece] = []
    for index, (size, at) in enumerate(zip(sizes, staged_at, strict=True)):
        for start in range(0, size, step):
            pieces.append(ReadPiece(index, start, at + start, min(step, size - start)))
    return pieces


async def copy_out_pieces(
    pieces: Sequence[ReadPiece],
    landed: Sequence[Completion],
    staged: np.ndarray,
    outs: Sequence[np.ndarray],
    limiter: anyio.CapacityLimiter,
) -> None:
    """Copy each piece from ``staged`` into ``outs`` once its transfer has landed.

    Returns only when no copy runs any more, also when cancelled or failing, so the
    caller may release ``staged`` once the last transfer has ended.

    Args:
        pieces: The pieces, in transfer order.
        landed: One completion per piece, finished when its transfer has.
        staged: The pinned staging block as ``uint8``.
        outs: The destination of each range as a flat ``uint8`` view.
        limiter: Caps the worker threads copying at once.

    Raises:
        Exception: The failure of the first transfer that failed (a device error).
    """
    failure: Exception | None = None
    async with anyio.create_task_group() as task_group:
        for piece, done in zip(pieces, landed, strict=True):
            try:
                await done.wait()
            except Exception as exc:  # re-raised below, outside the group, unwrapped
                failure = exc
                task_group.cancel_scope.cancel()
                break
            source = staged[piece.staged : piece.staged + piece.nbytes]
            target = outs[piece.range_index][piece.start : piece.start + piece.nbytes]
            task_group.start_soon(_copy, target, source, limiter)
    if failure is not None:
        raise failure


async def _copy(target: np.ndarray, source: np.ndarray, limiter: anyio.CapacityLimiter) -> None:
    # np.copyto drops the GIL for a plain byte copy, so pieces copy in parallel.
    await anyio.to_thread.run_sync(np.copyto, target, source, limiter=limiter)
