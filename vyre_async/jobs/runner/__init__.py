"""Running a job: checks before it starts, items and blocks, attempts, commits, signals.

:class:`JobRunner` checks the job (:func:`check_job`), prepares its graph, runs its
items in blocks on an executor (local devices, or one registered by name) with
timeouts and retries, hands each block's records to the committer, shows progress
and metrics, and on the first SIGINT/SIGTERM stops admitting work and drains;
:func:`run` does it in one synchronous call. The package's public face re-exports
from here.
"""

from ._execute import BlockExecutor as BlockExecutor
from ._execute import BlockResult as BlockResult
from ._execute import execute_block as execute_block
from ._executors import Executor as Executor
from ._executors import register_executor as register_executor
from ._items import total_items as total_items
from ._local_devices import device_warning as device_warning
from ._local_devices import missing_device_reason as missing_device_reason
from ._metrics import JobMetrics as JobMetrics
from ._metrics import serve_metrics as serve_metrics
from ._preflight import JobCheck as JobCheck
from ._preflight import backend_unavailable_reason as backend_unavailable_reason
from ._preflight import check_job as check_job
from ._run_file import run as run
from ._runner import JobRunner as JobRunner
from ._signals import exiting_at_once_on_signals as exiting_at_once_on_signals
from ._summary import JobSummary as JobSummary

__all__ = [
    "BlockExecutor",
    "BlockResult",
    "Executor",
    "JobCheck",
    "JobMetrics",
    "JobRunner",
    "JobSummary",
    "backend_unavailable_reason",
    "check_job",
    "device_warning",
    "execute_block",
    "exiting_at_once_on_signals",
    "missing_device_reason",
    "register_executor",
    "run",
    "serve_metrics",
    "total_items",
]
