"""Level-synchronous, direction-optimizing BFS, and the traversal kinds built on it.

A traversal is ``bfs_init`` once, then levels of ``[bfs_top_down, bfs_bottom_up,
bfs_advance]`` as a resident repeated sequence (:func:`traverse`); everything that
changes between levels lives in an eight-word ``int32`` state block on the device
(indexed by the ``STATE_*`` constants). The CUDA C is in this package's ``.cu`` files.

The query kinds ``bfs``, ``khop`` and ``reach`` (:data:`BFS`, :data:`KHOP`,
:data:`REACH`) run one query with it and many with :mod:`..msbfs`. After a traversal,
:func:`traverse_with_parents` pulls a BFS parent per vertex from the in-edges, and
:func:`deliver_reached` compacts the reached vertices on the device (``khop_count``,
``khop_scan``, ``khop_scatter``) into a new array or the caller's, device arrays
included.
"""

from ...kernels import register_builtin as _register_builtin
from .._registry import register as _register
from ._compact import CompactScratch as CompactScratch
from ._compact import check_vertex_out as check_vertex_out
from ._compact import deliver_reached as deliver_reached
from ._compact_kernels import KHOP_KERNELS as KHOP_KERNELS
from ._compact_kernels import khop_count as khop_count
from ._compact_kernels import khop_scan as khop_scan
from ._compact_kernels import khop_scatter as khop_scatter
from ._compact_layout import KHOP_TILE as KHOP_TILE
from ._compact_layout import compact_tiles as compact_tiles
from ._kernels import BFS_KERNELS as BFS_KERNELS
from ._kernels import bfs_advance as bfs_advance
from ._kernels import bfs_bottom_up as bfs_bottom_up
from ._kernels import bfs_init as bfs_init
from ._kernels import bfs_top_down as bfs_top_down
from ._kinds import BFS as BFS
from ._kinds import KHOP as KHOP
from ._kinds import REACH as REACH
from ._kinds import BfsParams as BfsParams
from ._kinds import KhopParams as KhopParams
from ._kinds import ReachParams as ReachParams
from ._kinds import Readback as Readback
from ._kinds import reached_vertices as reached_vertices
from ._parents import ParentsScratch as ParentsScratch
from ._parents import traverse_with_parents as traverse_with_parents
from ._run import BfsScratch as BfsScratch
from ._run import level_steps as level_steps
from ._run import traverse as traverse
from ._state import BFS_STATE_WORDS as BFS_STATE_WORDS
from ._state import BFS_UNLIMITED as BFS_UNLIMITED
from ._state import STATE_DIRECTION as STATE_DIRECTION
from ._state import STATE_DISCOVERED as STATE_DISCOVERED
from ._state import STATE_DONE as STATE_DONE
from ._state import STATE_FRONTIER as STATE_FRONTIER
from ._state import STATE_LEVEL as STATE_LEVEL
from ._state import STATE_LEVELS_RUN as STATE_LEVELS_RUN
from ._state import STATE_MAX_LEVEL as STATE_MAX_LEVEL
from ._state import STATE_REACHED as STATE_REACHED

_register_builtin(*BFS_KERNELS, *KHOP_KERNELS)
_register(BFS, KHOP, REACH)

__all__ = [
    "BFS",
    "BFS_KERNELS",
    "BFS_STATE_WORDS",
    "BFS_UNLIMITED",
    "BfsParams",
    "BfsScratch",
    "CompactScratch",
    "KHOP",
    "KHOP_KERNELS",
    "KHOP_TILE",
    "KhopParams",
    "ParentsScratch",
    "REACH",
    "ReachParams",
    "Readback",
    "STATE_DIRECTION",
    "STATE_DISCOVERED",
    "STATE_DONE",
    "STATE_FRONTIER",
    "STATE_LEVEL",
    "STATE_LEVELS_RUN",
    "STATE_MAX_LEVEL",
    "STATE_REACHED",
    "bfs_advance",
    "bfs_bottom_up",
    "bfs_init",
    "bfs_top_down",
    "check_vertex_out",
    "compact_tiles",
    "deliver_reached",
    "khop_count",
    "khop_scan",
    "khop_scatter",
    "level_steps",
    "reached_vertices",
    "traverse",
    "traverse_with_parents",
]
