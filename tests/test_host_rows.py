"""The host array of a split traversal's level rows: every page written once before
the readback, in worker threads."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_async.algorithms.msbfs._host_rows import PAGE_BYTES, touch_pages


def _untouched_pages(flat: np.ndarray) -> list[int]:
    """The pages (by address) that ``flat`` (bytes, all ones before the touch) lies on
    and in which none of its bytes became zero."""
    start = flat.ctypes.data
    pages = (start + np.arange(flat.size)) // PAGE_BYTES
    touched = set(pages[flat == 0].tolist())
    return sorted(set(pages.tolist()) - touched)


@pytest.mark.parametrize("threads", [1, 3, 4])
async def test_touch_pages_writes_in_every_page_of_the_array(
    threads: int, rng: np.random.Generator
) -> None:
    """An array that starts and ends inside a page, touched in pieces: every page it
    lies on gets a zero byte, and only a few bytes per page change."""
    size = int(rng.integers(20, 40)) * PAGE_BYTES + int(rng.integers(1, PAGE_BYTES))
    backing = np.ones(size + PAGE_BYTES, np.uint8)
    skip = (-backing.ctypes.data % PAGE_BYTES) + int(rng.integers(1, PAGE_BYTES))
    flat = backing[skip : skip + size - PAGE_BYTES]
    await touch_pages(flat, min_bytes=3 * PAGE_BYTES, threads=threads)
    assert _untouched_pages(flat) == []
    pages = len(set(((flat.ctypes.data + np.arange(flat.size)) // PAGE_BYTES).tolist()))
    assert int((flat == 0).sum()) <= 2 * pages + 2 * threads
    assert (backing[:skip] == 1).all()
    assert (backing[skip + flat.size :] == 1).all()


async def test_an_array_below_the_threshold_is_left_alone() -> None:
    """An array below ``min_bytes`` keeps its values: small rows are not touched."""
    rows = np.full((2, 1000), 7, np.int32)
    await touch_pages(rows, min_bytes=rows.nbytes + 1)
    assert (rows == 7).all()
