"""Multi-source BFS: up to ``64 * W`` traversals at once, one bit lane per source.

Each vertex carries W 64-bit words of visited and frontier bits; a level is one pull
over the in-edges for all sources together. :class:`MultiSourceTraversal` runs the
kernels over a resident graph as repeated sequences and reads back only what was
asked for (levels, target levels, reached counts, or levels and a BFS parent per
vertex), in buffers a caller may keep for the next traversal of the same shape
(:class:`MsbfsScratch`). The CUDA C is in this package's ``.cu`` files; the state
layout and launch shapes in its ``_layout`` module.
"""

from ...kernels import register_builtin as _register_builtin
from ._kernels import MSBFS_KERNELS as MSBFS_KERNELS
from ._kernels import msbfs_advance as msbfs_advance
from ._kernels import msbfs_count as msbfs_count
from ._kernels import msbfs_expand as msbfs_expand
from ._kernels import msbfs_expand_hubs as msbfs_expand_hubs
from ._kernels import msbfs_init as msbfs_init
from ._kernels import msbfs_init_levels as msbfs_init_levels
from ._kernels import msbfs_init_targets as msbfs_init_targets
from ._kernels import msbfs_parents as msbfs_parents
from ._kernels import msbfs_record_levels as msbfs_record_levels
from ._kernels import msbfs_record_targets as msbfs_record_targets
from ._layout import MSBFS_HUB_LANE_EDGES as MSBFS_HUB_LANE_EDGES
from ._layout import MSBFS_LANES_PER_WORD as MSBFS_LANES_PER_WORD
from ._layout import MSBFS_MAX_WORDS as MSBFS_MAX_WORDS
from ._layout import MSBFS_STATE_WORDS as MSBFS_STATE_WORDS
from ._layout import MSBFS_UNLIMITED as MSBFS_UNLIMITED
from ._layout import STATE_ACTIVE as STATE_ACTIVE
from ._layout import STATE_DISCOVERED as STATE_DISCOVERED
from ._layout import STATE_DONE as STATE_DONE
from ._layout import STATE_LANES as STATE_LANES
from ._layout import STATE_LEVEL as STATE_LEVEL
from ._layout import STATE_LEVELS_RUN as STATE_LEVELS_RUN
from ._layout import STATE_LIVE as STATE_LIVE
from ._layout import STATE_MAX_LEVEL as STATE_MAX_LEVEL
from ._layout import STATE_NEXT_LIVE as STATE_NEXT_LIVE
from ._layout import STATE_REACHED as STATE_REACHED
from ._layout import STATE_WIDTH as STATE_WIDTH
from ._layout import STATE_WORDS as STATE_WORDS
from ._layout import msbfs_hub_min_degree as msbfs_hub_min_degree
from ._layout import msbfs_words as msbfs_words
from ._part_kernels import MSBFS_PART_KERNELS as MSBFS_PART_KERNELS
from ._part_layout import DIRECTION_MODES as DIRECTION_MODES
from ._partitioned import Direction as Direction
from ._partitioned import PartedReadback as PartedReadback
from ._partitioned import PartedScratch as PartedScratch
from ._partitioned import PartedTraversal as PartedTraversal
from ._partitioned import allocate_parted_scratch as allocate_parted_scratch
from ._partitioned import check_parted_readback as check_parted_readback
from ._partitioned import minimal_parted_bytes as minimal_parted_bytes
from ._partitioned import minimal_replica_bytes as minimal_replica_bytes
from ._partitioned import parted_scratch_bytes as parted_scratch_bytes
from ._partitioned import parted_steps as parted_steps
from ._partitioned import parted_words as parted_words
from ._partitioned import run_parted_traversals as run_parted_traversals
from ._plan import MultiQueryPlan as MultiQueryPlan
from ._plan import QueryChunk as QueryChunk
from ._plan import TraversalQuery as TraversalQuery
from ._plan import TraversalShape as TraversalShape
from ._plan import chunk_bytes as chunk_bytes
from ._plan import lane_chunks as lane_chunks
from ._plan import plan_multi_query as plan_multi_query
from ._run import MsbfsScratch as MsbfsScratch
from ._run import MultiSourceTraversal as MultiSourceTraversal
from ._run import Readback as Readback
from ._run import ScratchShape as ScratchShape
from ._run import allocate_scratch as allocate_scratch
from ._run import free_scratch_buffers as free_scratch_buffers

_register_builtin(*MSBFS_KERNELS, *MSBFS_PART_KERNELS)

__all__ = [
    "DIRECTION_MODES",
    "Direction",
    "MSBFS_HUB_LANE_EDGES",
    "MSBFS_KERNELS",
    "MSBFS_LANES_PER_WORD",
    "MSBFS_MAX_WORDS",
    "MSBFS_PART_KERNELS",
    "MSBFS_STATE_WORDS",
    "MSBFS_UNLIMITED",
    "MsbfsScratch",
    "MultiQueryPlan",
    "MultiSourceTraversal",
    "PartedReadback",
    "PartedScratch",
    "PartedTraversal",
    "QueryChunk",
    "Readback",
    "STATE_ACTIVE",
    "STATE_DISCOVERED",
    "STATE_DONE",
    "STATE_LANES",
    "STATE_LEVEL",
    "STATE_LEVELS_RUN",
    "STATE_LIVE",
    "STATE_MAX_LEVEL",
    "STATE_NEXT_LIVE",
    "STATE_REACHED",
    "STATE_WIDTH",
    "STATE_WORDS",
    "ScratchShape",
    "TraversalQuery",
    "TraversalShape",
    "allocate_parted_scratch",
    "allocate_scratch",
    "check_parted_readback",
    "chunk_bytes",
    "free_scratch_buffers",
    "lane_chunks",
    "minimal_parted_bytes",
    "minimal_replica_bytes",
    "msbfs_advance",
    "msbfs_count",
    "msbfs_expand",
    "msbfs_expand_hubs",
    "msbfs_hub_min_degree",
    "msbfs_init",
    "msbfs_init_levels",
    "msbfs_init_targets",
    "msbfs_parents",
    "msbfs_record_levels",
    "msbfs_record_targets",
    "msbfs_words",
    "parted_scratch_bytes",
    "parted_steps",
    "parted_words",
    "plan_multi_query",
    "run_parted_traversals",
]
