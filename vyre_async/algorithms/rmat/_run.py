"""R-MAT built on a backend's device: the edge stream drawn there, sorted and compacted there.

The host's :func:`~vyre_async.graphs.rmat` spends its time sorting 10**8 keys; here
the keys never leave the device until they are CSR arrays. One resident sequence
draws the stream (``2 * edge_factor * 2**scale`` keys, both directions of each edge),
sorts it with ``ceil(2 * scale / 8)`` radix passes, and compacts the distinct keys
into offsets and indices, then two reads bring back the edge count and the arrays.
The result equals the host generator's, array for array: both follow
:class:`~vyre_async.graphs.RmatParams`'s definition and a sorted, deduplicated key
set has one order.

Device memory: ``20`` bytes per generated key (two key buffers of 8 and an indices
buffer of 4), about 2.7 GB at scale 22 with edge factor 16.
"""

from __future__ import annotations

import anyio
import numpy as np

from ...backends import Backend, ReadRange, ResidentBuffer, SequenceStep
from ...errors import UnsupportedFeatureError
from ...graphs import CsrGraph, RmatParams, trusted_csr
from ...kernels import compile_kernel
from ._kernels import (
    RMAT_KERNELS,
    RMAT_RADIX_BITS,
    radix_histogram,
    radix_scatter,
    rmat_edge_keys,
    rmat_tiles,
    scan_exclusive,
    unique_compact,
    unique_count,
)

#: Keys the device builder handles at most (offsets and positions are 32-bit there).
MAX_DEVICE_RMAT_KEYS = 2**31 - 1
#: Device bytes per generated key (two uint64 key buffers and an int32 indices buffer).
DEVICE_BYTES_PER_KEY = 20
#: Seconds a failed or cancelled build waits for its sequence before freeing its buffers.
_SETTLE_S = 30.0
_RADIX = 1 << RMAT_RADIX_BITS


def device_rmat_bytes(params: RmatParams) -> int:
    """Device memory the builder allocates for ``params`` (the graph's own arrays included)."""
    keys = 2 * params.num_edges
    tiles = rmat_tiles(keys)
    return DEVICE_BYTES_PER_KEY * keys + 4 * (_RADIX * tiles + tiles + 1 + params.num_vertices + 1)


async def rmat_on_device(backend: Backend, params: RmatParams) -> CsrGraph:
    """Build the symmetric, deduplicated, relabelled R-MAT graph of ``params`` on ``backend``.

    Equal to ``rmat(params.scale, params.edge_factor, params.seed, a=..., b=..., c=...)``
    with its defaults. On the CPU backend the kernels' NumPy references run instead.

    Args:
        backend: An open backend.
        params: The graph's parameters (from :func:`~vyre_async.graphs.rmat_params`).

    Returns:
        The graph, its arrays on the host.

    Raises:
        UnsupportedFeatureError: The graph has more keys than the builder handles.
        OutOfMemoryError: The device has no room for the builder's buffers.
    """
    keys_needed = 2 * params.num_edges
    if keys_needed > MAX_DEVICE_RMAT_KEYS:
        raise UnsupportedFeatureError(
            f"an R-MAT graph of scale {params.scale} and edge factor {params.edge_factor} "
            f"draws {keys_needed} keys; the device builder handles at most {MAX_DEVICE_RMAT_KEYS}",
            fix="generate it on the host (vyre_async.graphs.rmat), or lower scale or edge_factor.",
        )
    await _compile_ahead(backend)
    thresholds, pairs = params.alias_table()
    tiles = rmat_tiles(keys_needed)
    buffers: list[ResidentBuffer] = []

    async def alloc(count: int, dtype: type[np.generic]) -> ResidentBuffer:
        buffer = await backend.alloc(count * np.dtype(dtype).itemsize, dtype)
        buffers.append(buffer)
        return buffer

    try:
        table = await backend.upload_group([thresholds, pairs, params.stream_keys()])
        buffers.extend(table)
        keys = await alloc(keys_needed, np.uint64)
        spare = await alloc(keys_needed, np.uint64)
        counts = await alloc(_RADIX * tiles, np.uint32)
        starts = await alloc(tiles + 1, np.uint32)
        offsets = await alloc(params.num_vertices + 1, np.int32)
        indices = await alloc(keys_needed, np.int32)
        steps = [
            SequenceStep(
                rmat_edge_keys,
                {
                    "thresholds": table[0],
                    "pairs": table[1],
                    "stream_keys": table[2],
                    "keys": keys,
                },
                {"scale": params.scale, "permute": 1},
            )
        ]
        source, target = keys, spare
        for shift in range(0, 2 * params.scale, RMAT_RADIX_BITS):
            steps += [
                SequenceStep(radix_histogram, {"keys": source, "counts": counts}, {"shift": shift}),
                SequenceStep(scan_exclusive, {"data": counts}),
                SequenceStep(
                    radix_scatter,
                    {"keys_in": source, "keys_out": target, "starts": counts},
                    {"shift": shift},
                ),
            ]
            source, target = target, source
        steps += [
            SequenceStep(unique_count, {"keys": source, "counts": starts}),
            SequenceStep(scan_exclusive, {"data": starts}),
            SequenceStep(
                unique_compact,
                {"keys": source, "starts": starts, "offsets": offsets, "indices": indices},
                {"scale": params.scale},
            ),
        ]
        (total,) = await backend.submit_sequence(steps, reads=[ReadRange(starts, tiles, 1)])
        num_edges = int(total[0])
        offsets_host, indices_host = await backend.read_many(
            [ReadRange(offsets), ReadRange(indices, 0, num_edges)]
        )
    finally:
        with anyio.CancelScope(shield=True):
            # After a failure or a cancellation the sequence may still be running.
            with anyio.move_on_after(_SETTLE_S):
                await backend.settle(buffers)
            for buffer in buffers:
                await backend.free(buffer)
    return await anyio.to_thread.run_sync(
        lambda: trusted_csr(offsets_host, indices_host, symmetric=True)
    )


async def _compile_ahead(backend: Backend) -> None:
    """Compile the builder's kernels for a CUDA device in parallel (first use only).

    The backend would compile them one after another when the sequence is submitted;
    NVRTC takes a fifth of a second each. A backend without a device architecture (the
    CPU backend) compiles nothing.
    """
    arch = getattr(getattr(backend, "device_info", None), "arch", None)
    if not isinstance(arch, str):
        return
    async with anyio.create_task_group() as tg:
        for kernel in RMAT_KERNELS:
            tg.start_soon(anyio.to_thread.run_sync, compile_kernel, kernel, arch)
