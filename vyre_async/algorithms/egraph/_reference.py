"""NumPy references of the e-graph kernels, and the signature hash they share.

The merge reference groups rows by sorting their signatures and then verifies the
keys (operator, arity, canonical children) themselves, where the device uses a
hash table; both merge exactly the e-classes of rows whose keys are equal under
the partition at the start of the round, so both run the same rounds.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._state import (
    EMPTY_SLOT,
    STATE_CHANGED,
    STATE_CONVERGED,
    STATE_DONE,
    STATE_MAX_ROUNDS,
    STATE_MERGES,
    STATE_ROUNDS,
)

_U = np.uint32


def fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer, elementwise on a ``uint32`` array (wrapping)."""
    h = h ^ (h >> _U(16))
    h = h * _U(0x85EBCA6B)
    h = h ^ (h >> _U(13))
    h = h * _U(0xC2B2AE35)
    mixed: np.ndarray = h ^ (h >> _U(16))
    return mixed


def _spans(starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For rows' child spans: each entry's index, position in its row, and row start."""
    lens64 = lens.astype(np.int64)
    first = np.cumsum(lens64) - lens64
    within = np.arange(int(lens64.sum()), dtype=np.int64) - np.repeat(first, lens64)
    return np.repeat(starts.astype(np.int64), lens64) + within, within, first


def row_signatures(
    ops: np.ndarray, lens: np.ndarray, starts: np.ndarray, canon: np.ndarray
) -> np.ndarray:
    """Signature of each row: a 32-bit hash of its operator and canonical children.

    Args:
        ops: Operator id per row.
        lens: Number of children per row.
        starts: Index of each row's first child in ``canon``.
        canon: Canonical child class ids.

    Returns:
        ``uint32`` signatures, bit-identical to the device's ``row_signature``.
    """
    acc = fmix32(
        ops.astype(_U) * _U(0xC2B2AE3D) + lens.astype(_U) * _U(0x27D4EB2F) + _U(0x165667B1)
    )
    index, within, first = _spans(starts, lens)
    if index.size:
        mixed = canon[index].astype(_U) ^ fmix32(within.astype(_U) + _U(0x61C88647))
        sums = np.zeros(index.size + 1, dtype=_U)
        np.cumsum(fmix32(mixed * _U(0x9E3779B1)), dtype=_U, out=sums[1:])
        acc = acc + (sums[first + lens.astype(np.int64)] - sums[first])
    return fmix32(acc)


def _keys_equal(
    ops: np.ndarray, lens: np.ndarray, starts: np.ndarray, canon: np.ndarray,
    a: np.ndarray, b: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Whether rows ``a[i]`` and ``b[i]`` have equal operators and canonical children."""
    equal: np.ndarray = (ops[a] == ops[b]) & (lens[a] == lens[b])
    both = np.flatnonzero(equal & (lens[a] > 0))
    if both.size:
        lens_both = lens[a[both]].astype(np.int64)
        index_a, within, _ = _spans(starts[a[both]], lens_both)
        index_b = np.repeat(starts[b[both]].astype(np.int64), lens_both) + within
        owner = np.repeat(np.arange(both.size), lens_both)
        differs = np.bincount(owner[canon[index_a] != canon[index_b]], minlength=both.size)
        equal[both[differs > 0]] = False
    return equal


def _representatives(
    ops: np.ndarray, lens: np.ndarray, starts: np.ndarray, canon: np.ndarray, sig: np.ndarray
) -> np.ndarray:
    """For each row, a row with an equal key (itself when it is the first of its key)."""
    order = np.argsort(sig, kind="stable")
    sorted_sig = sig[order]
    head = np.ones(order.size, dtype=bool)
    head[1:] = sorted_sig[1:] != sorted_sig[:-1]
    rep = np.empty(order.size, dtype=np.int64)
    rep[order] = order[np.flatnonzero(head)][np.cumsum(head) - 1]
    rows = np.arange(order.size)
    clash = ~_keys_equal(ops, lens, starts, canon, rows, rep)
    if clash.any():
        # Signature collisions: settle the runs holding one by the keys themselves.
        involved = np.flatnonzero(np.isin(rep, rep[clash]))
        for length in np.unique(lens[involved]):
            group = involved[lens[involved] == length]
            keys = np.empty((group.size, int(length) + 1), dtype=_U)
            keys[:, 0] = ops[group]
            keys[:, 1:] = canon[starts[group, None].astype(np.int64) + np.arange(int(length))]
            _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
            rep[group] = group[first[inverse.reshape(-1)]]
    return rep


def compress(parent: np.ndarray) -> None:
    """Point every class straight at its root (pointer jumping until nothing changes)."""
    while True:
        grand = parent[parent]
        if np.array_equal(grand, parent):
            return
        parent[:] = grand


def union_pairs(parent: np.ndarray, a: np.ndarray, b: np.ndarray) -> int:
    """Merge the classes of each pair ``(a[i], b[i])``; return how many roots were hooked.

    Every hook points a larger root at a smaller one, as ``hook`` does on the device,
    so each class ends with its smallest member as root.
    """
    roots_before = int(np.count_nonzero(parent == np.arange(parent.size, dtype=_U)))
    while a.size:
        compress(parent)
        ra, rb = parent[a], parent[b]
        apart = ra != rb
        a, b, ra, rb = a[apart], b[apart], ra[apart], rb[apart]
        if a.size:
            np.minimum.at(parent, np.maximum(ra, rb), np.minimum(ra, rb))
    compress(parent)
    return roots_before - int(np.count_nonzero(parent == np.arange(parent.size, dtype=_U)))


def _column(image: np.ndarray, scalars: Mapping[str, np.generic], name: str, n: int) -> np.ndarray:
    at = int(scalars[name].item())
    return image[at : at + n]


def egraph_init_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``egraph_init``: every class its own root, a fresh state block."""
    arrays["parent"][:] = np.arange(arrays["parent"].size, dtype=_U)
    max_rounds = int(scalars["max_rounds"].item())
    state = arrays["egraph_state"]
    state.fill(0)
    state[STATE_MAX_ROUNDS] = max_rounds
    state[STATE_DONE] = int(max_rounds <= 0)


def egraph_compress_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``egraph_compress``: pointer jumping until every class points at its root."""
    if arrays["egraph_state"][STATE_DONE] != 0 and int(scalars["force"].item()) == 0:
        return
    compress(arrays["parent"])


def egraph_rewrite_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``egraph_rewrite``: each child id replaced by its class's root."""
    if arrays["egraph_state"][STATE_DONE] != 0:
        return
    canon = arrays["canon"]
    canon[:] = arrays["parent"][_column(arrays["image"], scalars, "children_at", canon.size)]


def egraph_signatures_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``egraph_signatures``: each row's hash over its canonical children."""
    if arrays["egraph_state"][STATE_DONE] != 0:
        return
    image, signatures = arrays["image"], arrays["signatures"]
    n = signatures.size
    signatures[:] = row_signatures(
        _column(image, scalars, "ops_at", n),
        _column(image, scalars, "lens_at", n),
        _column(image, scalars, "starts_at", n),
        arrays["canon"],
    )


def egraph_clear_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``egraph_clear``: empty the signature table (the merge reference sorts instead)."""
    if arrays["egraph_state"][STATE_DONE] == 0:
        arrays["table"].fill(EMPTY_SLOT)


def egraph_merge_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``egraph_merge``: merge the e-classes of rows with equal keys."""
    state = arrays["egraph_state"]
    if state[STATE_DONE] != 0:
        return
    image, signatures = arrays["image"], arrays["signatures"]
    n = signatures.size
    rep = _representatives(
        _column(image, scalars, "ops_at", n),
        _column(image, scalars, "lens_at", n),
        _column(image, scalars, "starts_at", n),
        arrays["canon"],
        signatures,
    )
    eclass = _column(image, scalars, "eclass_at", n)
    pairs = np.flatnonzero(rep != np.arange(n))
    merges = union_pairs(arrays["parent"], eclass[rep[pairs]], eclass[pairs])
    if merges:
        state[STATE_MERGES] += merges
        state[STATE_CHANGED] = 1


def egraph_check_reference(
    arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]
) -> None:
    """CPU ``egraph_check``: count the round; done at a fixed point or the round limit."""
    state = arrays["egraph_state"]
    if state[STATE_DONE] != 0:
        return
    state[STATE_ROUNDS] += 1
    changed = int(state[STATE_CHANGED])
    state[STATE_CHANGED] = 0
    state[STATE_CONVERGED] = int(changed == 0)
    if changed == 0 or state[STATE_ROUNDS] >= state[STATE_MAX_ROUNDS]:
        state[STATE_DONE] = 1
