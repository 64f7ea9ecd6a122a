"""The CUDA <-> anyio bridge: completions, pending dispatches and the completion watcher.

A :class:`Completion` is the moment submitted work finished; a
:class:`PendingDispatch` is its awaitable face (outputs, timing). Both are
backend-neutral: the CPU backend completes them from its worker tasks, and their
modules import nothing from the CUDA driver layer. The rest is how the CUDA backend
turns stream work into completions without blocking the event loop: fences and
lanes group a stream's work behind one recorded event, the
:class:`CompletionWatcher` polls those events (from the waiting task while work is
short, from its own task with :class:`Backoff` while it is long), and waiting
tasks park on the cheapest sleep their event loop has.

Nothing here calls the driver or imports :mod:`vyre_async.cuda`: the watcher is given
its event query, its event record and the meaning of a failed query by the CUDA
backend, so the CPU backend, which uses completions and pending dispatches, runs
through no CUDA module.
"""

from ._backoff import Backoff as Backoff
from ._completion import Completion as Completion
from ._fence import Fence as Fence
from ._fence import Lane as Lane
from ._pending import DispatchTiming as DispatchTiming
from ._pending import PendingDispatch as PendingDispatch
from ._pending import TimedResult as TimedResult
from ._watcher import DONE as DONE
from ._watcher import FOLLOW_SPIN_S as FOLLOW_SPIN_S
from ._watcher import NOT_READY as NOT_READY
from ._watcher import CompletionWatcher as CompletionWatcher
from ._watcher import Failure as Failure
from ._watcher import Health as Health

__all__ = [
    "Backoff",
    "Completion",
    "CompletionWatcher",
    "DONE",
    "DispatchTiming",
    "FOLLOW_SPIN_S",
    "Failure",
    "Fence",
    "Health",
    "Lane",
    "NOT_READY",
    "PendingDispatch",
    "TimedResult",
]
