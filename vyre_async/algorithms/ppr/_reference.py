"""NumPy references of the power-iteration kernels: the device semantics on the host.

Each takes the flat arrays and coerced scalars its kernel is bound to and does what
the kernel does, step for step and state word for state word (sums are taken in
float64 and rounded once, where the device adds float32 partial sums in an order that
varies, so the two agree to a few float32 ulps). The CPU backend runs these.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._layout import (
    MAX_COLUMNS,
    PPR_MAX_ITER_LIMIT,
    STATE_ACTIVE,
    STATE_DAMPING,
    STATE_DENSE,
    STATE_DONE,
    STATE_ITERATIONS,
    STATE_MAX_ITER,
    STATE_TOL,
    tile_width,
    valid_columns,
)

Arrays = Mapping[str, np.ndarray]
Scalars = Mapping[str, np.generic]


def _int(scalars: Scalars, name: str) -> int:
    return int(scalars[name].item())


def _f32(value: object) -> np.float32:
    return np.float32(value)  # type: ignore[arg-type]


def columns(n: int, w: int, vw: int) -> int:
    """The kernels' ``ppr_columns``: W when it is valid and ``vw == n * W``, else 0."""
    if n <= 0 or vw != n * w or not valid_columns(w):
        return 0
    return w


def ppr_shares_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``ppr_shares``: ``shares[j] = 1 / out_degree[in_indices[j]]`` in float32.

    Args:
        arrays: ``in_indices``, ``out_degree`` (read) and ``shares`` (written).
        scalars: The derived ``edges`` and ``n``.
    """
    n = _int(scalars, "n")
    sources = arrays["in_indices"].astype(np.int64)
    inside = (sources >= 0) & (sources < n)
    degree = np.zeros(sources.size, np.float32)
    degree[inside] = arrays["out_degree"][sources[inside]]
    shares = arrays["shares"]
    shares[:] = 0
    np.divide(_f32(1.0), degree, out=shares, where=degree > 0)


def ppr_init_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``ppr_init``: ranks = personalization, the other buffer and sums zeroed.

    Args:
        arrays: ``out_degree``, ``seeds``, ``personal`` (read); ``rank``, ``other``,
            ``mass``, ``mass_next``, ``diff``, ``active`` and ``state`` (written).
        scalars: ``damping``, ``tol``, ``max_iter``, ``dense``, ``dense_mass`` and the
            derived ``n``, ``w``, ``vw``, ``plen``.
    """
    n, w, vw = _int(scalars, "n"), _int(scalars, "w"), _int(scalars, "vw")
    cols = columns(n, w, vw)
    dense, max_iter = _int(scalars, "dense"), _int(scalars, "max_iter")
    use_dense = dense != 0 and cols == 1 and _int(scalars, "plen") == n
    broken = cols == 0 or (dense != 0 and not use_dense)
    arrays["state"][:] = (
        1.0 if broken or max_iter <= 0 else 0.0,
        0.0,
        float(min(max_iter, PPR_MAX_ITER_LIMIT)),
        scalars["tol"].item(),
        scalars["damping"].item(),
        float(cols),
        1.0 if use_dense else 0.0,
        0.0,
    )
    if cols == 0:
        return
    seeds = arrays["seeds"].astype(np.int64)
    live = np.ones(cols, bool) if use_dense else (seeds >= 0) & (seeds < n)
    rank = arrays["rank"].reshape(n, cols)
    rank[:] = 0
    if use_dense:
        rank[:, 0] = arrays["personal"]
    else:
        rank[seeds[live], np.flatnonzero(live)] = 1
    arrays["other"].fill(0)
    arrays["active"][:] = live
    mass = arrays["mass"]
    if use_dense:
        mass[:] = scalars["dense_mass"].item()
    else:
        mass[:] = 0
        mass[live] = arrays["out_degree"][seeds[live]] == 0
    arrays["mass_next"].fill(0)
    arrays["diff"].fill(0)


