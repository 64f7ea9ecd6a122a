"""NumPy references of the connected-components kernels: the device semantics on the host.

Each reference is one schedule the kernel allows: every thread's reads first, then
its updates. The device interleaves them in other ways; parents only fall, and only
to a vertex of the same component, so every schedule ends at the same labels (the
smallest vertex id of each component), possibly after another number of rounds.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._layout import STATE_CHANGED, STATE_DONE, STATE_ROUNDS


def cc_init_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """CPU ``cc_init``: every vertex its own parent, and a fresh state.

    Args:
        arrays: ``parent`` (int32, written) and ``state`` (int32 words, written).
        scalars: The derived ``n``.
    """
    n = int(scalars["n"].item())
    arrays["parent"][:] = np.arange(n, dtype=np.int32)
    state = arrays["state"]
    state.fill(0)
    state[STATE_DONE] = 1 if n <= 0 else 0


def cc_hook_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """CPU ``cc_hook``: for every edge whose end points' parents differ, hook the larger
    parent and the end point that pointed at it under the smaller parent (a minimum).

    Args:
        arrays: ``offsets``, ``indices`` (read), ``parent`` (lowered) and ``state``
            (``STATE_CHANGED`` set where some parents differed).
        scalars: ``skip_reverse`` (nonzero: only edges ``u -> v`` with ``v < u``) and
            the derived ``n``.
    """
    state = arrays["state"]
    n = int(scalars["n"].item())
    if state[STATE_DONE] != 0 or n <= 0:
        return
    offsets, parent = arrays["offsets"], arrays["parent"]
    src = np.repeat(np.arange(n, dtype=np.int32), np.diff(offsets))
    dst = arrays["indices"]
    if int(scalars["skip_reverse"].item()) != 0:
        keep = dst < src
        src, dst = src[keep], dst[keep]
    pu, pv = parent[src], parent[dst]
    differ = pu != pv
    if not differ.any():
        return
    pu, pv = pu[differ], pv[differ]
    lo, hi = np.minimum(pu, pv), np.maximum(pu, pv)
    end = np.where(pu == hi, src[differ], dst[differ])
    np.minimum.at(parent, hi, lo)
    np.minimum.at(parent, end, lo)
    state[STATE_CHANGED] = 1


def cc_jump_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """CPU ``cc_jump``: each vertex's parent becomes its grandparent.

    Args:
        arrays: ``parent`` (updated) and ``state`` (read).
        scalars: The derived ``n``.
    """
    if arrays["state"][STATE_DONE] != 0:
        return
    parent = arrays["parent"]
    parent[:] = parent[parent]


def cc_check_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """CPU ``cc_check``: count the round; done once its hook changed nothing.

    Args:
        arrays: ``state`` (updated).
        scalars: None.
    """
    state = arrays["state"]
    if state[STATE_DONE] != 0:
        return
    state[STATE_ROUNDS] += 1
    if state[STATE_CHANGED] == 0:
        state[STATE_DONE] = 1
    state[STATE_CHANGED] = 0
