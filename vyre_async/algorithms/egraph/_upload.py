"""Uploading an e-graph image: one resident buffer, written in checked chunks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

import anyio

from ..._lifecycle import LifecycleState
from ...backends import ResidentBuffer
from ._image import IMAGE_DTYPE
from ._layout import WORD_BYTES, EGraphByteLayout
from ._plan import BorrowedEGraphUploadPlan, EGraphUploadPlan, UploadPlan, plan_egraph_upload
from ._snapshot import EGraphSnapshot

if TYPE_CHECKING:
    import numpy as np

    from ...backends import Backend

#: Bytes per write: large enough to run near copy bandwidth, small enough that a
#: failing upload stops early and that several chunks are staged at once.
DEFAULT_CHUNK_BYTES = 16 << 20
#: Chunk writes in flight at once: staging a chunk into pinned memory is a host
#: copy (about 10 GB/s per thread on an H200 host, against ~55 GB/s of pinned DMA),
#: so several are staged in parallel (the CUDA backend copies in up to four
#: threads) while earlier ones transfer.
_WRITES_IN_FLIGHT = 6

#: What ``upload_egraph`` takes.
EGraphSource: TypeAlias = EGraphSnapshot | EGraphUploadPlan | BorrowedEGraphUploadPlan


@dataclass(frozen=True, eq=False)
class ResidentEGraph:
    """An e-graph image resident on a backend: one ``<u4`` buffer and its layout.

    Made by :func:`upload_egraph`. Free it with ``await backend.free(resident.buffer)``
    (an e-graph session does that itself).

    Attributes:
        buffer: The resident image.
        layout: Byte spans of its columns (``layout.words`` has the word spans).
    """

    buffer: ResidentBuffer
    layout: EGraphByteLayout

    @property
    def num_rows(self) -> int:
        """Rows (e-nodes) in the image."""
        return self.layout.words.num_rows

    @property
    def num_children(self) -> int:
        """Child references in the image."""
        return self.layout.words.num_children

    @property
    def num_classes(self) -> int:
        """E-classes the image's ids range over."""
        return self.layout.words.num_classes


async def upload_egraph(
    backend: Backend, source: EGraphSource, *, chunk_bytes: int | None = None
) -> ResidentEGraph:
    """Upload a snapshot (packed off the event loop) or an upload plan as one buffer.

    The words go in chunks of ``chunk_bytes``, several in flight; a chunk that has
    started is always finished, even when the upload is cancelled, so the buffer is
    never freed under a running copy. If any chunk fails, the buffer is freed and
    the error raised: nothing stays resident.

    Args:
        backend: An open backend.
        source: An :class:`EGraphSnapshot`, an owned or a borrowed plan.
        chunk_bytes: Bytes per write, a positive multiple of 4 (``None``:
            :data:`DEFAULT_CHUNK_BYTES`).

    Returns:
        The resident image and its byte layout.

    Raises:
        ValidationError: The snapshot's layout overflows (see ``EGraphByteLayout``).
        OutOfMemoryError: The backend could not allocate the image.
    """
    if chunk_bytes is None:
        chunk_bytes = DEFAULT_CHUNK_BYTES
    if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, int) or chunk_bytes <= 0:
        raise ValueError(f"chunk_bytes must be a positive int, got {chunk_bytes!r}")
    if chunk_bytes % WORD_BYTES:
        raise ValueError(f"chunk_bytes must be a multiple of {WORD_BYTES}, got {chunk_bytes}")
    plan: UploadPlan
    if isinstance(source, EGraphSnapshot):
        plan = await anyio.to_thread.run_sync(plan_egraph_upload, source)
    elif isinstance(source, EGraphUploadPlan | BorrowedEGraphUploadPlan):
        plan = source
    else:
        raise TypeError(
            f"upload_egraph takes an EGraphSnapshot or an upload plan, got {type(source).__name__}"
        )
    buffer = await backend.alloc(plan.nbytes, IMAGE_DTYPE)
    try:
        await _write_chunks(backend, buffer, plan.words, chunk_bytes // WORD_BYTES)
    except BaseException:
        with anyio.CancelScope(shield=True):
            if backend.state is LifecycleState.OPEN:
                await backend.free(buffer)
        raise
    return ResidentEGraph(buffer, plan.layout)


async def _write_chunks(
    backend: Backend, buffer: ResidentBuffer, words: np.ndarray, chunk_words: int
) -> None:
    """Write ``words`` into ``buffer`` chunk by chunk, a bounded number at a time."""
    slots = anyio.Semaphore(_WRITES_IN_FLIGHT)
    failures: list[Exception] = []

    async def write(start: int, scope: anyio.CancelScope) -> None:
        try:
            # Shielded: a started copy must land before anyone may free the buffer.
            with anyio.CancelScope(shield=True):
                await backend.write(buffer, words[start : start + chunk_words], start)
        except Exception as exc:
            # Kept, not raised: the caller gets the write's own error, not a group.
            failures.append(exc)
            scope.cancel()
        finally:
            slots.release()

    async with anyio.create_task_group() as tg:
        for start in range(0, buffer.size, chunk_words):
            await slots.acquire()
            tg.start_soon(write, start, tg.cancel_scope)
    if failures:
        raise failures[0]
