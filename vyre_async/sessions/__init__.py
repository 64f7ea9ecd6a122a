"""Sessions: work kept resident on a backend (or a device group) across many calls.

:func:`resident_graph` keeps a graph on the device for queries of every registered
kind (BFS, k-hop, reachability, PageRank, ...), coalescing concurrent queries into
multi-query runs (for traversals, as :func:`plan_multi_query` plans them);
:func:`egraph_session` keeps an e-graph for canonicalization. Both are async context
managers.
"""

from ..algorithms.msbfs import MultiQueryPlan as MultiQueryPlan
from ..algorithms.msbfs import QueryChunk as QueryChunk
from ..algorithms.msbfs import TraversalQuery as TraversalQuery
from ..algorithms.msbfs import chunk_bytes as chunk_bytes
from ..algorithms.msbfs import plan_multi_query as plan_multi_query
from ._batched import BatchingConfig as BatchingConfig
from ._egraph_session import EGraphSession as EGraphSession
from ._graph_session import ResidentGraphSession as ResidentGraphSession
from ._open import egraph_session as egraph_session
from ._open import resident_graph as resident_graph
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
