"""Copies between the devices of a group, device to device, without the host waiting.

:func:`link_devices` opens the routes between every pair of a group's backends and
returns :class:`DeviceLinks`, whose :meth:`~DeviceLinks.copy` moves a range of one
device's resident buffer into another's. A copy is ordered like a dispatch: it
starts after the work that writes its source (or still reads or writes its
destination) and later work on either buffer starts after it, so a traversal can
enqueue levels of kernels and copies on several devices and wait once.

On CUDA a copy is ``cuMemcpyPeerAsync`` on one of the destination's streams: device to
device where the pair has peer access (NVLink, PCIe peer to peer), staged by the
driver through host memory where it has none or the driver refused it (each pair's
route is logged once). CPU backends copy host memory in a worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..errors import ConfigurationError, ValidationError
from ..logging import get_logger
from ..streams import Completion
from ._cpu import CpuBackend
from ._protocol import Backend
from ._resident import ResidentBuffer
from ._sequence import resolve_range

__all__ = ["CopyRoute", "DeviceLinks", "link_devices"]

_log = get_logger("vyre_async.backends")

#: How a pair's copies travel: within one device, device to device, or through host
#: memory (CPU backends' copies are host memory copies: ``"host"``).
CopyRoute = Literal["local", "peer", "host"]


class DeviceLinks:
    """Ordered copies between the devices of a group (see the module description).

    Made by :func:`link_devices`.

    Args:
        backends: The group's open backends, in device order.
        routes: ``(source, target)`` device positions -> how that pair's copies travel.
    """

    def __init__(
        self, backends: Sequence[Backend], routes: Mapping[tuple[int, int], CopyRoute]
    ) -> None:
        self._backends = tuple(backends)
        self._routes = dict(routes)
        #: Bytes copied so far, by all the links.
        self.bytes_copied = 0
        #: Copies enqueued so far.
        self.copies = 0

    @property
    def routes(self) -> Mapping[tuple[int, int], CopyRoute]:
        """``(source, target)`` device positions -> how that pair's copies travel."""
        return dict(self._routes)

    def __len__(self) -> int:
        return len(self._backends)

    def copy(
        self,
        source: int,
        src: ResidentBuffer,
        target: int,
        dst: ResidentBuffer,
        *,
        src_offset: int = 0,
        dst_offset: int = 0,
        count: int | None = None,
    ) -> Completion:
        """Copy elements of ``src`` (on device ``source``) into ``dst`` (on ``target``).

        Enqueued at once and never waited for here: ``await completion.wait()`` raises
        the copy's failure, if any.

        Args:
            source: The position of the source device in the group.
            src: A resident buffer of that device.
            target: The position of the destination device.
            dst: A resident buffer of that device, of ``src``'s dtype.
            src_offset: First element copied.
            dst_offset: Where it lands.
            count: Elements (default: from ``src_offset`` to the end of ``src``).

        Raises:
            ValidationError: Different dtypes, a range outside a buffer, or one buffer
                as both ends.
            LifecycleError: A backend is closed or a buffer freed.
        """
        if src.dtype != dst.dtype:
            raise ValidationError(
                f"cannot copy {src.dtype} elements into a {dst.dtype} buffer",
                fix="copy between buffers of one dtype.",
            )
        if src is dst:
            raise ValidationError(
                f"resident buffer {src.id} is both the source and the destination of a copy",
                fix="copy into another buffer.",
            )
        src_offset, count = resolve_range(src, src_offset, count)
        dst_offset, _ = resolve_range(dst, dst_offset, count)
        here, there = self._backends[source], self._backends[target]
        self.copies += 1
        self.bytes_copied += count * src.dtype.itemsize
        if isinstance(here, CpuBackend) and isinstance(there, CpuBackend):
            return here.enqueue_peer_copy(src, src_offset, there, dst, dst_offset, count)
        from .cuda import enqueue_peer_copy  # only CUDA groups get here

        size = src.dtype.itemsize
        return enqueue_peer_copy(
            here,  # type: ignore[arg-type]
            src,
            src_offset * size,
            there,  # type: ignore[arg-type]
            dst,
            dst_offset * size,
            count * size,
        )


async def link_devices(backends: Sequence[Backend]) -> DeviceLinks:
    """Open the copy routes between every ordered pair of ``backends`` (one kind).

    On CUDA each device enables peer access to every other where the pair allows it;
    a pair without peer access copies through host memory, which is logged with the
    driver's reason. Never raises for a missing route.

    Raises:
        ConfigurationError: Backends of two kinds (a copy between a CPU and a CUDA
            backend is an upload or a read, not a link).
    """
    kinds = {b.kind for b in backends}
    if len(kinds) > 1:
        raise ConfigurationError(
            f"devices of one group copy between each other; got backends of {sorted(kinds)}",
            fix="open the devices together with vyre_async.open_devices().",
        )
    routes: dict[tuple[int, int], CopyRoute] = {}
    for i, here in enumerate(backends):
        for j, there in enumerate(backends):
            routes[(i, j)] = "local" if i == j else _route(here, there, i, j)
    return DeviceLinks(backends, routes)


def _route(source: Backend, target: Backend, i: int, j: int) -> CopyRoute:
    if isinstance(source, CpuBackend):
        return "host"
    from .cuda import peer_route

    found: Any = peer_route(target, source)  # type: ignore[arg-type]
    if found.path == "host":
        _log.warning(
            "copies_through_host_memory",
            source=source.device_name,
            target=target.device_name,
            reason=found.reason,
            fix="check `nvidia-smi topo -m` for the link between these GPUs; copies still "
            "work, through host memory, at PCIe speed.",
        )
    else:
        _log.debug("peer_access_enabled", source=i, target=j)
    path: CopyRoute = found.path
    return path
