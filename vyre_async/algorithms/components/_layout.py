"""Connected components' geometry: the state block's layout and the launch sizes.

See :mod:`._kernels` for how the kernels use them; ``components_defines.cuh`` states
the same numbers for the CUDA C (a test holds the two together).
"""

from __future__ import annotations

#: Words in the state block (``int32``); the ``STATE_*`` constants index it.
STATE_WORDS = 4
#: Nonzero once the current round's hook found an edge whose end points' parents differ.
STATE_CHANGED = 0
#: Nonzero once a round's hook changed nothing; every kernel then returns at once.
STATE_DONE = 1
#: Rounds run so far (the last one, which changed nothing, included).
STATE_ROUNDS = 2
#: Unused; keeps the block a multiple of 16 bytes.
STATE_SPARE = 3
#: ``STATE_WORDS`` under a name that stays unambiguous outside this module.
COMPONENTS_STATE_WORDS = STATE_WORDS

#: Threads per block of every parallel kernel (a multiple of 32).
BLOCK = 256
#: Consecutive edges one thread of ``cc_hook`` takes per pass: one binary search for
#: the first edge's source, then a walk along the offsets for the rest.
EDGES_PER_THREAD = 16

#: What ``components_defines.cuh`` defines, name for name.
CUDA_DEFINES: dict[str, int] = {
    "CC_EDGES_PER_THREAD": EDGES_PER_THREAD,
    "CC_STATE_CHANGED": STATE_CHANGED,
    "CC_STATE_DONE": STATE_DONE,
    "CC_STATE_ROUNDS": STATE_ROUNDS,
    "CC_STATE_SPARE": STATE_SPARE,
    "CC_STATE_WORDS": STATE_WORDS,
}
