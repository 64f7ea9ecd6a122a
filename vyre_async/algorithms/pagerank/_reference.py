"""NumPy references of the PageRank kernels: the device semantics on the host."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._state import (
    PR_MAX_ITER_LIMIT,
    STATE_DANGLING,
    STATE_DIFF,
    STATE_DONE,
    STATE_ITERATIONS,
    STATE_LAST_DIFF,
    STATE_MAX_ITER,
    STATE_TOL,
)


def _f32(value: object) -> np.float32:
    return np.float32(value)  # type: ignore[arg-type]


def pr_init_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """CPU ``pr_init``: uniform ranks, a zeroed second buffer and a fresh state.

    Args:
        arrays: ``rank``, ``other``, ``contrib`` (float32, written), ``out_degree``,
            ``rank_of`` (read) and ``pr_state`` (8 float32, written).
        scalars: ``tol``, ``max_iter`` and the derived ``n``.
    """
    rank, state = arrays["rank"], arrays["pr_state"]
    n, max_iter = int(scalars["n"].item()), int(scalars["max_iter"].item())
    if n > 0:
        rank.fill(_f32(1.0) / _f32(n))
    arrays["other"].fill(0)
    _store_shares(arrays["contrib"], rank, arrays["out_degree"], arrays["rank_of"])
    done = 1.0 if max_iter <= 0 or n <= 0 else 0.0
    limit = float(min(max_iter, PR_MAX_ITER_LIMIT))
    state[:] = (0.0, 0.0, done, 0.0, scalars["tol"].item(), limit, 0.0, 0.0)


def pr_dangling_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``pr_dangling``: add the rank of vertices without out-edges to the state.

    The device adds in float32 in an unspecified order; this adds in float64 and
    rounds once, so the two agree to a few float32 ulps.

    Args:
        arrays: ``rank``, ``out_degree`` (read) and ``pr_state`` (updated).
        scalars: The derived ``n``.
    """
    state = arrays["pr_state"]
    if state[STATE_DONE] != 0:
        return
    mass = arrays["rank"][arrays["out_degree"] == 0].sum(dtype=np.float64)
    state[STATE_DANGLING] += _f32(mass)


def _store_shares(
    contrib: np.ndarray, rank: np.ndarray, degree: np.ndarray, rank_of: np.ndarray
) -> None:
    """``contrib[rank_of[v]] = rank[v] / out_degree[v]`` in float32, 0 without out-edges."""
    shares = np.zeros_like(contrib)
    has_edges = degree > 0
    shares[has_edges] = rank[has_edges] / degree[has_edges].astype(np.float32)
    contrib[rank_of] = shares


def pr_gather_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``pr_gather``: add each vertex's pulled shares ``contrib[u]`` to ``sums``.

    Each vertex's sum is taken in float64 and rounded once, standing in for the
    device's warp partial sums and atomic adds.

    Args:
        arrays: ``in_offsets``, ``in_indices`` (sources in the shares order),
            ``contrib`` (read), ``sums`` (added to) and ``pr_state`` (read).
        scalars: The derived ``n``.
    """
    n = int(scalars["n"].item())
    if arrays["pr_state"][STATE_DONE] != 0 or n == 0:
        return
    owner = np.repeat(np.arange(n), np.diff(arrays["in_offsets"]))
    pulled = np.bincount(owner, weights=arrays["contrib"][arrays["in_indices"]], minlength=n)
    arrays["sums"][:] = (arrays["sums"] + pulled).astype(np.float32)


def pr_update_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``pr_update``: sums into ranks, the L1 change, shares for the next gather.

    Args:
        arrays: ``rank_in`` (read, then zeroed), ``rank_out`` (sums in, ranks out),
            ``out_degree``, ``rank_of`` (read), ``contrib`` (written) and ``pr_state``
            (updated).
        scalars: ``damping`` and the derived ``n``.
    """
    state = arrays["pr_state"]
    n = int(scalars["n"].item())
    if state[STATE_DONE] != 0 or n == 0:
        return
    rank_in, rank_out = arrays["rank_in"], arrays["rank_out"]
    damping = _f32(scalars["damping"].item())
    teleport = (_f32(1.0) - damping) / _f32(n)
    dangling = _f32(state[STATE_DANGLING]) / _f32(n)
    fresh = teleport + damping * (rank_out + dangling)
    state[STATE_DIFF] += _f32(np.abs(fresh - rank_in).sum(dtype=np.float64))
    rank_out[:] = fresh
    rank_in.fill(0)
    _store_shares(arrays["contrib"], rank_out, arrays["out_degree"], arrays["rank_of"])


def pr_renumber_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``pr_renumber``: ``renumbered[j] = rank_of[in_indices[j]]``.

    Args:
        arrays: ``in_indices``, ``rank_of`` (read) and ``renumbered`` (written).
        scalars: The derived ``edges``.
    """
    arrays["renumbered"][:] = arrays["rank_of"][arrays["in_indices"]]


def pr_check_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """CPU ``pr_check``: count the iteration, test convergence, clear the accumulators.

    Args:
        arrays: ``pr_state`` (8 float32, updated).
        scalars: None.
    """
    state = arrays["pr_state"]
    if state[STATE_DONE] != 0:
        return
    state[STATE_ITERATIONS] += 1
    state[STATE_LAST_DIFF] = state[STATE_DIFF]
    if state[STATE_DIFF] < state[STATE_TOL] or state[STATE_ITERATIONS] >= state[STATE_MAX_ITER]:
        state[STATE_DONE] = 1
    state[STATE_DANGLING] = 0
    state[STATE_DIFF] = 0
