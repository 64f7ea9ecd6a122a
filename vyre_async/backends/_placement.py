"""Placing a graph on a device group: replicated while a copy fits, else partitioned.

Each device of a group has a memory budget: its ``memory_limit`` where one was set
(:func:`~vyre_async.backends.open_devices`, ``[job] memory_limit``), never more than its
free memory. A graph is replicated, one whole copy per device, while a copy plus the
minimal scratch of a query fits every device's budget: queries then need no traffic
between devices. Otherwise it is split in contiguous vertex ranges, one per device
(each with its vertices' out- and in-edges), if every device's part and its scratch
fit; otherwise it cannot be placed on the group at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from .._memory import size_text
from ..errors import ConfigurationError, OutOfMemoryError
from ._group import DeviceGroup

__all__ = [
    "MemoryLimit",
    "Placement",
    "check_memory_limit",
    "choose_placement",
    "device_budgets",
]

#: ``open_devices``' ``memory_limit``: one byte count for every device, one per
#: device, or ``None`` (each device's free memory).
MemoryLimit = int | Sequence[int] | None

_LIMIT_FIX = (
    "pass memory_limit as a positive number of bytes, or a list of one per device "
    "(or leave it out: each device's free memory)."
)


def check_memory_limit(limit: MemoryLimit, devices: int | None) -> tuple[int | None, ...] | None:
    """``limit`` as one budget per device (``None``: none set).

    Args:
        limit: What the caller passed.
        devices: The group's size; ``None`` checks the form only (before the devices
            are open, when ``"all"`` has no count yet).

    Raises:
        ConfigurationError: Not a positive int or a list of them, or a list whose
            length is not the device count.
    """
    if limit is None:
        return None if devices is None else (None,) * devices
    each = [limit] if isinstance(limit, int) else limit
    if isinstance(limit, str | bytes) or not isinstance(each, Sequence) or not each:
        raise ConfigurationError(f"memory_limit must be bytes, got {limit!r}", fix=_LIMIT_FIX)
    for value in each:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigurationError(
                f"memory_limit must be a positive number of bytes, got {value!r}", fix=_LIMIT_FIX
            )
    if devices is None:
        return None
    if isinstance(limit, int):
        return (limit,) * devices
    if len(each) != devices:
        raise ConfigurationError(
            f"memory_limit lists {len(each)} budgets for {devices} devices", fix=_LIMIT_FIX
        )
    return tuple(int(value) for value in each)


async def device_budgets(group: DeviceGroup) -> tuple[int, ...]:
    """Each device's budget: its memory limit, at most its free memory.

    The CPU backends of a group are logical devices of one host: each gets an equal
    share of the host's available memory.
    """
    budgets = []
    for backend, limit in zip(group.backends, group.memory_limits, strict=True):
        free = await backend.free_memory()
        if group.kind == "cpu":
            free //= len(group)
        budgets.append(free if limit is None else min(limit, free))
    return tuple(budgets)


class Placement(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How a graph is laid on a device group, and why.

    Attributes:
        mode: ``"replicate"`` (a whole copy per device) or ``"partition"`` (a vertex
            range per device).
        reason: The numbers that decided it, in words.
        budgets: Each device's budget in bytes.
        replica_bytes: What one whole copy and its minimal scratch need.
        part_bytes: What each device's part and its minimal scratch need.
    """

    mode: Literal["replicate", "partition"]
    reason: str
    budgets: tuple[int, ...]
    replica_bytes: int
    part_bytes: tuple[int, ...]


def _amount(nbytes: int) -> str:
    return size_text(nbytes) if nbytes >= 1 << 20 else f"{nbytes:,} bytes"


def choose_placement(
    budgets: Sequence[int], replica_bytes: int, part_bytes: Sequence[int]
) -> Placement:
    """Replicate while a copy fits every budget, else partition if every part fits.

    A group of one device replicates (a part of one is the whole graph) if the copy
    fits its budget.

    Args:
        budgets: Each device's budget in bytes.
        replica_bytes: A whole copy plus a query's minimal scratch.
        part_bytes: Each device's part plus its minimal scratch, in device order.

    Raises:
        OutOfMemoryError: Neither fits (or, on one device, the copy does not): the
            message names the device and the numbers.
    """
    budgets, parts = tuple(budgets), tuple(part_bytes)
    tightest = min(range(len(budgets)), key=lambda i: budgets[i])
    if len(budgets) == 1 and replica_bytes > budgets[0]:
        raise OutOfMemoryError(
            f"the graph does not fit its one device: a copy with its minimal scratch needs "
            f"{_amount(replica_bytes)}, more than the budget of {_amount(budgets[0])}",
            fix="open more devices (devices='all') so that it is split over them, raise "
            "memory_limit, free device memory, or use a smaller graph.",
        )
    if replica_bytes <= budgets[tightest]:
        reason = (
            f"a copy with its minimal scratch needs {_amount(replica_bytes)}, within every "
            f"device's budget (the smallest: {_amount(budgets[tightest])} on device {tightest})"
        )
        return Placement("replicate", reason, budgets, replica_bytes, parts)
    over = [i for i, (need, budget) in enumerate(zip(parts, budgets, strict=True)) if need > budget]
    if over:
        i = over[0]
        raise OutOfMemoryError(
            f"the graph fits neither replicated nor partitioned on these {len(budgets)} "
            f"devices: a copy needs {_amount(replica_bytes)} and device {i}'s part of a "
            f"split needs {_amount(parts[i])}, more than its budget of {_amount(budgets[i])}",
            fix="use more devices (devices='all'), raise memory_limit, free device memory, "
            "or use a smaller graph.",
        )
    largest = max(range(len(parts)), key=lambda i: parts[i])
    reason = (
        f"a copy with its minimal scratch needs {_amount(replica_bytes)}, more than device "
        f"{tightest}'s budget of {_amount(budgets[tightest])}; split in {len(budgets)} "
        f"vertex ranges, the largest part needs {_amount(parts[largest])} (device {largest})"
    )
    return Placement("partition", reason, budgets, replica_bytes, parts)
