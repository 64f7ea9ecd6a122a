"""Opening and closing a CUDA backend: the device, its pools, streams and watcher.

Opening retains the device's primary context and makes the pools, the streams (one
lane each in the completion watcher) and the kernel and graph caches. No kernel is
loaded then: each loads at its first launch, or ahead of it with ``load_kernels``
(a job loads the kernels its workloads name, on every device at once, while its graph
is prepared), so a device pays only for the kernels its work uses. Closing waits for the watcher,
copies out results nobody collected yet, and frees every handle in a worker thread
(not at all on a lost device, whose context only raises).
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio

from ...cuda import (
    CudaDevice,
    DeviceMemoryPool,
    EventPool,
    PinnedHostPool,
    StreamPool,
    check,
    event_query_failure,
    kernel_launcher,
)
from ...errors import DeviceLostError, VyreError
from ...streams import FOLLOW_SPIN_S, CompletionWatcher
from ._base import STREAMS, CudaBase
from ._export import CudaExporter
from ._graphs import BodyGraphs
from ._launch import KernelCache


def watcher_for(device: CudaDevice, **options: Any) -> CompletionWatcher:
    """A completion watcher over ``cuEventQuery`` / ``cuEventRecord`` of ``device``.

    ``options`` are passed on; ``acquire_event``/``release_event`` should come from
    the backend's event pool, ``synchronize`` from its streams.
    """
    options.setdefault("few_spin_s", FOLLOW_SPIN_S)
    driver = device.driver
    query_event = driver.cuEventQuery
    record_event = driver.cuEventRecord

    def query(event: Any) -> int:
        return int(query_event(event)[0])

    def record(event: Any, stream: Any) -> None:
        # The loop thread's context is current (on_start): no device.call detour.
        returned = record_event(event, stream)
        if returned[0]:
            try:
                check(returned, "cuEventRecord")
            except DeviceLostError as exc:
                device.health.mark_lost(exc)
                raise

    options.setdefault("record", record)
    return CompletionWatcher(
        query,
        failure=event_query_failure,
        health=device.health,
        on_start=device.make_current,
        **options,
    )


class CudaLifecycle(CudaBase):
    """Opening the device with its pools, streams and watcher, and closing it all again."""

    async def _open(self) -> None:
        # Opening loads libcuda and retains the context: blocking driver work.
        device = await anyio.to_thread.run_sync(CudaDevice.open, self._ordinal)
        try:
            cached_device, device_cap, cached_pinned = self._pool_options
            device.make_current()
            self._memory = DeviceMemoryPool.for_device(
                device, max_cached_bytes=cached_device, max_live_bytes=device_cap
            )
            self._pinned = PinnedHostPool.for_device(device, max_cached_bytes=cached_pinned)
            self._stream_pool = StreamPool.for_device(device, max_cached=STREAMS)
            self._events = EventPool.for_device(device)
            self._streams = [self._stream_pool.acquire() for _ in range(STREAMS)]
            self._kernels = KernelCache(device)
            self._graphs = BodyGraphs(device)
            driver = device.driver
            self._watcher = watcher_for(
                device,
                acquire_event=self._events.acquire,
                release_event=self._events.release,
                synchronize=lambda stream: device.call(driver.cuStreamSynchronize, stream),
            )
            # Keyed by the stream's handle: what the launch call takes (as an integer).
            self._lanes = [self._watcher.lane(int(s), s) for s in self._streams]
            self._lane_turns = itertools.cycle(self._lanes)
            self._export_stream = self._stream_pool.acquire()
            self._producer_event = self._events.acquire()
            self._exports.attach(self._registry, device, self._watcher, self._export_stream)
            self._drv = driver
            launcher = await anyio.to_thread.run_sync(kernel_launcher, driver)
            self._launch_kernel, self._launch_error = launcher.call, launcher.error
            self._launcher = launcher.name
            self._copy_in = driver.cuMemcpyHtoDAsync
            self._copy_out = driver.cuMemcpyDtoHAsync
            self._memset = driver.cuMemsetD8Async
            self._wait_event = driver.cuStreamWaitEvent
            self._record_event = driver.cuEventRecord
        except BaseException:
            await anyio.to_thread.run_sync(device.close)
            raise
        self._device = device
        self._log = self._log.bind(ordinal=self._ordinal, launcher=self._launcher)

    async def _start_background(self, task_group: anyio.abc.TaskGroup) -> None:
        await task_group.start(self._watcher.run)

    async def _drain(self) -> None:
        if self._device is not None:
            await self._watcher.drain()

    async def _close(self) -> None:
        self._exports.detach()
        if self._device is None:
            return
        device = self._device
        with anyio.move_on_after(5):
            await self._watcher.drain()
        for work in list(self._uncollected):
            self._uncollected.discard(work)
            if work.done and work.error is None and not device.lost:
                work.outputs = self._copy_out_outputs(work)
            work.drop()

        locked_results = self._results.close()  # lent arrays stay valid, just pageable
        launches, self._launches = list(self._launches.values()), {}

        def release_all() -> None:
            try:
                if device.lost:
                    # The context is poisoned: freeing through it only raises again.
                    self._log.warning("closing a lost device without freeing its handles")
                    return
                device.make_current()
                for launch in launches:
                    self._free_spares(launch)
                for stream in (*self._streams, self._export_stream):
                    self._stream_pool.release(stream)
                self._events.release(self._producer_event)
                while self._small_reads:
                    self._pinned.release(self._small_reads.pop())
                while self._timing_pairs:
                    self._events.release_timing_pair(self._timing_pairs.pop())
                self._watcher.release_events()
                for block in locked_results:
                    try:
                        device.call(device.driver.cuMemHostUnregister, block.address)
                    except VyreError as exc:
                        self._log.warning("unregistering a read result failed", error=exc.what)
                self._graphs.close()
                self._kernels.close()
                leaks = {
                    "streams": self._stream_pool.close(),
                    "events": self._events.close(),
                    "device blocks": self._memory.close(),
                    "pinned blocks": self._pinned.close(),
                }
                if any(leaks.values()):
                    self._log.warning("closing with live handles", **leaks)
            except VyreError as exc:
                self._log.error("releasing device handles failed", error=str(exc))
            finally:
                device.close()

        await anyio.to_thread.run_sync(release_all)

    def _exporter(self) -> CudaExporter:
        self._exports = CudaExporter(self._ordinal)
        return self._exports

    def _gauges(self) -> dict[str, int]:
        stats = self._memory.stats()
        return {
            "pool_hits": stats.hits - self._baseline[0],
            "pool_misses": stats.misses - self._baseline[1],
            "pinned_bytes": self._pinned.pinned_bytes,
            "streams_cached": self._stream_pool.streams_cached,
            "events_cached": self._events.events_cached,
            "graphs_captured": self._graphs.captured,
            "graph_replays": self._graphs.replayed,
        }

    def reset_telemetry(self) -> None:
        """Zero the activity counters, pool hits and misses included."""
        super().reset_telemetry()
        if self._device is not None:
            stats = self._memory.stats()
            self._baseline = (stats.hits, stats.misses)
