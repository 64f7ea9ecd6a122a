"""NumPy references of the partitioned PageRank kernels: the device semantics on the host.

Sums are taken in float64 and rounded once, standing in for the device's float32
partial sums; the group-wide header sums run in device order in float32, as on the
device, so every device takes the same decision.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._part_state import (
    PART_DANGLING,
    PART_DONE,
    PART_HEADER,
    PART_ITERATIONS,
    PART_LAST_DIFF,
    PART_LOCAL_DANGLING,
    PART_LOCAL_DIFF,
    PART_MAX_ITER,
    PART_TOL,
)
from ._state import PR_MAX_ITER_LIMIT

Arrays = Mapping[str, np.ndarray]
Scalars = Mapping[str, np.generic]


def _int(scalars: Scalars, name: str) -> int:
    return int(scalars[name].item())


def _f32(value: object) -> np.float32:
    return np.float32(value)  # type: ignore[arg-type]


def _valid(arrays: Arrays, scalars: Scalars, nd: int) -> bool:
    """``pr_part_valid`` of the CUDA C."""
    parts, part, chunk = _int(scalars, "parts"), _int(scalars, "part"), _int(scalars, "chunk")
    n_total = _int(scalars, "n_total")
    return (
        parts >= 1
        and 0 <= part < parts
        and chunk >= 1
        and 0 <= nd <= chunk
        and part * chunk + nd <= n_total
        and n_total <= parts * chunk
        and (arrays["rank"] if "rank" in arrays else arrays["sums"]).size >= nd
        and arrays.get("send", np.empty(chunk + PART_HEADER)).size >= chunk + PART_HEADER
        and arrays["recv"].size >= parts * (chunk + PART_HEADER)
    )


def pr_part_init_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``pr_part_init``: uniform ranks, cleared sums, a fresh state."""
    nd = min(_int(scalars, "n1") - 1, arrays["rank"].size)
    n_total, max_iter = _int(scalars, "n_total"), _int(scalars, "max_iter")
    uniform = _f32(1.0) / _f32(n_total) if n_total > 0 else _f32(0.0)
    arrays["rank"][:nd] = uniform
    arrays["sums"][:nd] = 0
    done = 1.0 if max_iter <= 0 or n_total <= 0 else 0.0
    limit = float(min(max_iter, PR_MAX_ITER_LIMIT))
    arrays["state"][:] = (0.0, 0.0, done, 0.0, scalars["tol"].item(), limit, 0.0, 0.0)


def pr_part_share_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``pr_part_share``: shares into send and the own recv slot; dangling mass."""
    state = arrays["state"]
    nd = _int(scalars, "n1") - 1
    if state[PART_DONE] != 0 or arrays["out_degree"].size < nd or not _valid(arrays, scalars, nd):
        return
    chunk, part = _int(scalars, "chunk"), _int(scalars, "part")
    rank, degree = arrays["rank"][:nd], arrays["out_degree"][:nd]
    shares = np.zeros(nd, np.float32)
    has_edges = degree > 0
    shares[has_edges] = rank[has_edges] / degree[has_edges].astype(np.float32)
    arrays["send"][:nd] = shares
    start = part * (chunk + PART_HEADER)
    arrays["recv"][start : start + nd] = shares
    state[PART_LOCAL_DANGLING] += _f32(rank[~has_edges].sum(dtype=np.float64))


def pr_part_header_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``pr_part_header``: dangling mass and last change into the slot headers."""
    state = arrays["state"]
    parts, part, chunk = _int(scalars, "parts"), _int(scalars, "part"), _int(scalars, "chunk")
    send, recv = arrays["send"], arrays["recv"]
    if (
        state[PART_DONE] != 0
        or not 0 <= part < parts
        or chunk < 1
        or send.size < chunk + PART_HEADER
        or recv.size < parts * (chunk + PART_HEADER)
    ):
        return
    header = (state[PART_LOCAL_DANGLING], state[PART_LOCAL_DIFF])
    send[chunk : chunk + PART_HEADER] = header
    start = part * (chunk + PART_HEADER) + chunk
    recv[start : start + PART_HEADER] = header


def pr_part_check_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``pr_part_check``: the group's dangling mass and change, in device order."""
    state, recv = arrays["state"], arrays["recv"]
    if state[PART_DONE] != 0:
        return
    parts, chunk = _int(scalars, "parts"), _int(scalars, "chunk")
    if parts < 1 or chunk < 1 or recv.size < parts * (chunk + PART_HEADER):
        state[PART_DONE] = 1
        return
    dangling = diff = _f32(0.0)
    for e in range(parts):
        start = e * (chunk + PART_HEADER) + chunk
        dangling = _f32(dangling + recv[start])
        diff = _f32(diff + recv[start + 1])
    if state[PART_ITERATIONS] > 0:
        state[PART_LAST_DIFF] = diff
        if diff < state[PART_TOL] or state[PART_ITERATIONS] >= state[PART_MAX_ITER]:
            state[PART_DONE] = 1
            return
    state[PART_DANGLING] = dangling
    state[PART_LOCAL_DIFF] = 0
    state[PART_LOCAL_DANGLING] = 0


def pr_part_gather_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``pr_part_gather``: each vertex's in-neighbours' shares, added to its sum.

    The device splits the in-edges into warp tasks and adds each task's partial sum of
    a vertex with an atomic; the sums start at zero (``pr_part_init``,
    ``pr_part_update``), so the result is the whole sum, here taken in float64.
    """
    state = arrays["state"]
    nd = _int(scalars, "n1") - 1
    if state[PART_DONE] != 0 or nd <= 0 or not _valid(arrays, scalars, nd):
        return
    chunk, n_total = _int(scalars, "chunk"), _int(scalars, "n_total")
    offsets, indices = arrays["in_offsets"], arrays["in_indices"]
    rows = np.repeat(np.arange(nd), np.diff(offsets[: nd + 1]))
    sources = indices[offsets[0] : offsets[nd]].astype(np.int64)
    keep = (sources >= 0) & (sources < n_total)
    rows, sources = rows[keep], sources[keep]
    owner = sources // chunk
    shares = arrays["recv"][owner * (chunk + PART_HEADER) + (sources - owner * chunk)]
    pulled = np.bincount(rows, weights=shares.astype(np.float64), minlength=nd)
    sums = arrays["sums"]
    sums[:nd] = (sums[:nd] + pulled).astype(np.float32)


def pr_part_update_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``pr_part_update``: sums into ranks, this device's L1 change, one iteration."""
    state = arrays["state"]
    nd, n_total = _int(scalars, "n1") - 1, _int(scalars, "n_total")
    rank, sums = arrays["rank"], arrays["sums"]
    if state[PART_DONE] != 0 or nd < 0 or rank.size < nd or n_total <= 0:
        return
    damping = _f32(scalars["damping"].item())
    teleport = (_f32(1.0) - damping) / _f32(n_total)
    dangling = _f32(state[PART_DANGLING]) / _f32(n_total)
    fresh = teleport + damping * (sums[:nd] + dangling)
    state[PART_LOCAL_DIFF] += _f32(np.abs(fresh - rank[:nd]).sum(dtype=np.float64))
    rank[:nd] = fresh
    sums[:nd] = 0
    state[PART_ITERATIONS] += 1
