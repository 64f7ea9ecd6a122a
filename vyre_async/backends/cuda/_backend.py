"""The CUDA backend: dispatches as stream work, completions from recorded events.

A dispatch is a :class:`~._bound.BoundLaunch` (made on the first dispatch of a
kernel with given bindings, found by a dictionary lookup afterwards) enqueued on one
of the backend's streams from the event-loop thread without waiting: host inputs
copied into the launch's page-locked staging block, one host-to-device copy, output
buffers cleared, ``fixpoint_iterations`` launches, one device-to-host copy. The work
then joins its stream's open fence (:mod:`vyre_async.streams`): an event recorded
after it, shared by every dispatch submitted to that stream in the same turn of the
event loop. The awaiting task polls that event between checkpoints while the work is
short; the :class:`~vyre_async.streams.CompletionWatcher` task takes over work that
is long, cancelled or never awaited. Only once the event has completed does the
dispatch's memory go back to its pool.

Work that shares a resident buffer with unfinished work runs after it: on the same
stream when all it waits for is there, else behind ``cuStreamWaitEvent``. So
submission order holds across streams, as on the CPU backend. A kernel not yet
loaded is compiled in a worker thread first (``await backend.load_kernels(kernel)``
does that ahead of time).

The backend is one class assembled from a mixin per job, each in its own module:
opening and closing (:mod:`._lifecycle`), bound launches (:mod:`._launches`), the
awaited dispatch path (:mod:`._dispatch`), ``submit`` (:mod:`._submit`), staging
(:mod:`._staging_pairs`), sequences (:mod:`._sequences`), resident storage and writes
(:mod:`._storage`), reads (:mod:`._reads`) and borrowed arrays (:mod:`._borrowing`),
over the shared state of :mod:`._base`.
"""

from __future__ import annotations

from ._borrowing import CudaBorrowing
from ._dispatch import CudaDispatch
from ._launches import CudaLaunches
from ._lifecycle import CudaLifecycle
from ._reads import CudaReads
from ._sequences import CudaSequences
from ._staging_pairs import CudaStaging
from ._storage import CudaStorage
from ._submit import CudaSubmit


class CudaBackend(
    CudaDispatch,
    CudaSubmit,
    CudaSequences,
    CudaLaunches,
    CudaStaging,
    CudaReads,
    CudaStorage,
    CudaBorrowing,
    CudaLifecycle,
):
    """Runs kernels on one NVIDIA GPU through the CUDA driver API.

    Args:
        device: CUDA device ordinal.
        max_cached_device_bytes: Idle device memory the pool keeps for reuse.
        max_device_bytes: Cap on device memory handed out (``None``: the device's).
        max_cached_pinned_bytes: Idle pinned staging memory kept for reuse.
    """

    kind = "cuda"
