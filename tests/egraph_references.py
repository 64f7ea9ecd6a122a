"""Random e-graphs with planted congruences, and a plain-Python congruence closure.

Nothing here uses vyre_async's kernels or references: the closure is a dict of
keys and a union-find written from scratch, and the signature hash is the spec
re-derived with Python ints.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Row = tuple[int, int, tuple[int, ...]]
MASK = 0xFFFFFFFF


def random_egraph(
    rng: np.random.Generator,
    *,
    base_classes: int = 120,
    ops: int = 4,
    duplicates: int = 20,
    chains: int = 3,
    depth: int = 4,
) -> tuple[list[Row], int, int]:
    """A shuffled e-graph with natural, planted and chained congruences.

    Base rows use few operators and few classes, so congruences arise by chance;
    ``duplicates`` rows copy an existing row into another class; each chain is two
    equal leaves in different classes under ``depth`` levels of fresh operators,
    so level ``d`` can only merge in round ``d + 1``.

    Returns:
        ``(rows, num_classes, deepest)``: rows as ``(eclass, op, children)``, the
        class count, and the longest chain depth planted (0 without chains).
    """
    rows: list[Row] = []
    for eclass in range(base_classes):
        for _ in range(int(rng.integers(1, 4))):
            arity = int(rng.integers(0, 4))
            kids = tuple(int(k) for k in rng.integers(0, base_classes, arity))
            rows.append((eclass, int(rng.integers(0, ops)), kids))
    num_classes = base_classes
    for _ in range(duplicates):
        _, op, kids = rows[int(rng.integers(0, len(rows)))]
        target = int(rng.integers(0, num_classes + 1))
        num_classes = max(num_classes, target + 1)
        rows.append((target, op, kids))
    next_op = ops
    for _ in range(chains):
        p, q = num_classes, num_classes + 1
        num_classes += 2
        rows += [(p, next_op, ()), (q, next_op, ())]
        next_op += 1
        for _ in range(depth):
            extra = int(rng.integers(0, base_classes))
            p2, q2 = num_classes, num_classes + 1
            num_classes += 2
            rows += [(p2, next_op, (p, extra)), (q2, next_op, (q, extra))]
            next_op += 1
            p, q = p2, q2
    relabel = rng.permutation(num_classes)
    rows = [(int(relabel[c]), op, tuple(int(relabel[k]) for k in kids)) for c, op, kids in rows]
    order = rng.permutation(len(rows))
    return [rows[i] for i in order], num_classes, depth if chains else 0


def congruence_closure(rows: Sequence[Row], num_classes: int) -> tuple[list[int], int]:
    """Merge classes of rows with equal (op, canonical children) until nothing merges.

    Each round computes every key under the partition at the round's start, then
    merges; that is the round a device can run in parallel.

    Returns:
        ``(root per class, rounds)``, the last (merge-free) round counted.
    """
    parent = list(range(num_classes))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    rounds = 0
    while True:
        rounds += 1
        keys = [((op, tuple(find(k) for k in kids)), eclass) for eclass, op, kids in rows]
        first: dict[tuple[int, tuple[int, ...]], int] = {}
        merged = False
        for key, eclass in keys:
            a, b = find(first.setdefault(key, eclass)), find(eclass)
            if a != b:
                parent[max(a, b)] = min(a, b)
                merged = True
        if not merged:
            return [find(c) for c in range(num_classes)], rounds


def assert_same_partition(got: np.ndarray, want: Sequence[int]) -> None:
    """``got`` and ``want`` put exactly the same class ids together."""
    got_list = [int(g) for g in got]
    assert len(got_list) == len(want)
    pairs = set(zip(got_list, want, strict=True))
    assert len(pairs) == len(set(got_list)) == len(set(want)), (
        f"partitions differ: {len(set(got_list))} classes got, {len(set(want))} wanted, "
        f"{len(pairs)} (got, want) label pairs"
    )


def fmix32(h: int) -> int:
    """MurmurHash3's 32-bit finalizer on a Python int."""
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & MASK
    return h ^ (h >> 16)


def signature(op: int, kids: Sequence[int]) -> int:
    """The documented row signature: a mixed sum over (child, position) terms."""
    acc = fmix32((op * 0xC2B2AE3D + len(kids) * 0x27D4EB2F + 0x165667B1) & MASK)
    for j, kid in enumerate(kids):
        acc = (acc + fmix32(((kid ^ fmix32((j + 0x61C88647) & MASK)) * 0x9E3779B1) & MASK)) & MASK
    return fmix32(acc)
