"""The PageRank state block's layout and its iteration limit."""

from __future__ import annotations

#: Words in the PageRank state buffer (``float32``); the ``STATE_*`` constants index it.
STATE_WORDS = 8
#: Dangling mass of the current iteration (sum of ranks of vertices without out-edges).
STATE_DANGLING = 0
#: L1 change of the current iteration.
STATE_DIFF = 1
#: 1 once converged or out of iterations; every kernel then returns at once.
STATE_DONE = 2
#: Iterations completed; odd means the latest ranks are in the second buffer.
STATE_ITERATIONS = 3
#: The convergence bound on the L1 change.
STATE_TOL = 4
#: The iteration limit, as given (clamped to ``PR_MAX_ITER_LIMIT``).
STATE_MAX_ITER = 5
#: L1 change of the last completed iteration (``STATE_DIFF`` is cleared for the next one).
STATE_LAST_DIFF = 6
#: ``STATE_WORDS`` under a name that stays unambiguous outside this module.
PR_STATE_WORDS = STATE_WORDS
#: Iteration limits beyond this are clamped: a float32 counter stops counting at 2**24.
PR_MAX_ITER_LIMIT = 2**24
