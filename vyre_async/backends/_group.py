"""Device groups: several open backends of one kind, one per device, used together.

A group is not a backend: it runs no dispatch and holds no buffer. It holds the
backends (``group.backends``: an ordinary backend per device), sums their
telemetry, and closes them together. Work spread over every device goes through
a layer above: ``vyre_async.resident_graph(group, graph)`` keeps one replica of
the graph per device and sends each analysis or batch to the least busy one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import msgspec

from .._lifecycle import Lifecycle
from ..telemetry import Activity, TelemetrySnapshot
from ._protocol import Backend

_TEXT_FIELDS = ("backend", "device")


class DeviceGroup(Lifecycle):
    """Open backends of one kind, one per device.

    Made and closed by :func:`~vyre_async.open_devices`; closing the group closes
    every backend in it.

    Args:
        backends: Open backends of one kind, at least one.
        memory_limits: Each device's memory budget in bytes (``None``: its free
            memory), in the order of ``backends``; placing a graph on the group reads
            them (see :func:`~vyre_async.backends.device_budgets`).
    """

    _noun = "device group"
    _make_fix = "open a new group with vyre_async.open_devices()."
    _use_fix = "use it inside `async with vyre_async.open_devices() as group:`."

    def __init__(
        self, backends: Sequence[Backend], memory_limits: Sequence[int | None] | None = None
    ) -> None:
        if not backends:
            raise ValueError("a device group needs at least one backend")
        limits = tuple(memory_limits) if memory_limits is not None else (None,) * len(backends)
        if len(limits) != len(backends):
            raise ValueError(f"{len(limits)} memory limits for {len(backends)} devices")
        #: Each device's memory budget in bytes, ``None`` where it is the free memory.
        self.memory_limits: tuple[int | None, ...] = limits
        kinds = {b.kind for b in backends}
        if len(kinds) != 1:
            raise ValueError(f"a device group holds backends of one kind, got {sorted(kinds)}")
        self._backends = tuple(backends)
        #: ``"cuda"`` or ``"cpu"``: the kind of every backend in the group.
        self.kind: str = backends[0].kind

    @property
    def backends(self) -> tuple[Backend, ...]:
        """One ordinary backend per device, in the order the devices were asked for."""
        return self._backends

    @property
    def device_names(self) -> tuple[str, ...]:
        """Each backend's device name, in the order of :attr:`backends`."""
        return tuple(b.device_name for b in self._backends)

    def __len__(self) -> int:
        return len(self._backends)

    def __iter__(self) -> Iterator[Backend]:
        return iter(self._backends)

    def telemetry(self) -> TelemetrySnapshot:
        """Every backend's counters added up (device: the names joined with ``" + "``)."""
        if len(self._backends) == 1:
            return self._backends[0].telemetry()
        snapshots = [msgspec.structs.asdict(b.telemetry()) for b in self._backends]
        total: dict[str, Any] = {
            key: sum(s[key] for s in snapshots) for key in snapshots[0] if key not in _TEXT_FIELDS
        }
        return TelemetrySnapshot(backend=self.kind, device=" + ".join(self.device_names), **total)

    def activity(self) -> Activity:
        """Every backend's activity counters added up."""
        each = [b.activity() for b in self._backends]
        return Activity(*(sum(column) for column in zip(*each, strict=True)))

    def reset_telemetry(self) -> None:
        """Zero every backend's activity counters."""
        for backend in self._backends:
            backend.reset_telemetry()

    async def aclose(self) -> None:
        """Close every backend, the last opened first (idempotent; finishes even when
        cancelled; any task may call it)."""
        if not self._enter_closed():
            return
        with anyio.CancelScope(shield=True):
            for backend in reversed(self._backends):
                await backend.aclose()
