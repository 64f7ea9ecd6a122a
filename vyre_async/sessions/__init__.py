"""Sessions: work kept resident on a backend (or a device group) across many calls.

:func:`resident_graph` keeps a graph on the device for queries of every registered
kind (BFS, k-hop, reachability, PageRank, ...), coalescing concurrent queries into
multi-query runs (for traversals, as ``algorithms.msbfs.plan_multi_query`` plans them);
:func:`egraph_session` keeps an e-graph for canonicalization. Both are async context
managers.
"""

from ._batched import BatchingConfig as BatchingConfig
from ._egraph_session import EGraphSession as EGraphSession
from ._graph_session import ResidentGraphSession as ResidentGraphSession
from ._open import egraph_session as egraph_session
from ._open import resident_graph as resident_graph
from ._stats import SessionStats as SessionStats

__all__ = [
    "BatchingConfig",
    "EGraphSession",
    "ResidentGraphSession",
    "SessionStats",
    "egraph_session",
    "resident_graph",
]
