"""CSR arrays of an R-MAT edge stream, built by a bucketed sort spread over threads.

Each edge ``(u, v)`` becomes the key ``u << scale | v`` (and ``v << scale | u`` for a
symmetric graph); sorted keys are CSR order (rows by source, each row by destination),
so deduplicating is dropping equal neighbours and the row offsets are a binary search.
Sorting 10**8 keys as one array takes seconds, so the keys are first split by the top
bits of their row into ranges of about :data:`BUCKET_KEYS` keys, small enough to sort
in a core's cache, which threads then sort and compact independently. NumPy releases
the GIL inside these calls, so the threads run in parallel.

The result depends only on the set (or, without dedupe, the multiset) of keys, never on
the order the edges were drawn in, so any generator of the same stream that sorts its
keys gives the same arrays.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from ._checks import INT32_MAX, Indices, Offsets
from ._rmat_counter import RmatParams, kronecker_ids, permute_ids

#: Edges one thread generates and splits per task; its own steps are cache-sized.
TASK_EDGES = 1 << 18
STEP_EDGES = 1 << 14
#: Keys per independently sorted row range, about (sorting 2**15 keys costs 35 ns a key
#: where 2**21 cost 58 on a Zen 4 core); at most 2**16 ranges.
BUCKET_KEYS = 1 << 15
MAX_BUCKET_BITS = 16
#: Threads at most (one per core up to this), and the edges from which they are used
#: (below it the work runs in the caller's thread, which is quicker than starting them).
MAX_THREADS = 16
PARALLEL_MIN_EDGES = 1 << 21

UInt64s = npt.NDArray[np.uint64]
T = TypeVar("T")


def rmat_csr(
    params: RmatParams, *, symmetric: bool, dedupe: bool, permute: bool
) -> tuple[Offsets, Indices]:
    """Offsets and indices of the graph the edge stream of ``params`` describes.

    Args:
        params: The stream.
        symmetric: Add every edge reversed (a self loop once).
        dedupe: Collapse repeated edges.
        permute: Relabel vertex ids.

    Returns:
        ``(offsets, indices)``: int32 offsets unless the edge count needs int64.
    """
    scale = params.scale
    per_edge = 2 if symmetric else 1
    wanted = (per_edge * params.num_edges // BUCKET_KEYS).bit_length() - 1
    bucket_bits = max(0, min(scale, MAX_BUCKET_BITS, wanted))
    to_bucket = np.uint64(scale + scale - bucket_bits)  # key >> this = row's top bits
    buckets = 1 << bucket_bits
    tasks = range(-(-params.num_edges // TASK_EDGES))
    keys = np.empty(per_edge * params.num_edges, dtype=np.uint64)
    counts = np.zeros((len(tasks), buckets), dtype=np.int64)
    perm_keys = params.stream_keys() if permute else None

    def split(task: int) -> None:
        """Generate a task's edges into its region of ``keys``, grouped by bucket."""
        start = task * TASK_EDGES
        stop = min(params.num_edges, start + TASK_EDGES)
        made = np.concatenate(
            [
                _edge_keys(params, s, min(stop, s + STEP_EDGES), symmetric, perm_keys)
                for s in range(start, stop, STEP_EDGES)
            ]
        )
        bucket = (made >> to_bucket).astype(np.uint16)
        order = np.argsort(bucket, kind="stable")  # a radix sort for 16-bit keys
        base = per_edge * start
        np.take(made, order, out=keys[base : base + made.size])
        counts[task] = np.bincount(bucket, minlength=buckets)

    threads = _threads() if params.num_edges >= PARALLEL_MIN_EDGES else 1
    with ThreadPoolExecutor(max_workers=threads) if threads > 1 else nullcontext() as pool:
        _run_all(pool, split, tasks)
        # Where each task's run of each bucket goes: buckets in order, tasks in order.
        totals = counts.sum(axis=0)
        bucket_start = np.concatenate(([0], np.cumsum(totals)))
        place = bucket_start[:-1] + np.cumsum(counts, axis=0) - counts
        task_offsets = np.cumsum(counts, axis=1) - counts
        grouped = np.empty(int(bucket_start[-1]), dtype=np.uint64)

        def move(task: int) -> None:
            base = per_edge * task * TASK_EDGES
            part = keys[base : base + int(counts[task].sum())]
            bucket = (part >> to_bucket).astype(np.intp)
            # The task's keys are grouped by bucket: the k-th key of bucket b goes to
            # place[task, b] + k.
            rank = np.arange(part.size) - task_offsets[task][bucket]
            grouped[place[task][bucket] + rank] = part

        _run_all(pool, move, tasks)
        keys = np.empty(0, dtype=np.uint64)  # frees the split keys before the sorts
        kept = np.zeros(buckets, dtype=np.int64)

        def sort(b: int) -> None:
            part = grouped[int(bucket_start[b]) : int(bucket_start[b + 1])]
            part.sort()
            kept[b] = _unique_in_place(part) if dedupe else part.size

        _run_all(pool, sort, range(buckets))
        num_edges = int(kept.sum())
        rows = params.num_vertices + 1
        offsets: Offsets = (
            np.empty(rows, dtype=np.int32) if num_edges <= INT32_MAX else np.empty(rows, np.int64)
        )
        indices: Indices = np.empty(num_edges, dtype=np.int32)
        written = np.concatenate(([0], np.cumsum(kept)))
        rows_per_bucket = params.num_vertices >> bucket_bits
        col_mask = np.uint64((1 << scale) - 1)

        def emit(b: int) -> None:
            part = grouped[int(bucket_start[b]) : int(bucket_start[b]) + int(kept[b])]
            at = int(written[b])
            indices[at : at + part.size] = part & col_mask
            first_row = b * rows_per_bucket
            rows = np.arange(first_row, first_row + rows_per_bucket, dtype=np.uint64)
            row_starts = np.searchsorted(part, rows << np.uint64(scale))
            offsets[first_row : first_row + rows_per_bucket] = at + row_starts

        _run_all(pool, emit, range(buckets))
    offsets[-1] = num_edges
    return offsets, indices


def _edge_keys(
    params: RmatParams, start: int, stop: int, symmetric: bool, perm_keys: UInt64s | None
) -> UInt64s:
    src, dst = kronecker_ids(params, start, stop)
    if perm_keys is not None:
        src = permute_ids(src, params.scale, perm_keys)
        dst = permute_ids(dst, params.scale, perm_keys)
    shift = np.uint64(params.scale)
    forward = (src.astype(np.uint64) << shift) | dst
    if not symmetric:
        return forward
    loop = src == dst
    reverse = (dst[~loop].astype(np.uint64) << shift) | src[~loop]
    return np.concatenate((forward, reverse))


def _unique_in_place(part: UInt64s) -> int:
    """Compact the sorted ``part`` to its distinct values in place; return their count."""
    if part.size < 2:
        return int(part.size)
    first = np.empty(part.size, dtype=bool)
    first[0] = True
    np.not_equal(part[1:], part[:-1], out=first[1:])
    distinct = part[first]
    part[: distinct.size] = distinct
    return int(distinct.size)


def _threads() -> int:
    return max(1, min(os.cpu_count() or 1, MAX_THREADS))


def _run_all(
    pool: ThreadPoolExecutor | None, work: Callable[[T], None], items: Iterable[T]
) -> None:
    """Run ``work`` on every item, in the pool if there is one; the first exception
    propagates."""
    if pool is None:
        for item in items:
            work(item)
        return
    for future in [pool.submit(work, item) for item in items]:
        future.result()
