"""Multi-source BFS on a graph split over several devices: one device's kernels.

Device ``d`` of ``p`` owns the vertices ``[d * chunk, d * chunk + nd)`` with their out-
and in-lists (neighbours as global ids). Besides its own bitsets (``visited``, ``next``:
``nd * W`` words) it holds two group-wide ones of ``p * chunk * W`` words, where vertex
``v``'s words sit at ``v * W`` (slot ``e`` of a buffer is device ``e``'s range):

- ``recv``: its own slot is its frontier; the others receive what the other devices
  send it each level;
- ``send``: what it sends; slot ``e`` goes to device ``e``'s ``recv``, slot ``d``.

A level on every device, the host waiting for none of it::

    copies:  stats_out of each other device -> stats slot of that device
    seq A:   msbfs_part_direction   count the level (the lanes it gained on any device
                                    are the live ones); stop, or pick the direction
             msbfs_part_pack        top-down: clear send; bottom-up: own frontier
                                    into every other slot of send
             msbfs_part_push        top-down: or frontier words into the outbox words of
                                    the out-neighbours (their global places)
             msbfs_part_push_hubs   the same for hubs' out-lists, cut into chunks of
                                    edges over the grid
    copies:  slot d of each other device's send -> that device's slot of recv
    seq B:   msbfs_part_merge       top-down: own outbox slot | received slots, less visited
             msbfs_part_pull        bottom-up: in-neighbours' frontier words in recv, for
                                    the live lanes a vertex has not visited
             msbfs_part_pull_hubs   the same for hubs' in-lists, cut into chunks
             [msbfs_part_record_levels]
             msbfs_part_advance     next -> visited and own frontier; the new frontier's
                                    statistics and gained lanes into stats_out

The push and the pull spread edges, not only vertices, over the grid, as the
single-device ``msbfs_expand`` and ``msbfs_expand_hubs`` do: a team of lanes (one per
word) walks a short list, the whole warp a longer one, and a hub's list (from
``msbfs_hub_min_degree(W)`` edges) is cut into chunks of that many edges, a warp each.

The copies move the same bytes whichever direction a level takes (one slot per ordered
pair of devices), so the host can enqueue them before it is known: the direction is
chosen on every device from the same statistics (every device's frontier vertices,
their out-edges, the unexplored in-edges), so every device takes the same one. Top-down
sends each device's discoveries to their owners (an or-reduction of the outboxes);
bottom-up gathers every device's frontier (an all-gather). Before the first level:
``msbfs_part_init`` (and ``msbfs_part_init_levels``); after the last:
``msbfs_part_count`` for reached counts, or the ``levels`` rows read back.

The state is ``PSTATE_WORDS`` int32 words (see :mod:`._part_layout`); the statistics
are ``PART_STATS`` uint64 words per device.
"""

from __future__ import annotations

import numpy as np

from ...kernels import BufferParam, Kernel, ScalarParam, at_least_one_block, one_thread
from .._cuda_files import cuda_file
from ._part_layout import (
    _BLOCK,
    PART_STATS,
    PSTATE_WORDS,
    count_launch,
    global_launch,
    hubs_launch,
    local_launch,
    team_launch,
)
from ._part_reference import (
    msbfs_part_advance_reference,
    msbfs_part_count_reference,
    msbfs_part_direction_reference,
    msbfs_part_init_levels_reference,
    msbfs_part_init_reference,
    msbfs_part_merge_reference,
    msbfs_part_pack_reference,
    msbfs_part_pull_hubs_reference,
    msbfs_part_pull_reference,
    msbfs_part_push_hubs_reference,
    msbfs_part_push_reference,
    msbfs_part_record_levels_reference,
)

_PACKAGE = __name__.rpartition(".")[0]

_OFFSETS = BufferParam("offsets", np.int64, "in", "v1")
_IN_OFFSETS = BufferParam("in_offsets", np.int64, "in", "v1")
_SOURCES = BufferParam("sources", np.int32, "in", "lanes")
_STATE_IN = BufferParam("state", np.int32, "in", PSTATE_WORDS)
_STATE = BufferParam("state", np.int32, "inout", PSTATE_WORDS)
_STATS_OUT = BufferParam("stats_out", np.uint64, "inout", PART_STATS)
_RECV_IN = BufferParam("recv", np.uint64, "in", "gw")
_PARTS = ScalarParam("parts", np.int32)
_PART = ScalarParam("part", np.int32)
_CHUNK = ScalarParam("chunk", np.int64)
_WORDS = ScalarParam("words", np.int32)
_N_TOTAL = ScalarParam("n_total", np.int64)
_N1 = ScalarParam("n1", np.int64, default="v1")
_LW = ScalarParam("lw", np.int64, default="lw")
_GW = ScalarParam("gw", np.int64, default="gw")
_LANES = ScalarParam("lanes", np.int32, default="lanes")
_SPLIT = (_PARTS, _PART, _CHUNK, _WORDS, _N_TOTAL, _N1)


def _kernel(name: str, params: tuple[object, ...], launch: object, reference: object) -> Kernel:
    return Kernel(
        name=name,
        source=cuda_file(_PACKAGE, f"{name}.cu"),
        entry=name,
        params=params,  # type: ignore[arg-type]
        launch=launch,  # type: ignore[arg-type]
        reference=reference,  # type: ignore[arg-type]
    )


