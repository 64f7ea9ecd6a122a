"""Running a resident repeated sequence until the device says it is done."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..backends import Backend, DispatchConfig, ReadRange, ResidentBuffer, SequenceStep

#: Repeats per submission at first; doubles up to the cap. A repeat that finds the
#: work done costs a few empty launches on the device and nothing on the host, so the
#: first batch covers a typical small-world graph's depth.
FIRST_BATCH = 16
MAX_BATCH = 256
_TIMED = DispatchConfig(timing=True)


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
    batch = FIRST_BATCH
    device_ns = 0
    while True:
        check()
        pending = backend.submit_repeated(
            prefix, body, repeat_count=batch, reads=[ReadRange(state)], config=_TIMED
        )
        result = await pending.timed()
        device_ns += result.timing.device_ns or 0
        (words,) = result.outputs
        if words[done_index]:
            return words, device_ns
        prefix = []
        batch = min(batch * 2, MAX_BATCH)
