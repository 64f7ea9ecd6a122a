"""Sessions: work kept resident on a backend (resident graphs and their analyses)."""

from ._batch_stats import BatcherStats as BatcherStats
from ._batcher import BatcherState as BatcherState
from ._batcher import DynamicBatcher as DynamicBatcher
from ._graph_session import BatchingConfig as BatchingConfig
from ._graph_session import ResidentGraphSession as ResidentGraphSession
from ._graph_session import SessionState as SessionState
from ._planner import MultiQueryPlan as MultiQueryPlan
from ._planner import QueryChunk as QueryChunk
from ._planner import TraversalQuery as TraversalQuery
from ._planner import chunk_bytes as chunk_bytes
from ._planner import plan_multi_query as plan_multi_query
from ._rmat_device import MAX_DEVICE_RMAT_KEYS as MAX_DEVICE_RMAT_KEYS
from ._rmat_device import device_rmat_bytes as device_rmat_bytes
from ._rmat_device import rmat_on_device as rmat_on_device
from ._stats import SessionStats as SessionStats

__all__ = [
    "BatcherState",
    "BatcherStats",
    "BatchingConfig",
    "DynamicBatcher",
    "MAX_DEVICE_RMAT_KEYS",
    "MultiQueryPlan",
    "QueryChunk",
    "ResidentGraphSession",
    "SessionState",
    "SessionStats",
    "TraversalQuery",
    "chunk_bytes",
    "device_rmat_bytes",
    "plan_multi_query",
    "rmat_on_device",
]