def ppr_gather_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``ppr_gather``: ``dst[v][c] += sum(src[u][c] * shares[j])`` over v's in-edges,
    for every column of a tile with a column still iterating.

    Args:
        arrays: ``in_offsets``, ``in_indices``, ``shares``, ``src``, ``active``,
            ``state`` (read) and ``dst`` (added to).
        scalars: The derived ``n1``, ``w``, ``vw`` and ``edges``.
    """
    n = _int(scalars, "n1") - 1
    cols = columns(n, _int(scalars, "w"), _int(scalars, "vw"))
    edges = _int(scalars, "edges")
    offsets = arrays["in_offsets"]
    if arrays["state"][STATE_DONE] != 0 or cols == 0 or edges <= 0 or offsets[n] != edges:
        return
    tile = tile_width(cols)
    tiles_live = (arrays["active"].reshape(cols // tile, tile) != 0).any(axis=1)
    wanted = np.repeat(tiles_live, tile)
    if not wanted.any():
        return
    src = arrays["src"].reshape(n, cols)[:, wanted].astype(np.float64)
    pulled = src[arrays["in_indices"]] * arrays["shares"].astype(np.float64)[:, None]
    starts = offsets[:-1]
    has_edges = np.flatnonzero(offsets[1:] > starts)
    sums = np.add.reduceat(pulled, starts[has_edges], axis=0)
    dst = arrays["dst"].reshape(n, cols)
    block = dst[np.ix_(has_edges, np.flatnonzero(wanted))]
    dst[np.ix_(has_edges, np.flatnonzero(wanted))] = (block + sums).astype(np.float32)


def ppr_update_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``ppr_update``: sums into ranks for the columns still iterating, the L1 change
    and the new dangling mass per column, and the old ranks zeroed.

    Args:
        arrays: ``rank_in`` (read, then zeroed), ``rank_out`` (sums in, ranks out),
            ``out_degree``, ``seeds``, ``personal``, ``mass``, ``active``, ``state``
            (read), ``mass_next`` and ``diff`` (added to).
        scalars: The derived ``n``, ``w``, ``vw`` and ``plen``.
    """
    state = arrays["state"]
    n = _int(scalars, "n")
    cols = columns(n, _int(scalars, "w"), _int(scalars, "vw"))
    dense = state[STATE_DENSE] != 0
    if state[STATE_DONE] != 0 or cols == 0:
        return
    if dense and (cols != 1 or _int(scalars, "plen") != n):
        return
    damping = _f32(state[STATE_DAMPING])
    rank_in = arrays["rank_in"].reshape(n, cols)
    rank_out = arrays["rank_out"].reshape(n, cols)
    live = arrays["active"] != 0
    if dense:
        personal = arrays["personal"].reshape(n, 1)
    else:
        personal = np.zeros((n, cols), np.float32)
        seeds = arrays["seeds"].astype(np.int64)
        inside = (seeds >= 0) & (seeds < n)
        personal[seeds[inside], np.flatnonzero(inside)] = 1
    teleport = (_f32(1.0) - damping) + damping * arrays["mass"]
    fresh = np.where(live, damping * rank_out + teleport * personal, rank_in).astype(np.float32)
    change = np.abs(fresh.astype(np.float64) - rank_in).sum(axis=0)
    diff = arrays["diff"]
    diff[live] = (diff[live] + change[live]).astype(np.float32)
    dangling = fresh[arrays["out_degree"] == 0].sum(axis=0, dtype=np.float64)
    arrays["mass_next"][:] = (arrays["mass_next"] + dangling).astype(np.float32)
    rank_out[:] = fresh
    rank_in.fill(0)


def ppr_check_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``ppr_check``: columns below ``tol`` stop, the dangling mass moves on, the
    iteration is counted and the run is done when no column iterates or at the limit.

    Args:
        arrays: ``mass``, ``mass_next``, ``diff``, ``active`` and ``state`` (updated).
        scalars: The derived ``w``.
    """
    state = arrays["state"]
    w = _int(scalars, "w")
    if state[STATE_DONE] != 0 or w <= 0 or w > MAX_COLUMNS:
        return
    active = arrays["active"]
    active[(active != 0) & (arrays["diff"] < state[STATE_TOL])] = 0
    arrays["mass"][:] = arrays["mass_next"]
    arrays["mass_next"].fill(0)
    arrays["diff"].fill(0)
    live = int(np.count_nonzero(active))
    state[STATE_ITERATIONS] += 1
    state[STATE_ACTIVE] = live
    if live == 0 or state[STATE_ITERATIONS] >= state[STATE_MAX_ITER]:
        state[STATE_DONE] = 1


def ppr_rows_reference(arrays: Arrays, scalars: Scalars) -> None:
    """CPU ``ppr_rows``: ``rows[c * n + v] = ranks[v * W + c]`` for the first ``count``
    columns.

    Args:
        arrays: ``ranks``, ``seeds`` (bound for its length) and ``rows`` (written).
        scalars: ``count`` and the derived ``w`` and ``vw``.
    """
    w, vw = _int(scalars, "w"), _int(scalars, "vw")
    n = vw // w if w > 0 else 0
    cols = columns(n, w, vw)
    if cols == 0:
        return
    count = max(min(_int(scalars, "count"), cols), 0)
    ranks = arrays["ranks"].reshape(n, cols)
    arrays["rows"][: count * n] = ranks[:, :count].T.ravel()
