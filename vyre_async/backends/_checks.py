"""Checks and small helpers every backend's paths share.

What a caller can get wrong about an ``out=`` array, a repeat count or an
``outputs=`` place is refused here, before any work is enqueued; :func:`uses_of`
says which resident buffers a set of calls touches (and whether it writes them), and
:func:`wait_quietly` waits out unfinished work whose failure belongs to someone else,
and :func:`wait_in_order` the work a new claim must follow.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ValidationError
from ..kernels import BoundCall
from ..streams import Completion
from ._interop import Borrowed, host_view, is_foreign
from ._resident import ResidentBuffer


def check_out(out: object, dtype: np.dtype[Any], count: int) -> None:
    """Refuse an ``out`` that is not a writeable, C-contiguous ``dtype`` array of ``count``.

    Raises:
        ValidationError: Naming what does not fit; nothing has been written.
    """
    fix = f"pass np.empty({count}, np.{dtype}) (or cupyx.empty_pinned(({count},), np.{dtype}))."
    if isinstance(out, Borrowed):  # a device array (contiguity was checked borrowing it)
        if out.dtype != dtype or out.size != count:
            raise ValidationError(
                f"out is a {out.dtype} device array of {out.size} element(s); this needs "
                f"{dtype} and {count}",
                fix=f"pass a contiguous {dtype} device array of {count} elements.",
            )
        return
    if is_foreign(out) and host_view(out) is None:
        return  # a device array given to a session: the backend checks it when copying
    if not isinstance(out, np.ndarray):
        raise ValidationError(f"out must be a NumPy array, got {type(out).__name__}", fix=fix)
    if out.dtype != dtype or out.size != count:
        raise ValidationError(
            f"out is a {out.dtype} array of {out.size} element(s); this needs {dtype} and {count}",
            fix=fix,
        )
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValidationError(
            "out must be a writeable, C-contiguous array, not a view or slice", fix=fix
        )


def check_repeat_count(repeat_count: object) -> None:
    """Refuse a repeat count that is not a non-negative int."""
    if isinstance(repeat_count, bool) or not isinstance(repeat_count, int) or repeat_count < 0:
        raise ValueError(f"repeat_count must be a non-negative int, got {repeat_count!r}")


def check_place(outputs: object, scalars: dict[str, Any]) -> dict[str, Any]:
    """Check ``dispatch``'s ``outputs=`` (not ``"host"``); return the scalars unchanged.

    Raises:
        ValueError: ``outputs`` is neither ``"host"`` nor ``"device"``.
    """
    if outputs != "device":
        raise ValueError(f"outputs must be 'host' or 'device', got {outputs!r}")
    return scalars


def uses_of(calls: Sequence[BoundCall[Any]]) -> dict[ResidentBuffer, bool]:
    """Resident buffers the calls touch -> whether any of them writes the buffer."""
    uses: dict[ResidentBuffer, bool] = {}
    for call in calls:
        for p in call.kernel.buffer_params:
            buffer = call.buffers.get(p.name)
            if isinstance(buffer, ResidentBuffer):
                uses[buffer] = uses.get(buffer, False) or p.role != "in"
    return uses


async def wait_quietly(completion: Completion) -> None:
    """Wait for a completion without caring whether its work failed."""
    # The failure belongs to that dispatch's own awaiter; here only the ordering matters.
    with contextlib.suppress(Exception):
        await completion.wait()


def still_ahead(earlier: Completion) -> list[Completion]:
    """The unfinished work a failed ``earlier`` was to start after.

    Work that failed before it was enqueued (its enqueue failed, or its task was
    cancelled while it waited) never waited for that work, so whoever waited for it
    must wait for that work instead. Empty for work that finished in order.
    """
    after = earlier.after
    if not after or earlier.error is None:
        return []
    return [work for work in after if not work.done]


async def wait_in_order(waits: list[Completion]) -> None:
    """Wait until the work in ``waits`` has finished, and for any of it that failed,
    the work that one was to start after (see :func:`still_ahead`)."""
    pending = list(waits)
    while pending:
        earlier = pending.pop()
        await wait_quietly(earlier)
        pending += still_ahead(earlier)
