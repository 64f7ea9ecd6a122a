"""Personalized PageRank geometry: the state words, column widths, and launch shapes.

A run keeps W personalized rank vectors side by side, ``rank[v * W + c]`` for seed
column ``c``, so one warp reads the W (or a tile of the W) ranks of a vertex in one
coalesced access. W is a power of two up to 32 or a multiple of 32 up to
:data:`MAX_COLUMNS`; the kernels derive it from the bound lengths (``seeds`` has W
elements, the rank buffers ``V * W``) and do nothing for any other value. See
:mod:`._kernels` for the algorithm.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...kernels import LaunchRule, LaunchShape

#: Columns (seeds) one run carries at most.
MAX_COLUMNS = 1024
#: Threads per block of every kernel but ``ppr_check``'s one block (also 256).
BLOCK = 256
#: In-edges one warp task of ``ppr_gather`` walks (for one tile of columns).
GATHER_CHUNK = 256
#: Rows of ranks one warp of ``ppr_gather`` has in flight at once.
GATHER_UNROLL = 8
#: Bins of one radix digit of the top-k select (8 bits a pass).
TOP_BINS = 256

#: float32 state words; ``STATE_*`` index them. Nonzero once the run has finished;
#: every kernel then returns at once.
STATE_DONE = 0
#: Iterations completed; odd means the latest ranks are in the second buffer.
STATE_ITERATIONS = 1
#: The iteration limit, as given (clamped to :data:`PPR_MAX_ITER_LIMIT`).
STATE_MAX_ITER = 2
#: The convergence bound on each column's L1 change.
STATE_TOL = 3
#: The damping factor (probability of following an edge).
STATE_DAMPING = 4
#: Columns still iterating after the last check.
STATE_ACTIVE = 5
#: 1 when the single column's personalization is the dense ``personal`` vector.
STATE_DENSE = 6
#: Words of the state buffer.
STATE_WORDS = 8
#: Iteration limits beyond this are clamped: a float32 counter stops counting at 2**24.
PPR_MAX_ITER_LIMIT = 2**24

#: What ``ppr_defines.cuh`` defines for the kernels' CUDA C (a test checks it).
CUDA_DEFINES: dict[str, int] = {
    "BLOCK": BLOCK,
    "MAX_COLUMNS": MAX_COLUMNS,
    "GATHER_CHUNK": GATHER_CHUNK,
    "GATHER_UNROLL": GATHER_UNROLL,
    "TOP_BINS": TOP_BINS,
    "STATE_DONE": STATE_DONE,
    "STATE_ITERATIONS": STATE_ITERATIONS,
    "STATE_MAX_ITER": STATE_MAX_ITER,
    "STATE_TOL": STATE_TOL,
    "STATE_DAMPING": STATE_DAMPING,
    "STATE_ACTIVE": STATE_ACTIVE,
    "STATE_DENSE": STATE_DENSE,
    "STATE_WORDS": STATE_WORDS,
}


def valid_columns(width: int) -> bool:
    """Whether the kernels run with ``width`` columns: a power of two up to 32, or a
    multiple of 32 up to :data:`MAX_COLUMNS`."""
    if width <= 0 or width > MAX_COLUMNS:
        return False
    return width & (width - 1) == 0 if width < 32 else width % 32 == 0


def tile_width(width: int) -> int:
    """Columns one warp handles at once: 128 (four per lane, as ``float4``) when they
    divide ``width``, else up to 32 (one per lane)."""
    return 128 if width % 128 == 0 else min(width, 32)


def columns_for(count: int) -> int:
    """The width that carries ``count`` seeds with the least padding: the next power of
    two up to 128, then the next multiple of 128 (so wide runs load ``float4``)."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    if count > MAX_COLUMNS:
        raise ValueError(f"count must be <= {MAX_COLUMNS}, got {count}")
    if count <= 128:
        return 1 << (count - 1).bit_length()
    return -(-count // 128) * 128


def columns_within(limit: int) -> int:
    """The widest width :func:`columns_for` gives for at most ``limit`` columns (0 when
    ``limit < 1``), so any count up to it rounds up to a width that fits too."""
    limit = min(limit, MAX_COLUMNS)
    if limit < 1:
        return 0
    if limit >= 128:
        return limit // 128 * 128
    return 1 << (limit.bit_length() - 1)


def id_shift(num_vertices: int) -> int:
    """The shift of the top radix digit of a vertex number ``V - 1 - v`` (-1: one vertex,
    nothing to tell apart)."""
    bits = max(num_vertices - 1, 0).bit_length()
    return 8 * ((bits - 1) // 8) if bits else -1


def top_passes(num_vertices: int) -> int:
    """Radix passes of the top-k select: four over the rank's bits, then the vertex
    number's nonzero digits."""
    shift = id_shift(num_vertices)
    return 4 + (shift // 8 + 1 if shift >= 0 else 0)


def _blocks(count: int, cap: int, per_block: int = BLOCK) -> int:
    return max(1, min(cap, -(-count // per_block)))


def grid_launch(symbol: str, cap: int = 4096) -> LaunchRule:
    """A grid-stride launch over ``sizes[symbol]`` elements, at least one block."""

    def rule(sizes: Mapping[str, int]) -> LaunchShape:
        return LaunchShape(grid=(_blocks(sizes[symbol], cap), 1, 1), block=(BLOCK, 1, 1))

    return rule


def gather_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """One warp per task (a chunk of in-edges and a tile of columns), capped; no blocks
    when there are no edges."""
    width = sizes["w"]
    tiles = width // tile_width(width) if valid_columns(width) else 1
    tasks = -(-sizes["e"] // GATHER_CHUNK) * tiles
    blocks = min(65535, -(-tasks // (BLOCK // 32)))
    return LaunchShape(grid=(blocks, 1, 1), block=(BLOCK, 1, 1))


def update_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """A grid-stride launch over the ranks, capped so each column's sums take few atomics,
    with at least a thread per column (each thread keeps one column)."""
    blocks = max(_blocks(sizes["vw"], 2048, 4 * BLOCK), _blocks(sizes["w"], MAX_COLUMNS))
    return LaunchShape(grid=(blocks, 1, 1), block=(BLOCK, 1, 1))


def one_block(sizes: Mapping[str, int]) -> LaunchShape:
    """One block (the per-column bookkeeping between iterations)."""
    return LaunchShape(grid=(1, 1, 1), block=(BLOCK, 1, 1))


def rows_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """One block per 32 x 32 tile of (vertices, columns), capped."""
    width = max(sizes["w"], 1)
    vertices = sizes["vw"] // width
    tiles = -(-vertices // 32) * -(-width // 32)
    return LaunchShape(grid=(max(1, min(65535, tiles)), 1, 1), block=(BLOCK, 1, 1))


def hist_launch(sizes: Mapping[str, int]) -> LaunchShape:
    """Blocks of (vertex slice, column tile): ``grid.y`` tiles of up to 32 columns."""
    width = max(sizes["w"], 1)
    tiles = max(1, width // min(width, 32))
    vertices = sizes["vw"] // width
    slices = max(1, min(-(-vertices // BLOCK), -(-2048 // tiles)))
    return LaunchShape(grid=(slices, tiles, 1), block=(BLOCK, 1, 1))
