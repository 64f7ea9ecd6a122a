"""The compaction kernels' geometry (the CUDA C reads it from ``khop_defines.cuh``)."""

from __future__ import annotations

#: Threads per block of ``khop_count`` and ``khop_scatter``.
KHOP_BLOCK = 256
#: Vertices per tile: one block's rounds of ``KHOP_BLOCK`` consecutive vertices.
KHOP_TILE = 2048
#: Threads of the one block of ``khop_scan``.
KHOP_SCAN_BLOCK = 1024
#: Most blocks a tile kernel launches; they stride over the other tiles.
MAX_TILE_BLOCKS = 65535

#: What ``khop_defines.cuh`` defines, by the names the CUDA C uses (a test checks it).
CUDA_DEFINES: dict[str, int] = {
    "KHOP_BLOCK": KHOP_BLOCK,
    "KHOP_TILE": KHOP_TILE,
    "KHOP_SCAN_BLOCK": KHOP_SCAN_BLOCK,
}


def compact_tiles(num_vertices: int) -> int:
    """Tiles of ``KHOP_TILE`` vertices covering ``num_vertices`` vertices."""
    return -(-num_vertices // KHOP_TILE)
