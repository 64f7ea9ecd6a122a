"""Shortest paths on weighted graphs: near-far delta-stepping kernels and their runs.

One source: ``sssp_init`` once, then ``sssp_step`` repeated as a resident sequence
(:func:`shortest_paths`), with everything that changes between steps in a 32-word
``int32`` state block on the device (``STATE_*``); light steps walk a light graph of
the edges lighter than delta (:func:`build_light_graph`). Many sources: up to 32 at
once as lanes of one traversal (:func:`shortest_paths_many`), distances or reach
counts. The algorithms are described in the ``_kernels`` and ``_many_kernels``
modules; the CUDA C is in this package's ``.cu`` files. :data:`SSSP` is the ``sssp``
query kind.
"""

from ...kernels import register_builtin as _register_builtin
from .._registry import register as _register
from ._buffers import free_scratch_buffers as free_scratch_buffers
from ._delta import choose_delta as choose_delta
from ._graph import GRAPH_BUFFERS as GRAPH_BUFFERS
from ._graph import LIGHT_BUFFERS as LIGHT_BUFFERS
from ._graph import GraphStats as GraphStats
from ._graph import LightGraph as LightGraph
from ._graph import build_light_graph as build_light_graph
from ._graph import graph_delta as graph_delta
from ._graph import measure_graph as measure_graph
from ._kernels import SSSP_KERNELS as SSSP_KERNELS
from ._kernels import sssp_graph_stats as sssp_graph_stats
from ._kernels import sssp_init as sssp_init
from ._kernels import sssp_light_count as sssp_light_count
from ._kernels import sssp_light_fill as sssp_light_fill
from ._kernels import sssp_step as sssp_step
from ._kind import SSSP as SSSP
from ._kind import SsspParams as SsspParams
from ._layout import CHUNK_EDGES as CHUNK_EDGES
from ._layout import SSSP_STATE_WORDS as SSSP_STATE_WORDS
from ._layout import SSSP_UNBOUNDED as SSSP_UNBOUNDED
from ._layout import STATE_DONE as STATE_DONE
from ._layout import STATE_HEAVY_ROUNDS as STATE_HEAVY_ROUNDS
from ._layout import STATE_LIGHT_ROUNDS as STATE_LIGHT_ROUNDS
from ._layout import STATE_REACHED as STATE_REACHED
from ._layout import STATE_RELAXED as STATE_RELAXED
from ._layout import STATE_ROUND as STATE_ROUND
from ._layout import STATE_SCANNED as STATE_SCANNED
from ._layout import WIDE_MIN_DEGREE as WIDE_MIN_DEGREE
from ._many import MANY_DELTA_SCALE as MANY_DELTA_SCALE
from ._many import ManyRun as ManyRun
from ._many import ManyShape as ManyShape
from ._many import ManySsspScratch as ManySsspScratch
from ._many import Readback as Readback
from ._many import allocate_many_scratch as allocate_many_scratch
from ._many import lanes_for_budget as lanes_for_budget
from ._many import many_scratch_nbytes as many_scratch_nbytes
from ._many import shortest_paths_many as shortest_paths_many
from ._many_kernels import SSSP_MANY_KERNELS as SSSP_MANY_KERNELS
from ._many_kernels import sssp_many_count as sssp_many_count
from ._many_kernels import sssp_many_init as sssp_many_init
from ._many_kernels import sssp_many_rows as sssp_many_rows
from ._many_kernels import sssp_many_seed as sssp_many_seed
from ._many_kernels import sssp_many_step as sssp_many_step
from ._many_layout import MANY_MAX_LANES as MANY_MAX_LANES
from ._plan import LANES_MAX_SKEW as LANES_MAX_SKEW
from ._plan import allocate_shape as allocate_shape
from ._plan import plan_many as plan_many
from ._plan import shape_nbytes as shape_nbytes
from ._run import ScratchShape as ScratchShape
from ._run import SsspScratch as SsspScratch
from ._run import allocate_scratch as allocate_scratch
from ._run import scratch_nbytes as scratch_nbytes
from ._run import shortest_paths as shortest_paths

_register_builtin(*SSSP_KERNELS, *SSSP_MANY_KERNELS)
_register(SSSP)

__all__ = [
    "CHUNK_EDGES",
    "GRAPH_BUFFERS",
    "GraphStats",
    "LANES_MAX_SKEW",
    "LIGHT_BUFFERS",
    "LightGraph",
    "MANY_DELTA_SCALE",
    "MANY_MAX_LANES",
    "ManyRun",
    "ManyShape",
    "ManySsspScratch",
    "Readback",
    "SSSP",
    "SSSP_KERNELS",
    "SSSP_MANY_KERNELS",
    "SSSP_STATE_WORDS",
    "SSSP_UNBOUNDED",
    "STATE_DONE",
    "STATE_HEAVY_ROUNDS",
    "STATE_LIGHT_ROUNDS",
    "STATE_REACHED",
    "STATE_RELAXED",
    "STATE_ROUND",
    "STATE_SCANNED",
    "ScratchShape",
    "SsspParams",
    "SsspScratch",
    "WIDE_MIN_DEGREE",
    "allocate_many_scratch",
    "allocate_scratch",
    "allocate_shape",
    "build_light_graph",
    "choose_delta",
    "free_scratch_buffers",
    "graph_delta",
    "lanes_for_budget",
    "many_scratch_nbytes",
    "measure_graph",
    "plan_many",
    "scratch_nbytes",
    "shape_nbytes",
    "shortest_paths",
    "shortest_paths_many",
    "sssp_graph_stats",
    "sssp_init",
    "sssp_light_count",
    "sssp_light_fill",
    "sssp_many_count",
    "sssp_many_init",
    "sssp_many_rows",
    "sssp_many_seed",
    "sssp_many_step",
    "sssp_step",
]
