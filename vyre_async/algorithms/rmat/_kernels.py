"""Kernels that build an R-MAT graph's CSR arrays on the device, with NumPy references.

``rmat_edge_keys`` draws the edge stream as 64-bit keys, ``radix_histogram``,
``scan_exclusive`` and ``radix_scatter`` sort them (8 bits per pass), and
``unique_count``, ``scan_exclusive`` and ``unique_compact`` turn the sorted keys into
offsets and indices. Buffers the kernels fill are ``inout``: every element they are
meant to write is written, so nothing needs clearing first. The references follow the
CUDA kernels' definitions (tiles included), so the CPU backend runs the same pipeline.

The CUDA C is one translation unit, ``rmat.cu``; each kernel is compiled from it by
its entry point. The edge stream follows the definition in
``vyre_async/graphs/_rmat_counter.py`` integer for integer, so the device and the host
draw the same edges. Tile kernels (``radix_histogram``, ``radix_scatter``,
``unique_count``, ``unique_compact``) run one block of ``BLOCK`` threads per ``TILE``
consecutive keys. Counts are laid out digit-major (``counts[digit * tiles + tile]``),
so their exclusive scan gives each tile the first output position of each digit, and
the scatter is stable: within a tile, keys keep their order (warp ranks from
``__match_any_sync``, earlier warps' counts from shared memory).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...kernels import BufferParam, Kernel, LaunchRule, LaunchShape, ScalarParam, grid_stride
from .._cuda_files import cuda_file

#: Threads per block of the tile kernels; also the radix (one digit per thread).
BLOCK = 256
RADIX_BITS = 8
RADIX = 1 << RADIX_BITS
#: Keys per block of the tile kernels.
TILE = 1 << 16
#: Threads of the single-block scan.
SCAN_BLOCK = 1024
#: The CUDA C of every kernel here (one translation unit, compiled per entry point).
_SOURCE = cuda_file(__name__.rpartition(".")[0], "rmat.cu")

#: Entries of the alias table and words of stream keys ``rmat_edge_keys`` reads.
TABLE_SIZE = 1 << 16
STREAM_KEYS = 7
#: Key bits one radix pass sorts.
RMAT_RADIX_BITS = RADIX_BITS
_PERMUTE_ROUNDS = 3
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)

Arrays = Mapping[str, np.ndarray]
Scalars = Mapping[str, np.generic]


def rmat_tiles(n: int) -> int:
    """Blocks of the tile kernels over ``n`` keys (``radix_histogram``'s counts need
    ``2**RMAT_RADIX_BITS`` per block, ``unique_compact``'s starts one more than blocks)."""
    return -(-n // TILE)


def _per_tile(symbol: str) -> LaunchRule:
    def rule(sizes: Mapping[str, int]) -> LaunchShape:
        return LaunchShape(grid=(rmat_tiles(sizes[symbol]), 1, 1), block=(BLOCK, 1, 1))

    return rule


def _one_block(sizes: Mapping[str, int]) -> LaunchShape:
    return LaunchShape(grid=(1, 1, 1), block=(SCAN_BLOCK, 1, 1))


def _mix64(z: np.ndarray) -> np.ndarray:
    z = z ^ (z >> np.uint64(30))
    z *= _MIX1
    z ^= z >> np.uint64(27)
    z *= _MIX2
    mixed: np.ndarray = z ^ (z >> np.uint64(31))
    return mixed


def _relabel(x: np.ndarray, stream_keys: np.ndarray, scale: int) -> np.ndarray:
    mask, half = np.uint32((1 << scale) - 1), np.uint32(scale // 2 + 1)
    for i in range(_PERMUTE_ROUNDS):
        m = np.uint32((int(stream_keys[1 + 2 * i]) & 0xFFFFFFFF) | 1)
        k = np.uint32(int(stream_keys[2 + 2 * i]) & 0xFFFFFFFF)
        x = (x * m + k) & mask
        x ^= x >> half
    return x


def rmat_edge_keys_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``rmat_edge_keys``: keys ``2e`` and ``2e + 1`` of every edge ``e``."""
    keys, stream_keys = arrays["keys"], arrays["stream_keys"]
    thresholds, pairs = arrays["thresholds"], arrays["pairs"]
    scale, permute = int(scalars["scale"]), bool(scalars["permute"])
    edges = int(scalars["n2"]) // 2
    draws = (scale + 7) // 8
    src = np.zeros(edges, dtype=np.uint32)
    dst = np.zeros(edges, dtype=np.uint32)
    counter = np.arange(edges, dtype=np.uint64) * np.uint64(draws)
    for j in range(draws):
        word = _mix64(stream_keys[0] + _GOLDEN * (counter + np.uint64(j + 1)))
        column = (word >> np.uint64(48)).astype(np.intp)
        uniform = (word >> np.uint64(16)).astype(np.uint32)
        packed = pairs[column]
        bits = np.where(uniform < thresholds[column], packed & 0xFFFF, packed >> 16)
        src = (src << np.uint32(8)) | (bits & 0xFF).astype(np.uint32)
        dst = (dst << np.uint32(8)) | (bits >> 8).astype(np.uint32)
    drop = np.uint32(8 * draws - scale)
    src, dst = src >> drop, dst >> drop
    if permute:
        src, dst = _relabel(src, stream_keys, scale), _relabel(dst, stream_keys, scale)
    shift = np.uint64(scale)
    keys[0 : 2 * edges : 2] = (src.astype(np.uint64) << shift) | dst
    keys[1 : 2 * edges : 2] = (dst.astype(np.uint64) << shift) | src


def _digits(keys: np.ndarray, shift: int) -> np.ndarray:
    return ((keys >> np.uint64(shift)) & np.uint64(RADIX - 1)).astype(np.int64)


def radix_histogram_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``radix_histogram``: digit-major counts of each tile's digits."""
    keys, counts = arrays["keys"], arrays["counts"]
    tiles = rmat_tiles(keys.size)
    if RADIX * tiles > counts.size:
        return
    tile = np.arange(keys.size, dtype=np.int64) // TILE
    group = _digits(keys, int(scalars["shift"])) * tiles + tile
    counts[: RADIX * tiles] = np.bincount(group, minlength=RADIX * tiles)


def scan_exclusive_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``scan_exclusive``: the exclusive prefix sum, modulo 2**32, in place."""
    data = arrays["data"]
    inclusive = np.cumsum(data, dtype=np.uint64)
    data[1:] = inclusive[:-1].astype(np.uint32)
    if data.size:
        data[0] = 0


def radix_scatter_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``radix_scatter``: each key to its digit's tile start plus its rank there."""
    keys_in, keys_out, starts = arrays["keys_in"], arrays["keys_out"], arrays["starts"]
    tiles = rmat_tiles(keys_in.size)
    if RADIX * tiles > starts.size:
        return
    tile = np.arange(keys_in.size, dtype=np.int64) // TILE
    group = _digits(keys_in, int(scalars["shift"])) * tiles + tile
    order = np.argsort(group, kind="stable")
    grouped = group[order]
    rank = np.arange(grouped.size) - np.searchsorted(grouped, grouped, side="left")
    keys_out[starts[grouped].astype(np.int64) + rank] = keys_in[order]


def _first_of_run(keys: np.ndarray) -> np.ndarray:
    first = np.ones(keys.size, dtype=bool)
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    return first


def unique_count_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``unique_count``: per tile, the keys that differ from the key before them."""
    keys, counts = arrays["keys"], arrays["counts"]
    tiles = rmat_tiles(keys.size)
    tile = np.arange(keys.size, dtype=np.int64) // TILE
    found = np.bincount(tile[_first_of_run(keys)], minlength=tiles)
    shown = min(tiles, counts.size)
    counts[:shown] = found[:shown]


def unique_compact_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``unique_compact``: CSR offsets and indices of the distinct sorted keys."""
    keys, starts = arrays["keys"], arrays["starts"]
    offsets, indices = arrays["offsets"], arrays["indices"]
    scale = int(scalars["scale"])
    tiles = rmat_tiles(keys.size)
    if tiles + 1 > starts.size:
        return
    first = _first_of_run(keys)
    tile = np.arange(keys.size, dtype=np.int64) // TILE
    before = np.cumsum(first) - first  # firsts before each key, over the whole array
    tile_base = before[np.minimum(np.arange(tiles) * TILE, keys.size - 1)] if tiles else before
    position = starts[tile].astype(np.int64) + before - tile_base[tile]
    chosen = keys[first]
    indices[position[first]] = (chosen & np.uint64((1 << scale) - 1)).astype(np.int32)
    rows = (chosen >> np.uint64(scale)).astype(np.int64)
    at = np.searchsorted(rows, np.arange(offsets.size - 1), side="left")
    firsts = np.append(position[first], int(starts[tiles]))
    offsets[:-1] = firsts[at]
    offsets[-1] = int(starts[tiles])


rmat_edge_keys = Kernel(
    name="rmat_edge_keys",
    source=_SOURCE,
    entry="rmat_edge_keys",
    params=(
        BufferParam("thresholds", np.uint32, "in", TABLE_SIZE),
        BufferParam("pairs", np.uint32, "in", TABLE_SIZE),
        BufferParam("stream_keys", np.uint64, "in", STREAM_KEYS),
        BufferParam("keys", np.uint64, "inout", "n2"),
        ScalarParam("scale", np.int32),
        ScalarParam("permute", np.int32, 1),
        ScalarParam("n2", np.int64, default="n2"),
    ),
    launch=grid_stride("n2", items_per_thread=2),
    reference=rmat_edge_keys_reference,
)

radix_histogram = Kernel(
    name="radix_histogram",
    source=_SOURCE,
    entry="radix_histogram",
    params=(
        BufferParam("keys", np.uint64, "in", "n"),
        BufferParam("counts", np.uint32, "inout", "h"),
        ScalarParam("shift", np.int32),
        ScalarParam("n", np.int64, default="n"),
        ScalarParam("h", np.int64, default="h"),
    ),
    launch=_per_tile("n"),
    reference=radix_histogram_reference,
)

scan_exclusive = Kernel(
    name="scan_exclusive",
    source=_SOURCE,
    entry="scan_exclusive",
    params=(
        BufferParam("data", np.uint32, "inout", "m"),
        ScalarParam("m", np.int64, default="m"),
    ),
    launch=_one_block,
    reference=scan_exclusive_reference,
)

radix_scatter = Kernel(
    name="radix_scatter",
    source=_SOURCE,
    entry="radix_scatter",
    params=(
        BufferParam("keys_in", np.uint64, "in", "n"),
        BufferParam("keys_out", np.uint64, "inout", "n"),
        BufferParam("starts", np.uint32, "in", "h"),
        ScalarParam("shift", np.int32),
        ScalarParam("n", np.int64, default="n"),
        ScalarParam("h", np.int64, default="h"),
    ),
    launch=_per_tile("n"),
    reference=radix_scatter_reference,
)

unique_count = Kernel(
    name="unique_count",
    source=_SOURCE,
    entry="unique_count",
    params=(
        BufferParam("keys", np.uint64, "in", "n"),
        BufferParam("counts", np.uint32, "inout", "c"),
        ScalarParam("n", np.int64, default="n"),
        ScalarParam("c", np.int64, default="c"),
    ),
    launch=_per_tile("n"),
    reference=unique_count_reference,
)

unique_compact = Kernel(
    name="unique_compact",
    source=_SOURCE,
    entry="unique_compact",
    params=(
        BufferParam("keys", np.uint64, "in", "n"),
        BufferParam("starts", np.uint32, "in", "c"),
        BufferParam("offsets", np.int32, "inout", "v1"),
        BufferParam("indices", np.int32, "inout", "n"),
        ScalarParam("scale", np.int32),
        ScalarParam("n", np.int64, default="n"),
        ScalarParam("c", np.int64, default="c"),
        ScalarParam("v1", np.int64, default="v1"),
    ),
    launch=_per_tile("n"),
    reference=unique_compact_reference,
)

#: The device R-MAT builder's kernels, in pipeline order.
RMAT_KERNELS: tuple[Kernel, ...] = (
    rmat_edge_keys,
    radix_histogram,
    scan_exclusive,
    radix_scatter,
    unique_count,
    unique_compact,
)
