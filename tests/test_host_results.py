"""Read-result blocks: lent as ordinary arrays, taken again only once every view is gone."""

from __future__ import annotations

import gc
import threading

import numpy as np

from vyre_async.backends.cuda._host_results import BLOCK_ALIGN, HostBlock, ResultBlocks


def _pool(max_idle_bytes: int = 1 << 30) -> tuple[ResultBlocks, list[HostBlock]]:
    released: list[HostBlock] = []
    return ResultBlocks(max_idle_bytes, released.append), released


def _lend_filled(pool: ResultBlocks, rng: np.random.Generator, count: int) -> np.ndarray:
    block = pool.take(4 * count)
    array = pool.lend(block, np.dtype(np.int32), count)
    array[:] = rng.integers(-(2**31), 2**31 - 1, count, dtype=np.int32)
    return array


def test_blocks_are_aligned_whole_multiples() -> None:
    pool, _ = _pool()
    for nbytes in (1, BLOCK_ALIGN - 1, BLOCK_ALIGN, 3 * BLOCK_ALIGN + 5):
        block = pool.take(nbytes)
        assert block.nbytes % BLOCK_ALIGN == 0
        assert block.nbytes >= nbytes
        assert block.address % BLOCK_ALIGN == 0


def test_a_dropped_array_gives_its_block_to_the_next_read(rng: np.random.Generator) -> None:
    """The lent array is a writable int32 array over the block; dropped, the block is reused."""
    pool, _ = _pool()
    array = _lend_filled(pool, rng, 1000)
    assert array.dtype == np.int32
    assert array.shape == (1000,)
    assert array.flags.writeable
    address = array.ctypes.data
    del array
    gc.collect()
    assert pool.take(4000).address == address


def test_a_view_keeps_the_block_lent(rng: np.random.Generator) -> None:
    """While any view lives the block is not taken again, so the view's values hold."""
    pool, _ = _pool()
    array = _lend_filled(pool, rng, 5000)
    view = array[::3]
    want = view.copy()
    del array
    gc.collect()
    other = _lend_filled(pool, rng, 5000)  # must come from a new block
    np.testing.assert_array_equal(view, want)
    assert other.ctypes.data != view.ctypes.data
    address = view.ctypes.data
    del view
    gc.collect()
    assert pool.take(20000).address == address


def test_arrays_held_at_once_never_share_memory(rng: np.random.Generator) -> None:
    pool, _ = _pool()
    arrays = [_lend_filled(pool, rng, 4096) for _ in range(4)]
    copies = [a.copy() for a in arrays]
    assert len({a.ctypes.data for a in arrays}) == 4
    for a, want in zip(arrays, copies, strict=True):
        np.testing.assert_array_equal(a, want)


def test_idle_blocks_beyond_the_cap_are_let_go_and_released(rng: np.random.Generator) -> None:
    """Past max_idle_bytes a returned block is dropped; a page-locked one is released."""
    pool, released = _pool(max_idle_bytes=BLOCK_ALIGN)
    first, second = _lend_filled(pool, rng, 100), _lend_filled(pool, rng, 100)
    locked = pool.take(4 * 100)  # a third block, page-locked, then given back
    pool.mark_page_locked(locked)
    del first, second
    gc.collect()
    pool.put_back(locked)
    assert pool.idle_bytes == BLOCK_ALIGN  # one kept, two let go
    assert released == [locked]
    assert not locked.page_locked
    assert pool.page_locked_bytes == 0


def test_a_block_given_back_on_another_thread_is_taken_again(
    rng: np.random.Generator,
) -> None:
    pool, _ = _pool()
    holder = [_lend_filled(pool, rng, 256)]
    address = holder[0].ctypes.data
    thread = threading.Thread(target=holder.clear)
    thread.start()
    thread.join()
    gc.collect()
    assert pool.take(1024).address == address


def test_close_returns_every_page_locked_block_and_keeps_lent_arrays_valid(
    rng: np.random.Generator,
) -> None:
    """close() hands back lent and idle page-locked blocks; lent arrays keep their values."""
    pool, _ = _pool()
    lent = _lend_filled(pool, rng, 1000)
    want = lent.copy()
    idle = pool.take(4000)
    pool.mark_page_locked(idle)
    pool.put_back(idle)
    lent_block = pool.take(8000)  # another size: a new block
    pool.mark_page_locked(lent_block)
    kept = pool.lend(lent_block, np.dtype(np.int32), 2000)
    assert set(pool.close()) == {idle, lent_block}
    np.testing.assert_array_equal(lent, want)
    kept[:] = 7  # still ordinary writable memory
    del lent, kept
    gc.collect()
    assert pool.idle_bytes == 0  # nothing is kept after close
