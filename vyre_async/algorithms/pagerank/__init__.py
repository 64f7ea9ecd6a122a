"""Pull PageRank in float32: six kernels and the code that runs them.

A run is ``pr_init``, then two power iterations per repeat of a resident repeated
sequence until the L1 change falls below the tolerance (:func:`run_pagerank`), with
convergence checked on the device (``STATE_*`` index its state block). The CUDA C is
in this package's ``.cu`` files. :data:`PAGERANK` is the ``pagerank`` query kind.
"""

from ...kernels import register_builtin as _register_builtin
from .._registry import register as _register
from ._kernels import PAGERANK_KERNELS as PAGERANK_KERNELS
from ._kernels import pr_check as pr_check
from ._kernels import pr_dangling as pr_dangling
from ._kernels import pr_gather as pr_gather
from ._kernels import pr_init as pr_init
from ._kernels import pr_renumber as pr_renumber
from ._kernels import pr_update as pr_update
from ._kind import PAGERANK as PAGERANK
from ._kind import PagerankParams as PagerankParams
from ._part_kernels import PAGERANK_PART_KERNELS as PAGERANK_PART_KERNELS
from ._part_run import run_parted_pagerank as run_parted_pagerank
from ._run import PagerankInputs as PagerankInputs
from ._run import PagerankScratch as PagerankScratch
from ._run import run_pagerank as run_pagerank
from ._run import shares_order as shares_order
from ._state import PR_MAX_ITER_LIMIT as PR_MAX_ITER_LIMIT
from ._state import PR_STATE_WORDS as PR_STATE_WORDS
from ._state import STATE_DANGLING as STATE_DANGLING
from ._state import STATE_DIFF as STATE_DIFF
from ._state import STATE_DONE as STATE_DONE
from ._state import STATE_ITERATIONS as STATE_ITERATIONS
from ._state import STATE_LAST_DIFF as STATE_LAST_DIFF
from ._state import STATE_MAX_ITER as STATE_MAX_ITER
from ._state import STATE_TOL as STATE_TOL

_register_builtin(*PAGERANK_KERNELS, *PAGERANK_PART_KERNELS)
_register(PAGERANK)

__all__ = [
    "PAGERANK",
    "PAGERANK_KERNELS",
    "PAGERANK_PART_KERNELS",
    "PR_MAX_ITER_LIMIT",
    "PR_STATE_WORDS",
    "PagerankInputs",
    "PagerankParams",
    "PagerankScratch",
    "STATE_DANGLING",
    "STATE_DIFF",
    "STATE_DONE",
    "STATE_ITERATIONS",
    "STATE_LAST_DIFF",
    "STATE_MAX_ITER",
    "STATE_TOL",
    "pr_check",
    "pr_dangling",
    "pr_gather",
    "pr_init",
    "pr_renumber",
    "pr_update",
    "run_pagerank",
    "run_parted_pagerank",
    "shares_order",
]
