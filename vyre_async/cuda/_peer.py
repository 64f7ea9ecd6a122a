"""Copies between two devices of one process: peer access and ``cuMemcpyPeerAsync``.

Two GPUs joined by NVLink (or a PCIe switch that allows it) can read each other's
memory once the reading context enables peer access; copies between them then go
device to device. Where the pair cannot (no route, or the driver refuses: too many
peers, unsupported topology), ``cuMemcpyPeerAsync`` still copies: the driver stages
the bytes through host memory. :func:`open_peer_route` says which of the two a pair
gets and why; the copy call is the same.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ._device import CudaDevice
from ._driver import CUDA_SUCCESS, result_name

__all__ = ["PeerRoute", "copy_peer_async", "open_peer_route"]

#: ``CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED``: another user enabled it first; it is on.
_ALREADY_ENABLED = 704


class PeerRoute(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How copies from one device to another travel.

    Attributes:
        path: ``"peer"`` (device to device: NVLink or PCIe peer to peer) or ``"host"``
            (the driver stages each copy through host memory).
        reason: Why, in words (the driver's answer where it refused).
    """

    path: Literal["peer", "host"]
    reason: str


def _result(returned: Any) -> int:
    return int(returned[0] if isinstance(returned, tuple) else returned)


def open_peer_route(reader: CudaDevice, owner: CudaDevice) -> PeerRoute:
    """Let ``reader``'s context access ``owner``'s memory, where the pair allows it.

    Peer access is a property of the (reader, owner) context pair and lasts until a
    context is destroyed; enabling it twice is not an error. Nothing here raises for a
    pair that cannot: its copies go through host memory instead.

    Args:
        reader: The device whose streams run the copies (and whose kernels would read).
        owner: The device whose memory is read.
    """
    driver = reader.driver
    found = driver.cuDeviceCanAccessPeer(reader.handle, owner.handle)
    if _result(found) != CUDA_SUCCESS:
        return PeerRoute("host", f"cuDeviceCanAccessPeer failed: {result_name(_result(found))}")
    if not int(found[1]):
        return PeerRoute(
            "host",
            f"the driver reports no peer access from {reader.health.label} to "
            f"{owner.health.label} (no NVLink or PCIe peer route between them)",
        )
    reader.make_current()
    code = _result(driver.cuCtxEnablePeerAccess(owner.context, 0))
    if code not in (CUDA_SUCCESS, _ALREADY_ENABLED):
        return PeerRoute(
            "host", f"cuCtxEnablePeerAccess refused peer access: {result_name(code)} ({code})"
        )
    return PeerRoute("peer", "peer access enabled")


def copy_peer_async(
    reader: CudaDevice, destination: int, owner: CudaDevice, source: int, nbytes: int, stream: Any
) -> None:
    """Enqueue a copy of ``nbytes`` from ``owner``'s memory to ``reader``'s, on ``stream``
    (one of ``reader``'s streams): ``cuMemcpyPeerAsync``.

    Raises:
        VyreError: The driver refused the copy (device lost, bad address...), as
            :meth:`CudaDevice.call` maps it; nothing was enqueued.
    """
    if nbytes:
        reader.call(
            reader.driver.cuMemcpyPeerAsync,
            destination,
            reader.context,
            source,
            owner.context,
            nbytes,
            stream,
        )
