"""PageRank on a graph split over several devices: one device's kernels.

Device ``d`` of ``p`` owns the vertices ``[d * chunk, d * chunk + nd)`` with their
in-lists (sources as global ids) and out-degrees. It holds its ranks and sums
(``nd`` floats), a ``send`` slot of ``chunk + 2`` floats and ``recv``, every device's
slot (``p * (chunk + 2)``), its own included: a slot is a device's shares (rank over
out-degree of each of its vertices) and a header of two floats, its dangling mass and
its L1 change of the last iteration (see :mod:`._part_state`). One iteration, the host
waiting for none of it::

    prefix A:  pr_part_share    shares into send and the own slot of recv; dangling mass
               pr_part_header   dangling mass and last change into the slot headers
    copies:    send of each other device -> its slot of recv
    prefix B:  pr_part_check    the group's dangling mass and last change, added in
                                device order: stop, or carry on with the same numbers
                                on every device
               pr_part_gather   each own vertex adds its in-neighbours' shares to its
                                sum; the in-edges, not the vertices, are split over
                                the grid (a hub's in-list over many warps)
               pr_part_update   sums into ranks, this device's L1 change, one iteration

Before the first iteration ``pr_part_init`` (uniform ranks, a fresh state). The state
is :data:`._part_state.PART_STATE_WORDS` float32 words, the same on every device.
"""

from __future__ import annotations

import numpy as np

from ...kernels import BufferParam, Kernel, ScalarParam, at_least_one_block, grid_stride, one_thread
from .._cuda_files import cuda_file
from ._part_reference import (
    pr_part_check_reference,
    pr_part_gather_reference,
    pr_part_header_reference,
    pr_part_init_reference,
    pr_part_share_reference,
    pr_part_update_reference,
)
from ._part_state import PART_GATHER_CHUNK, PART_STATE_WORDS

__all__ = [
    "PAGERANK_PART_KERNELS",
    "pr_part_check",
    "pr_part_gather",
    "pr_part_header",
    "pr_part_init",
    "pr_part_share",
    "pr_part_update",
]

_PACKAGE = __name__.rpartition(".")[0]
_BLOCK = 256

_IN_OFFSETS = BufferParam("in_offsets", np.int64, "in", "v1")
_RANK = BufferParam("rank", np.float32, "inout", "nr")
_SUMS = BufferParam("sums", np.float32, "inout", "nr")
_STATE = BufferParam("state", np.float32, "inout", PART_STATE_WORDS)
_STATE_IN = BufferParam("state", np.float32, "in", PART_STATE_WORDS)
_SEND = BufferParam("send", np.float32, "inout", "sl")
_RECV = BufferParam("recv", np.float32, "inout", "gl")
_RECV_IN = BufferParam("recv", np.float32, "in", "gl")
_PARTS = ScalarParam("parts", np.int32)
_PART = ScalarParam("part", np.int32)
_CHUNK = ScalarParam("chunk", np.int64)
_N_TOTAL = ScalarParam("n_total", np.int64)
_N1 = ScalarParam("n1", np.int64, default="v1")
_NR = ScalarParam("nr", np.int64, default="nr")
_SL = ScalarParam("sl", np.int64, default="sl")
_GL = ScalarParam("gl", np.int64, default="gl")


def _kernel(name: str, params: tuple[object, ...], launch: object, reference: object) -> Kernel:
    return Kernel(
        name=name,
        source=cuda_file(_PACKAGE, f"{name}.cu"),
        entry=name,
        params=params,  # type: ignore[arg-type]
        launch=launch,  # type: ignore[arg-type]
        reference=reference,  # type: ignore[arg-type]
    )


pr_part_init = _kernel(
    "pr_part_init",
    (
        _IN_OFFSETS,
        _RANK,
        _SUMS,
        _STATE,
        ScalarParam("tol", np.float32),
        ScalarParam("max_iter", np.int32),
        _N_TOTAL,
        _N1,
        _NR,
    ),
    # At least one block even for an empty range: block 0 writes the state.
    at_least_one_block("nr", _BLOCK),
    pr_part_init_reference,
)

pr_part_share = _kernel(
    "pr_part_share",
    (
        _IN_OFFSETS,
        BufferParam("out_degree", np.int32, "in", "od"),
        BufferParam("rank", np.float32, "in", "nr"),
        _SEND,
        _RECV,
        _STATE,
        _PARTS,
        _PART,
        _CHUNK,
        _N_TOTAL,
        _N1,
        _NR,
        _SL,
        _GL,
        ScalarParam("od", np.int64, default="od"),
    ),
    grid_stride("nr", block=_BLOCK),
    pr_part_share_reference,
)

pr_part_header = _kernel(
    "pr_part_header",
    (_SEND, _RECV, _STATE_IN, _PARTS, _PART, _CHUNK, _SL, _GL),
    one_thread,
    pr_part_header_reference,
)

pr_part_check = _kernel(
    "pr_part_check",
    (_RECV_IN, _STATE, _PARTS, _CHUNK, _GL),
    one_thread,
    pr_part_check_reference,
)

pr_part_gather = _kernel(
    "pr_part_gather",
    (
        _IN_OFFSETS,
        BufferParam("in_indices", np.int32, "in", "ein"),
        _RECV_IN,
        _SUMS,
        _STATE_IN,
        _PARTS,
        _PART,
        _CHUNK,
        _N_TOTAL,
        _N1,
        ScalarParam("ein", np.int64, default="ein"),
        _NR,
        _GL,
    ),
    # One warp per chunk of in-edges (grid-stride beyond the cap), as pr_gather.
    grid_stride("ein", block=_BLOCK, items_per_thread=PART_GATHER_CHUNK // 32, max_blocks=65535),
    pr_part_gather_reference,
)

pr_part_update = _kernel(
    "pr_part_update",
    (_IN_OFFSETS, _RANK, _SUMS, _STATE, ScalarParam("damping", np.float32), _N_TOTAL, _N1, _NR),
    grid_stride("nr", block=_BLOCK),
    pr_part_update_reference,
)

#: The partitioned PageRank's kernels, in the order a run first runs them.
PAGERANK_PART_KERNELS: tuple[Kernel, ...] = (
    pr_part_init,
    pr_part_share,
    pr_part_header,
    pr_part_check,
    pr_part_gather,
    pr_part_update,
)
