"""E-graph structural canonicalization as seven kernels a resident repeated sequence runs.

The e-graph is one packed ``u32`` image (see :mod:`vyre_async.egraph`); kernels
read its columns at word offsets passed as scalars. Scratch lives beside it:
``parent`` (union-find over e-classes), ``canon`` (canonical child ids, aligned
with the image's ``children`` column), ``signatures`` (one hash per row), a
power-of-two ``table`` of row indices and an eight-word ``int32`` state block.

A run is ``egraph_init`` once, then the round ``[egraph_compress, egraph_rewrite,
egraph_signatures, egraph_clear, egraph_merge, egraph_check]`` repeated: flatten the
union-find, rewrite children to their roots, hash each row, then merge the
e-classes of rows whose operator and canonical children are equal (congruence).
A round that merges nothing is the fixed point; ``egraph_check`` then sets the
done word and every kernel returns at once. Roots are always the smallest member,
so the final ``parent`` (after one forced ``egraph_compress``) maps each class to
the smallest class id it was merged with, on every backend alike.
"""

from __future__ import annotations

import numpy as np

from ...kernels import BufferParam, Kernel, ScalarParam, at_least_one_block, grid_stride, one_thread
from .._cuda_files import cuda_file
from . import _reference as ref
from ._state import STATE_WORDS

#: The package whose .cu files hold these kernels' CUDA C.
_PACKAGE = __name__.rpartition(".")[0]

_BLOCK = 256

#: The packed image; ``<u4`` so its words are little-endian on any host.
_IMAGE = BufferParam("image", "<u4", "in", "w")
_PARENT_IN = BufferParam("parent", np.uint32, "in", "c")
_PARENT = BufferParam("parent", np.uint32, "inout", "c")
_CANON_IN = BufferParam("canon", np.uint32, "in", "k")
_SIGNATURES_IN = BufferParam("signatures", np.uint32, "in", "r")
_STATE_IN = BufferParam("egraph_state", np.int32, "in", STATE_WORDS)
_STATE = BufferParam("egraph_state", np.int32, "inout", STATE_WORDS)
_NUM_CLASSES = ScalarParam("num_classes", np.int64, default="c")
_NUM_ROWS = ScalarParam("num_rows", np.int64, default="r")


def _at(column: str) -> ScalarParam:
    """The word offset of an image column, as a kernel scalar."""
    return ScalarParam(f"{column}_at", np.int64)


egraph_init = Kernel(
    name="egraph_init",
    source=cuda_file(_PACKAGE, "egraph_init.cu"),
    entry="egraph_init",
    params=(_PARENT, _STATE, ScalarParam("max_rounds", np.int32), _NUM_CLASSES),
    launch=at_least_one_block("c", _BLOCK),
    reference=ref.egraph_init_reference,
)

egraph_compress = Kernel(
    name="egraph_compress",
    source=cuda_file(_PACKAGE, "egraph_compress.cu"),
    entry="egraph_compress",
    params=(_PARENT, _STATE_IN, ScalarParam("force", np.int32, default=0), _NUM_CLASSES),
    launch=grid_stride("c", block=_BLOCK, max_blocks=65535),
    reference=ref.egraph_compress_reference,
)

egraph_rewrite = Kernel(
    name="egraph_rewrite",
    source=cuda_file(_PACKAGE, "egraph_rewrite.cu"),
    entry="egraph_rewrite",
    params=(
        _IMAGE,
        _PARENT_IN,
        BufferParam("canon", np.uint32, "inout", "k"),
        _STATE_IN,
        _at("children"),
        ScalarParam("num_children", np.int64, default="k"),
    ),
    launch=grid_stride("k", block=_BLOCK, max_blocks=65535),
    reference=ref.egraph_rewrite_reference,
)

egraph_signatures = Kernel(
    name="egraph_signatures",
    source=cuda_file(_PACKAGE, "egraph_signatures.cu"),
    entry="egraph_signatures",
    params=(
        _IMAGE,
        _CANON_IN,
        BufferParam("signatures", np.uint32, "inout", "r"),
        _STATE_IN,
        _at("ops"),
        _at("starts"),
        _at("lens"),
        _NUM_ROWS,
    ),
    launch=grid_stride("r", block=_BLOCK, max_blocks=65535),
    reference=ref.egraph_signatures_reference,
)

egraph_clear = Kernel(
    name="egraph_clear",
    source=cuda_file(_PACKAGE, "egraph_clear.cu"),
    entry="egraph_clear",
    params=(
        BufferParam("table", np.uint32, "inout", "t"),
        _STATE_IN,
        ScalarParam("table_size", np.int64, default="t"),
    ),
    launch=grid_stride("t", block=_BLOCK, max_blocks=65535),
    reference=ref.egraph_clear_reference,
)

egraph_merge = Kernel(
    name="egraph_merge",
    source=cuda_file(_PACKAGE, "egraph_merge.cu"),
    entry="egraph_merge",
    params=(
        _IMAGE,
        _PARENT,
        _CANON_IN,
        _SIGNATURES_IN,
        BufferParam("table", np.uint32, "inout", "t"),
        _STATE,
        _at("eclass"),
        _at("ops"),
        _at("starts"),
        _at("lens"),
        _NUM_ROWS,
        ScalarParam("table_size", np.int64, default="t"),
    ),
    launch=grid_stride("r", block=_BLOCK, max_blocks=65535),
    reference=ref.egraph_merge_reference,
)

egraph_check = Kernel(
    name="egraph_check",
    source=cuda_file(_PACKAGE, "egraph_check.cu"),
    entry="egraph_check",
    params=(_STATE,),
    launch=one_thread,
    reference=ref.egraph_check_reference,
)

#: The e-graph kernels, in the order a canonicalization first runs them.
EGRAPH_KERNELS: tuple[Kernel, ...] = (
    egraph_init,
    egraph_compress,
    egraph_rewrite,
    egraph_signatures,
    egraph_clear,
    egraph_merge,
    egraph_check,
)
