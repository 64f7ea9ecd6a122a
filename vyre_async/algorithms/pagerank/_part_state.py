"""Partitioned PageRank's state block and slot layout (``float32`` words)."""

from __future__ import annotations

#: Dangling mass of the whole graph for the iteration being run.
PART_DANGLING = 0
#: This device's L1 change of the iteration being run.
PART_LOCAL_DIFF = 1
#: 1 once converged or out of iterations (the same on every device).
PART_DONE = 2
#: Iterations completed.
PART_ITERATIONS = 3
#: The convergence bound on the L1 change.
PART_TOL = 4
#: The iteration limit (clamped to ``PR_MAX_ITER_LIMIT``).
PART_MAX_ITER = 5
#: L1 change of the whole graph's last completed iteration.
PART_LAST_DIFF = 6
#: This device's dangling mass of the iteration being run.
PART_LOCAL_DANGLING = 7
#: Words in the state.
PART_STATE_WORDS = 8
#: Header floats after a slot's shares: its dangling mass and its last L1 change.
PART_HEADER = 2

#: In-edges per warp task of ``pr_part_gather``.
PART_GATHER_CHUNK = 1024

#: What ``pagerank_part_defines.cuh`` defines for the kernels' CUDA C (tests check it).
PART_CUDA_DEFINES: dict[str, int] = {
    "PR_PART_DANGLING": PART_DANGLING,
    "PR_PART_LOCAL_DIFF": PART_LOCAL_DIFF,
    "PR_PART_DONE": PART_DONE,
    "PR_PART_ITERATIONS": PART_ITERATIONS,
    "PR_PART_TOL": PART_TOL,
    "PR_PART_MAX_ITER": PART_MAX_ITER,
    "PR_PART_LAST_DIFF": PART_LAST_DIFF,
    "PR_PART_LOCAL_DANGLING": PART_LOCAL_DANGLING,
    "PR_PART_HEADER": PART_HEADER,
    "PR_PART_GATHER_CHUNK": PART_GATHER_CHUNK,
}

__all__ = [
    "PART_CUDA_DEFINES",
    "PART_DANGLING",
    "PART_DONE",
    "PART_GATHER_CHUNK",
    "PART_HEADER",
    "PART_ITERATIONS",
    "PART_LAST_DIFF",
    "PART_LOCAL_DANGLING",
    "PART_LOCAL_DIFF",
    "PART_MAX_ITER",
    "PART_STATE_WORDS",
    "PART_TOL",
]
