"""Personalized PageRank, one seed or many at once: kernels, their runs and the kind.

Many seeds run as the columns of one power iteration (a sparse-times-dense product
over the in-lists per iteration, float32, each seed stopping on its own once its L1
change falls below the tolerance), W seeds per pass (:func:`personalized_ranks`),
passes cut to the device memory budget; each seed's ranks come back as a row, or its
top k vertices, selected on the device. The algorithm is described in the
``_kernels`` and ``_top_kernels`` modules; the CUDA C is in this package's ``.cu``
files. :data:`PPR` is the ``ppr`` query kind.
"""

from ...kernels import register_builtin as _register_builtin
from .._registry import register as _register
from ._kernels import PPR_KERNELS as PPR_KERNELS
from ._kernels import ppr_check as ppr_check
from ._kernels import ppr_gather as ppr_gather
from ._kernels import ppr_init as ppr_init
from ._kernels import ppr_rows as ppr_rows
from ._kernels import ppr_shares as ppr_shares
from ._kernels import ppr_update as ppr_update
from ._kind import PPR as PPR
from ._kind import PersonalizedParams as PersonalizedParams
from ._kind import PprParams as PprParams
from ._layout import MAX_COLUMNS as MAX_COLUMNS
from ._layout import PPR_MAX_ITER_LIMIT as PPR_MAX_ITER_LIMIT
from ._layout import STATE_ACTIVE as STATE_ACTIVE
from ._layout import STATE_DONE as STATE_DONE
from ._layout import STATE_ITERATIONS as STATE_ITERATIONS
from ._layout import STATE_WORDS as STATE_WORDS
from ._layout import columns_for as columns_for
from ._layout import top_passes as top_passes
from ._layout import valid_columns as valid_columns
from ._personalization import personalized_query as personalized_query
from ._personalization import require_seeds as require_seeds
from ._personalization import teleport_vector as teleport_vector
from ._results import TOP_PAIR as TOP_PAIR
from ._results import TopRanks as TopRanks
from ._results import pack_top as pack_top
from ._results import top_pairs as top_pairs
from ._results import top_ranks as top_ranks
from ._run import GRAPH_BUFFERS as GRAPH_BUFFERS
from ._run import PprRun as PprRun
from ._run import PprScratch as PprScratch
from ._run import PprShape as PprShape
from ._run import Teleport as Teleport
from ._run import allocate_scratch as allocate_scratch
from ._run import column_bytes as column_bytes
from ._run import personalized_ranks as personalized_ranks
from ._run import plan_columns as plan_columns
from ._run import scratch_nbytes as scratch_nbytes
from ._top_kernels import PPR_TOP_KERNELS as PPR_TOP_KERNELS
from ._top_kernels import ppr_top_collect as ppr_top_collect
from ._top_kernels import ppr_top_hist as ppr_top_hist
from ._top_kernels import ppr_top_init as ppr_top_init
from ._top_kernels import ppr_top_select as ppr_top_select

_register_builtin(*PPR_KERNELS, *PPR_TOP_KERNELS)
_register(PPR)

__all__ = [
    "GRAPH_BUFFERS",
    "MAX_COLUMNS",
    "PPR",
    "PPR_KERNELS",
    "PPR_MAX_ITER_LIMIT",
    "PPR_TOP_KERNELS",
    "PersonalizedParams",
    "PprParams",
    "PprRun",
    "PprScratch",
    "PprShape",
    "STATE_ACTIVE",
    "STATE_DONE",
    "STATE_ITERATIONS",
    "STATE_WORDS",
    "TOP_PAIR",
    "Teleport",
    "TopRanks",
    "allocate_scratch",
    "column_bytes",
    "columns_for",
    "pack_top",
    "personalized_query",
    "personalized_ranks",
    "plan_columns",
    "ppr_check",
    "ppr_gather",
    "ppr_init",
    "ppr_rows",
    "ppr_shares",
    "ppr_top_collect",
    "ppr_top_hist",
    "ppr_top_init",
    "ppr_top_select",
    "ppr_update",
    "require_seeds",
    "scratch_nbytes",
    "teleport_vector",
    "top_pairs",
    "top_passes",
    "top_ranks",
    "valid_columns",
]
