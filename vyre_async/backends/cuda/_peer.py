"""Copies from one CUDA backend's buffer into another's, ordered like any other work.

A copy claims its source buffer as a reader on the source backend and its destination
as a writer on the destination backend, so it starts after the work it must follow on
either device and later work on either waits for it, without the host waiting: it is
enqueued on one of the destination's streams behind ``cuStreamWaitEvent`` on the
events of the earlier work (the source device's events included; a stream may wait
on another device's event), and completes when the destination's fence does.
"""

from __future__ import annotations

from typing import Any

from ...cuda import PeerRoute, copy_peer_async, open_peer_route
from ...errors import DispatchError, VyreError
from ...streams import Completion
from .._resident import ResidentBuffer
from ._base import CudaBase
from ._work import unrecorded

__all__ = ["enqueue_peer_copy", "peer_route"]


def peer_route(reader: CudaBase, owner: CudaBase) -> PeerRoute:
    """Enable ``reader`` to read ``owner``'s memory where the pair allows it; the route."""
    return open_peer_route(reader._cuda(), owner._cuda())


def enqueue_peer_copy(
    source: CudaBase,
    src: ResidentBuffer,
    src_byte: int,
    target: CudaBase,
    dst: ResidentBuffer,
    dst_byte: int,
    nbytes: int,
) -> Completion:
    """Copy ``nbytes`` from ``src`` (on ``source``) to ``dst`` (on ``target``), in order.

    The ranges were checked by the caller. Returns the copy's completion at once; it
    fails with the driver's error if the copy could not be enqueued later.

    Raises:
        LifecycleError: A backend is closed or a buffer freed (nothing was claimed).
    """
    task_group = target._check_open()
    source._check_open()
    src_records = source._registry.resolve({src: False})
    dst_records = target._registry.resolve({dst: True})
    src_ptr = int(source._registry.storage(src).ptr) + src_byte
    dst_ptr = int(target._registry.storage(dst).ptr) + dst_byte
    work = Completion()
    waits = source._registry.claim(src_records, work) + target._registry.claim(dst_records, work)
    if waits:
        waits = list({id(w): w for w in waits}.values())
        work.after = waits
    if unrecorded(waits):

        async def later() -> None:
            try:
                order = await target._await_unrecorded(work, waits, None)
                _enqueue(source, target, work, order, src_ptr, dst_ptr, nbytes)
            except VyreError as exc:
                if not work.done:
                    work.complete(exc)
            except Exception as exc:
                if not work.done:
                    work.complete(
                        DispatchError(
                            f"enqueueing a copy between devices failed: {exc!r}",
                            fix="report this bug with the log.",
                        )
                    )

        task_group.start_soon(later)
    else:
        try:
            _enqueue(source, target, work, waits, src_ptr, dst_ptr, nbytes)
        except VyreError as exc:
            if not work.done:
                work.complete(exc)
    return work


def _enqueue(
    source: CudaBase,
    target: CudaBase,
    work: Completion,
    waits: list[Completion],
    src_ptr: int,
    dst_ptr: int,
    nbytes: int,
) -> None:
    """Enqueue the copy on a stream of ``target`` behind ``waits``; it joins that stream's
    fence. On failure the stream is synchronized before the error completes the work."""
    lane = target._next_lane()
    stream: Any = lane.stream
    try:
        target._watcher.check_accepting()
        reader = target._cuda()
        # _wait_for seals each earlier fence with the watcher that owns it (the source
        # device's for the source's work) and makes this stream wait for its event.
        target._wait_for(lane, waits)
        copy_peer_async(reader, dst_ptr, source._cuda(), src_ptr, nbytes, stream)
    except BaseException as exc:
        target._sync_after_failure(stream)
        work.complete(exc)
        raise
    target._watcher.add(lane, work)
    target._watcher.kick()