msbfs_part_init = _kernel(
    "msbfs_part_init",
    (
        _OFFSETS,
        _IN_OFFSETS,
        _SOURCES,
        BufferParam("visited", np.uint64, "inout", "lw"),
        BufferParam("next", np.uint64, "inout", "lw"),
        BufferParam("recv", np.uint64, "inout", "gw"),
        _STATS_OUT,
        _STATE,
        ScalarParam("max_level", np.int32),
        *_SPLIT,
        _LANES,
        _LW,
        _GW,
    ),
    # At least one block even for an empty range: block 0 writes the state.
    at_least_one_block("lw", _BLOCK),
    msbfs_part_init_reference,
)

msbfs_part_init_levels = _kernel(
    "msbfs_part_init_levels",
    (
        _OFFSETS,
        _SOURCES,
        BufferParam("levels", np.int32, "inout", "lv"),
        _STATE_IN,
        _PART,
        _CHUNK,
        _N_TOTAL,
        _N1,
        _LANES,
        ScalarParam("lv", np.int64, default="lv"),
    ),
    lambda sizes: local_launch({"lw": sizes["lv"]}),
    msbfs_part_init_levels_reference,
)

msbfs_part_direction = _kernel(
    "msbfs_part_direction",
    (
        BufferParam("stats", np.uint64, "in", "ps"),
        BufferParam("stats_out", np.uint64, "in", PART_STATS),
        _STATE,
        _PARTS,
        _PART,
        _N_TOTAL,
        ScalarParam("mode", np.int32, 0),
        ScalarParam("ps", np.int64, default="ps"),
    ),
    one_thread,
    msbfs_part_direction_reference,
)

msbfs_part_pack = _kernel(
    "msbfs_part_pack",
    (
        _OFFSETS,
        _RECV_IN,
        BufferParam("send", np.uint64, "inout", "gw"),
        _STATS_OUT,
        _STATE_IN,
        *_SPLIT,
        _GW,
    ),
    global_launch,
    msbfs_part_pack_reference,
)

_PUSH_PARAMS = (
    _OFFSETS,
    BufferParam("indices", np.int32, "in", "e"),
    _RECV_IN,
    BufferParam("send", np.uint64, "inout", "gw"),
    _STATE_IN,
    *_SPLIT,
    ScalarParam("e", np.int64, default="e"),
    _GW,
)

msbfs_part_push = _kernel("msbfs_part_push", _PUSH_PARAMS, team_launch, msbfs_part_push_reference)

msbfs_part_push_hubs = _kernel(
    "msbfs_part_push_hubs", _PUSH_PARAMS, hubs_launch("e"), msbfs_part_push_hubs_reference
)

msbfs_part_merge = _kernel(
    "msbfs_part_merge",
    (
        _OFFSETS,
        _RECV_IN,
        BufferParam("send", np.uint64, "in", "gw"),
        BufferParam("visited", np.uint64, "in", "lw"),
        BufferParam("next", np.uint64, "inout", "lw"),
        _STATE_IN,
        *_SPLIT,
        _LW,
        _GW,
    ),
    local_launch,
    msbfs_part_merge_reference,
)

_PULL_PARAMS = (
    _IN_OFFSETS,
    BufferParam("in_indices", np.int32, "in", "ein"),
    _RECV_IN,
    BufferParam("visited", np.uint64, "in", "lw"),
    BufferParam("next", np.uint64, "inout", "lw"),
    _STATE_IN,
    *_SPLIT,
    ScalarParam("ein", np.int64, default="ein"),
    _LW,
    _GW,
)

msbfs_part_pull = _kernel("msbfs_part_pull", _PULL_PARAMS, team_launch, msbfs_part_pull_reference)

msbfs_part_pull_hubs = _kernel(
    "msbfs_part_pull_hubs", _PULL_PARAMS, hubs_launch("ein"), msbfs_part_pull_hubs_reference
)

msbfs_part_record_levels = _kernel(
    "msbfs_part_record_levels",
    (
        _OFFSETS,
        BufferParam("next", np.uint64, "in", "lw"),
        BufferParam("levels", np.int32, "inout", "lv"),
        _STATE_IN,
        _WORDS,
        _N1,
        _LW,
        ScalarParam("lv", np.int64, default="lv"),
    ),
    local_launch,
    msbfs_part_record_levels_reference,
)

msbfs_part_advance = _kernel(
    "msbfs_part_advance",
    (
        _OFFSETS,
        _IN_OFFSETS,
        BufferParam("next", np.uint64, "inout", "lw"),
        BufferParam("visited", np.uint64, "inout", "lw"),
        BufferParam("recv", np.uint64, "inout", "gw"),
        _STATS_OUT,
        _STATE_IN,
        *_SPLIT,
        _LW,
        _GW,
    ),
    team_launch,
    msbfs_part_advance_reference,
)

msbfs_part_count = _kernel(
    "msbfs_part_count",
    (
        _OFFSETS,
        _SOURCES,
        BufferParam("visited", np.uint64, "in", "lw"),
        # "out": zeroed before the launch, then one atomic add per lane and task.
        BufferParam("counts", np.int32, "out", "lanes"),
        _WORDS,
        _N1,
        _LW,
        _LANES,
    ),
    count_launch,
    msbfs_part_count_reference,
)

#: The partitioned traversal's kernels, in the order a traversal first runs them.
MSBFS_PART_KERNELS: tuple[Kernel, ...] = (
    msbfs_part_init,
    msbfs_part_init_levels,
    msbfs_part_direction,
    msbfs_part_pack,
    msbfs_part_push,
    msbfs_part_push_hubs,
    msbfs_part_merge,
    msbfs_part_pull,
    msbfs_part_pull_hubs,
    msbfs_part_record_levels,
    msbfs_part_advance,
    msbfs_part_count,
)
