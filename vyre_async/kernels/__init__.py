"""Kernels: CUDA C source, a typed signature, a launch rule and a CPU reference.

Also the built-in kernel library and NVRTC compilation to CUBIN with a memory and
disk cache.
"""

from __future__ import annotations

from ._axpy import axpy as axpy
from ._bfs import BFS_KERNELS as BFS_KERNELS
from ._bfs import BFS_STATE_WORDS as BFS_STATE_WORDS
from ._bfs import BFS_UNLIMITED as BFS_UNLIMITED
from ._bfs import bfs_advance as bfs_advance
from ._bfs import bfs_bottom_up as bfs_bottom_up
from ._bfs import bfs_init as bfs_init
from ._bfs import bfs_top_down as bfs_top_down
from ._cache import cache_root as cache_root
from ._compile import CompiledKernel as CompiledKernel
from ._compile import arch_for as arch_for
from ._compile import compile_kernel as compile_kernel
from ._egraph import EGRAPH_KERNELS as EGRAPH_KERNELS
from ._egraph import egraph_check as egraph_check
from ._egraph import egraph_clear as egraph_clear
from ._egraph import egraph_compress as egraph_compress
from ._egraph import egraph_init as egraph_init
from ._egraph import egraph_merge as egraph_merge
from ._egraph import egraph_rewrite as egraph_rewrite
from ._egraph import egraph_signatures as egraph_signatures
from ._egraph_layout import EGRAPH_STATE_WORDS as EGRAPH_STATE_WORDS
from ._histogram import histogram256 as histogram256
from ._kernel import BoundCall as BoundCall
from ._kernel import Kernel as Kernel
from ._kernel import LaunchRule as LaunchRule
from ._kernel import LaunchShape as LaunchShape
from ._kernel import Reference as Reference
from ._kernel import grid_stride as grid_stride
from ._msbfs import MSBFS_KERNELS as MSBFS_KERNELS
from ._msbfs import MSBFS_MAX_WORDS as MSBFS_MAX_WORDS
from ._msbfs import MSBFS_STATE_WORDS as MSBFS_STATE_WORDS
from ._msbfs import MSBFS_UNLIMITED as MSBFS_UNLIMITED
from ._msbfs import msbfs_advance as msbfs_advance
from ._msbfs import msbfs_count as msbfs_count
from ._msbfs import msbfs_expand as msbfs_expand
from ._msbfs import msbfs_expand_hubs as msbfs_expand_hubs
from ._msbfs import msbfs_init as msbfs_init
from ._msbfs import msbfs_init_levels as msbfs_init_levels
from ._msbfs import msbfs_init_targets as msbfs_init_targets
from ._msbfs import msbfs_record_levels as msbfs_record_levels
from ._msbfs import msbfs_record_targets as msbfs_record_targets
from ._nvrtc import nvrtc_version as nvrtc_version
from ._pagerank import PAGERANK_KERNELS as PAGERANK_KERNELS
from ._pagerank import PR_STATE_WORDS as PR_STATE_WORDS
from ._pagerank import pr_check as pr_check
from ._pagerank import pr_dangling as pr_dangling
from ._pagerank import pr_gather as pr_gather
from ._pagerank import pr_init as pr_init
from ._pagerank import pr_renumber as pr_renumber
from ._pagerank import pr_update as pr_update
from ._reduce import sum_reduce as sum_reduce
from ._rmat_build import RMAT_KERNELS as RMAT_KERNELS
from ._rmat_build import RMAT_RADIX_BITS as RMAT_RADIX_BITS
from ._rmat_build import radix_histogram as radix_histogram
from ._rmat_build import radix_scatter as radix_scatter
from ._rmat_build import rmat_edge_keys as rmat_edge_keys
from ._rmat_build import rmat_tiles as rmat_tiles
from ._rmat_build import scan_exclusive as scan_exclusive
from ._rmat_build import unique_compact as unique_compact
from ._rmat_build import unique_count as unique_count
from ._signature import BufferParam as BufferParam
from ._signature import Scalar as Scalar
from ._signature import ScalarParam as ScalarParam

#: Every kernel that ships with vyre_async, in a stable order.
BUILTIN_KERNELS: tuple[Kernel, ...] = (
    axpy,
    sum_reduce,
    histogram256,
    *BFS_KERNELS,
    *PAGERANK_KERNELS,
    *MSBFS_KERNELS,
    *EGRAPH_KERNELS,
)

__all__ = [
    "BFS_KERNELS",
    "BFS_STATE_WORDS",
    "BFS_UNLIMITED",
    "BUILTIN_KERNELS",
    "BoundCall",
    "BufferParam",
    "CompiledKernel",
    "EGRAPH_KERNELS",
    "EGRAPH_STATE_WORDS",
    "Kernel",
    "LaunchRule",
    "LaunchShape",
    "MSBFS_KERNELS",
    "MSBFS_MAX_WORDS",
    "MSBFS_STATE_WORDS",
    "MSBFS_UNLIMITED",
    "PAGERANK_KERNELS",
    "PR_STATE_WORDS",
    "RMAT_KERNELS",
    "RMAT_RADIX_BITS",
    "Reference",
    "Scalar",
    "ScalarParam",
    "arch_for",
    "axpy",
    "bfs_advance",
    "bfs_bottom_up",
    "bfs_init",
    "bfs_top_down",
    "cache_root",
    "compile_kernel",
    "egraph_check",
    "egraph_clear",
    "egraph_compress",
    "egraph_init",
    "egraph_merge",
    "egraph_rewrite",
    "egraph_signatures",
    "grid_stride",
    "histogram256",
    "msbfs_advance",
    "msbfs_count",
    "msbfs_expand",
    "msbfs_expand_hubs",
    "msbfs_init",
    "msbfs_init_levels",
    "msbfs_init_targets",
    "msbfs_record_levels",
    "msbfs_record_targets",
    "nvrtc_version",
    "pr_check",
    "pr_dangling",
    "pr_gather",
    "pr_init",
    "pr_renumber",
    "pr_update",
    "radix_histogram",
    "radix_scatter",
    "rmat_edge_keys",
    "rmat_tiles",
    "scan_exclusive",
    "sum_reduce",
    "unique_compact",
    "unique_count",
]
