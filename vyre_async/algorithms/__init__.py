"""Graph algorithms on any backend, and the query kinds built on them: one folder each.

- :mod:`~vyre_async.algorithms.bfs`: direction-optimizing single-source BFS, and the
  query kinds ``bfs``, ``khop`` and ``reach``.
- :mod:`~vyre_async.algorithms.bfs_path`: one shortest path (fewest edges) from a
  source to a target, the ``bfs_path`` kind.
- :mod:`~vyre_async.algorithms.components`: weakly connected components by hooking
  and pointer jumping, the ``components`` kind.
- :mod:`~vyre_async.algorithms.msbfs`: multi-source BFS, 64 sources per lane word
  (how many traversal queries run at once), and the multi-query planner.
- :mod:`~vyre_async.algorithms.pagerank`: pull PageRank in float32, the ``pagerank`` kind.
- :mod:`~vyre_async.algorithms.ppr`: personalized PageRank, many seeds as the columns
  of one power iteration, the ``ppr`` kind.
- :mod:`~vyre_async.algorithms.sssp`: near-far delta-stepping shortest paths, the
  ``sssp`` kind.
- :mod:`~vyre_async.algorithms.egraph`: e-graph images and congruence closure.
- :mod:`~vyre_async.algorithms.rmat`: the R-MAT generator on the device.

Each package keeps its CUDA C in ``.cu`` files shipped as package data and runs its
kernels as resident repeated sequences on the :class:`~vyre_async.backends.Backend`
protocol, so the same code runs on the CPU and the CUDA backend. Importing this
package registers every kernel it ships (``vyre_async.kernels.builtin_kernels``), and
the query kinds (:class:`QueryKind`), each naming the kernels its runs launch:
sessions, jobs and the Ray executor find a kind with
:func:`lookup` and never name one. A new kind is a folder here and its import below.
"""

from . import bfs as bfs
from . import bfs_path as bfs_path
from . import components as components
from . import egraph as egraph
from . import msbfs as msbfs
from . import pagerank as pagerank
from . import ppr as ppr
from . import rmat as rmat
from . import sssp as sssp
from ._kind import DEFAULT_QUERY_BUDGET as DEFAULT_QUERY_BUDGET
from ._kind import Params as Params
from ._kind import Partition as Partition
from ._kind import PartScratch as PartScratch
from ._kind import QueryKind as QueryKind
from ._kind import RecordField as RecordField
from ._kind import Replica as Replica
from ._kind import RunMeasure as RunMeasure
from ._kind import Scratch as Scratch
from ._kind import Summary as Summary
from ._registry import kind_names as kind_names
from ._registry import lookup as lookup
from ._registry import query_kinds as query_kinds
from ._registry import register as register

__all__ = [
    "DEFAULT_QUERY_BUDGET",
    "Params",
    "PartScratch",
    "Partition",
    "QueryKind",
    "RecordField",
    "Replica",
    "RunMeasure",
    "Scratch",
    "Summary",
    "bfs",
    "bfs_path",
    "components",
    "egraph",
    "kind_names",
    "lookup",
    "msbfs",
    "pagerank",
    "ppr",
    "query_kinds",
    "register",
    "rmat",
    "sssp",
]
