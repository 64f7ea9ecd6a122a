"""How the split-graph kernels spread their work: edges, not vertices, over the grid,
so that a hub's list is cut over many warps (launch shapes and the CPU references that
describe the cut)."""

from __future__ import annotations

from vyre_async.algorithms.pagerank import _part_kernels as pagerank_part
from vyre_async.algorithms.pagerank._part_state import PART_GATHER_CHUNK


def test_split_pagerank_gather_gives_a_hubs_in_list_many_warps() -> None:
    """pr_part_gather launches a warp per PART_GATHER_CHUNK in-edges: one vertex with
    2**20 in-edges gets 1,024 warps, not one thread."""
    edges = 1 << 20
    shape = pagerank_part.pr_part_gather.launch({"nr": 1, "v1": 2, "ein": edges, "gl": 4})
    warps = shape.grid[0] * shape.threads_per_block // 32
    assert warps == edges // PART_GATHER_CHUNK
