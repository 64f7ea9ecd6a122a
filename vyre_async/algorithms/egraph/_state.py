"""Constants shared by the e-graph kernels' CUDA sources and their NumPy references."""

from __future__ import annotations

#: Words in the e-graph state buffer (``int32``); the ``STATE_*`` constants index it.
STATE_WORDS = 8
#: Nonzero once the fixed point was reached (or the round limit); kernels then return.
STATE_DONE = 0
#: Set by ``egraph_merge`` when a round merged at least two e-classes.
STATE_CHANGED = 1
#: Rounds run, the last (confirming) round included.
STATE_ROUNDS = 2
#: Stop after this many rounds even without a fixed point.
STATE_MAX_ROUNDS = 3
#: E-classes merged away so far (classes before minus classes after).
STATE_MERGES = 4
#: 1 once a round merged nothing: the partition is the congruence closure.
STATE_CONVERGED = 5
#: ``STATE_WORDS`` under a name that stays unambiguous outside this module.
EGRAPH_STATE_WORDS = STATE_WORDS

#: An empty slot of the signature table (no row index is this large).
EMPTY_SLOT = 0xFFFFFFFF

#: What ``egraph_defines.cuh`` defines for the kernels' CUDA C: these constants, by the
#: names the CUDA C uses (tests check the header says the same).
CUDA_DEFINES: dict[str, str | int] = {
    "EMPTY_SLOT": f"{EMPTY_SLOT}u",
    "S_DONE": STATE_DONE,
    "S_CHANGED": STATE_CHANGED,
    "S_ROUNDS": STATE_ROUNDS,
    "S_MAX_ROUNDS": STATE_MAX_ROUNDS,
    "S_MERGES": STATE_MERGES,
    "S_CONVERGED": STATE_CONVERGED,
}
