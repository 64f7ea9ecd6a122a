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

The driver calls themselves live one floor down, in :mod:`vyre_async.cuda`.
"""

from ._backoff import Backoff as Backoff
from ._completion import Completion as Completion
from ._fence import Fence as Fence
from ._fence import Lane as Lane
from ._pending import DispatchTiming as DispatchTiming
from ._pending import PendingDispatch as PendingDispatch
from ._pending import TimedResult as TimedResult
from ._watcher import CompletionWatcher as CompletionWatcher

__all__ = [
    "Backoff",
    "Completion",
    "CompletionWatcher",
    "DispatchTiming",
    "Fence",
    "Lane",
    "PendingDispatch",
    "TimedResult",
]
