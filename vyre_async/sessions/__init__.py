"""Sessions: work kept resident on a backend (or a device group) across many calls.

:func:`resident_graph` keeps a graph on the device for BFS, k-hop, reachability and
PageRank, coalescing concurrent queries into multi-source traversals planned by
:func:`plan_multi_query`; :func:`egraph_session` keeps an e-graph for
canonicalization. Both are async context managers.
"""

from ._batched import BatchingConfig as BatchingConfig
from ._egraph_session import EGraphSession as EGraphSession
from ._graph_session import ResidentGraphSession as ResidentGraphSession
from ._open import egraph_session as egraph_session
from ._open import resident_graph as resident_graph
from ._planner import MultiQueryPlan as MultiQueryPlan
from ._planner import QueryChunk as QueryChunk
from ._planner import TraversalQuery as TraversalQuery
from ._planner import chunk_bytes as chunk_bytes
from ._planner import plan_multi_query as plan_multi_query
from ._stats import SessionStats as SessionStats

__all__ = [
    "BatchingConfig",
    "EGraphSession",
    "MultiQueryPlan",
    "QueryChunk",
    "ResidentGraphSession",
    "SessionStats",
    "TraversalQuery",
    "chunk_bytes",
    "egraph_session",
    "plan_multi_query",
    "resident_graph",
]
