"""Running a resident repeated sequence until the device says it is done."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..backends import Backend, PreparedSequence, ReadRange, ResidentBuffer, SequenceStep

#: Repeats per submission at first; doubles up to the cap. A repeat that finds the
#: work done costs a few empty launches on the device and nothing on the host, so the
#: first batch covers a typical small-world graph's depth.
FIRST_BATCH = 16
MAX_BATCH = 256


async def run_until_done(
    backend: Backend,
    prefix: list[SequenceStep],
    body: list[SequenceStep],
    state: ResidentBuffer,
    done_index: int,
    *,
    check: Callable[[], None] = lambda: None,
) -> tuple[np.ndarray, int]:
    """Submit repeated batches of ``body`` until word ``done_index`` of ``state`` is set.

    Only the state words come back between batches; batches double in length (up to
    :data:`MAX_BATCH`), so a deep traversal costs few host waits.

    Args:
        backend: The backend holding the buffers.
        prefix: Steps run once, before the first repeat.
        body: Steps repeated.
        state: The state block the kernels keep; read back after every batch.
        done_index: Word that is nonzero once the work is finished.
        check: Called before each batch (a closed session raises there).

    Returns:
        The final state words and the device time of all batches (timing events).
    """
    check()
    first, more = prepare_batches(backend, prefix, body, state)
    return await run_prepared(first, more, done_index, check=check)


def prepare_batches(
    backend: Backend, prefix: list[SequenceStep], body: list[SequenceStep], state: ResidentBuffer
) -> tuple[PreparedSequence, PreparedSequence]:
    """The first batch (``prefix`` then ``body`` repeated) and the later ones (``body``)."""
    reads = [ReadRange(state)]
    return (
        backend.prepare_repeated(prefix, body, reads=reads),
        backend.prepare_repeated([], body, reads=reads),
    )


async def run_prepared(
    first: PreparedSequence,
    more: PreparedSequence,
    done_index: int,
    *,
    scalars: Mapping[str, Any] | None = None,
    check: Callable[[], None] = lambda: None,
    first_batch: int = FIRST_BATCH,
) -> tuple[np.ndarray, int]:
    """:func:`run_until_done` over batches prepared by :func:`prepare_batches`.

    ``scalars`` go to the first batch's prefix (a traversal's source, say).
    ``first_batch`` is the first batch's repeats: fewer where the work is known to be
    done sooner (a traversal limited to ``k < FIRST_BATCH`` levels needs ``k``), so no
    empty repeats run; later batches double from it (at least 1).
    """
    batch = first_batch
    device_ns = 0
    sequence = first
    while True:
        check()
        (words,), batch_ns = await sequence.run(batch, scalars=scalars)
        device_ns += batch_ns
        if words[done_index]:
            return words, device_ns
        sequence, scalars = more, None
        batch = min(max(batch * 2, 1), MAX_BATCH)
