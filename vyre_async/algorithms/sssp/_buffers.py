"""Freeing a scratch's buffers once nothing still running uses them."""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from ...backends import Backend, ResidentBuffer


async def free_scratch_buffers(backend: Backend, buffers: Sequence[ResidentBuffer]) -> None:
    """Free buffers once no unfinished work uses them; runs even when cancelled.

    Args:
        backend: The backend that made them.
        buffers: The buffers (a scratch's :attr:`buffers`).
    """
    with anyio.CancelScope(shield=True):
        await backend.settle(buffers)
        for buffer in buffers:
            await backend.free(buffer)
