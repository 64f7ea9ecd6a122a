"""Several devices of one host as one backend, for work spread over all of them.

``open_backend("cuda", device="all")`` (or a list of ordinals) opens one backend per
device and yields a :class:`MultiDeviceBackend`. Its :meth:`resident_graph` keeps a
replica of the graph on every device and spreads analyses and batches over them by
load; a device that is lost is taken out and its work runs again on the others.

Single-device operations (dispatches, resident buffers, sequences) have no device
to run on here and are refused with the fix: ``backend.devices[i]`` is an ordinary
backend for each device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import anyio
import msgspec

from ..errors import UnsupportedFeatureError
from ..telemetry import Activity, TelemetrySnapshot
from ._core import BackendState
from ._protocol import Backend

if TYPE_CHECKING:
    from ..graphs import CsrGraph
    from ..sessions import BatchingConfig, ResidentGraphSession

_TEXT_FIELDS = ("backend", "device")


class MultiDeviceBackend:
    """Open backends of one kind, one per device, used together.

    Made and closed by :func:`open_backend`; it closes every device's backend.

    Args:
        devices: Open backends, one per device (at least two).
    """

    def __init__(self, devices: Sequence[Backend]) -> None:
        if len(devices) < 2:
            raise ValueError("a multi-device backend needs at least two devices")
        self._devices = tuple(devices)
        self.kind = devices[0].kind

    @property
    def devices(self) -> tuple[Backend, ...]:
        """One ordinary backend per device."""
        return self._devices

    @property
    def device_name(self) -> str:
        """The devices' names, joined."""
        return " + ".join(d.device_name for d in self._devices)

    @property
    def state(self) -> BackendState:
        """Open while every device's backend is open."""
        states = {d.state for d in self._devices}
        return states.pop() if len(states) == 1 else BackendState.CLOSED

    def resident_graph(
        self, graph: CsrGraph, *, batching: BatchingConfig | None = None
    ) -> ResidentGraphSession:
        """A session with a replica of ``graph`` on every device; use it with ``async with``.

        With ``batching``, batches spread over the devices by load (one batch per
        device at a time); without it, each analysis runs on the least busy device.
        """
        from ..sessions import ResidentGraphSession  # the upward import, as in BackendCore

        return ResidentGraphSession(self._devices, graph, batching=batching)

    def telemetry(self) -> TelemetrySnapshot:
        """The devices' counters added up."""
        snapshots = [msgspec.structs.asdict(d.telemetry()) for d in self._devices]
        total: dict[str, Any] = {
            key: sum(s[key] for s in snapshots) for key in snapshots[0] if key not in _TEXT_FIELDS
        }
        return TelemetrySnapshot(backend=self.kind, device=self.device_name, **total)

    def activity(self) -> Activity:
        """The devices' activity counters added up."""
        each = [d.activity() for d in self._devices]
        return Activity(*(sum(column) for column in zip(*each, strict=True)))

    def reset_telemetry(self) -> None:
        """Zero every device's activity counters."""
        for device in self._devices:
            device.reset_telemetry()

    async def aclose(self) -> None:
        """Close every device's backend (idempotent; finishes even when cancelled)."""
        with anyio.CancelScope(shield=True):
            for device in self._devices:
                await device.aclose()

    # Single-device operations: refused with the way to do them.
    def _one_device(self, what: str) -> NoReturn:
        raise UnsupportedFeatureError(
            f"{what} runs on one device, and this backend has {len(self._devices)}",
            fix="use backend.devices[i] for work on one device, or backend.resident_graph() "
            "for work spread over all of them.",
        )

    def submit(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("submit")

    async def dispatch(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("dispatch")

    async def prepare(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: a prepared dispatch runs on one device."""
        self._one_device("prepare")

    def submit_sequence(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("submit_sequence")

    def prepare_repeated(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("prepare_repeated")

    def submit_repeated(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("submit_repeated")

    async def upload(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("upload")

    async def upload_group(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("upload_group")

    async def alloc(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("alloc")

    async def write(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("write")

    async def read(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("read")

    async def read_many(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("read_many")

    async def settle(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("settle")

    async def free(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("free")

    async def upload_egraph(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("upload_egraph")

    def egraph_view(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("egraph_view")

    def egraph_session(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Refused: see :attr:`devices`."""
        self._one_device("egraph_session")
