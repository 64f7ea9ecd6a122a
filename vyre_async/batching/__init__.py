"""Dynamic batching: many concurrent requests, few batched executions.

A :class:`DynamicBatcher` queues requests from concurrent tasks in one bounded
queue and flushes them, a batch at a time, into one call of an async executor. It
knows nothing of graphs or devices: resident-graph sessions use it to coalesce
traversal queries, and anything else can use it the same way.
"""

from ._batcher import DynamicBatcher as DynamicBatcher
from ._stats import BatcherStats as BatcherStats

__all__ = ["BatcherStats", "DynamicBatcher"]
