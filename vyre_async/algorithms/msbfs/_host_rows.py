"""The host array a split traversal's level rows come back in, its pages mapped early.

A fresh array of tens of MiB is fresh memory: the allocator maps it, and the kernel
zeroes and maps each page at its first write. Written by the readback, those page
faults come after the traversal, on whichever thread copies the rows in. A split
traversal instead allocates its rows when it starts and has worker threads write one
byte in every page (:func:`touch_pages`) while the devices traverse, so the readback
copies into memory that is already mapped.
"""

from __future__ import annotations

import anyio
import numpy as np

#: Bytes per page the touch steps over (the smallest page a host maps).
PAGE_BYTES = 4096
#: Arrays below this are left alone (the allocator mostly hands back pages it has
#: mapped before); larger ones are touched in pieces of at least this many bytes.
TOUCH_MIN_BYTES = 4 << 20
#: Worker threads that touch one array's pages at once.
TOUCH_THREADS = 8


def _touch(piece: np.ndarray) -> None:
    """Write a zero byte in every page that ``piece`` (bytes) lies on."""
    piece[::PAGE_BYTES] = 0
    piece[-1:] = 0


async def touch_pages(
    array: np.ndarray, *, min_bytes: int = TOUCH_MIN_BYTES, threads: int = TOUCH_THREADS
) -> None:
    """Write a zero byte in every page of ``array`` (C-contiguous), in up to ``threads``
    worker threads at once; arrays below ``min_bytes`` are left as they are.

    Its values change (a zero here and there): call it only on an array every element
    of which is written afterwards.
    """
    flat = array.reshape(-1).view(np.uint8)
    if flat.nbytes < max(min_bytes, 1):
        return
    pieces = max(1, min(threads, flat.nbytes // max(min_bytes, 1)))
    step = -(-flat.nbytes // pieces)
    async with anyio.create_task_group() as tg:
        for start in range(0, flat.nbytes, step):
            tg.start_soon(anyio.to_thread.run_sync, _touch, flat[start : start + step])
