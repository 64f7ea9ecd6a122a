"""E-graphs on the device: snapshot -> packed ``u32`` image -> resident canonicalization.

An :class:`EGraphSnapshot` (rows of e-class id, operator id and child e-classes)
packs into one little-endian ``u32`` image with a column layout; :func:`upload_egraph`
moves it (or an upload plan) to a backend as one resident buffer; :func:`egraph_view`
resolves it into checked per-column pointers; :func:`canonicalize` merges congruent
e-classes on the device until a fixed point. An e-graph session
(``vyre_async.egraph_session``) does all of that for you. The kernels' CUDA C is in
this package's ``.cu`` files, their NumPy references in ``_reference``.
"""

from ...kernels import register_builtin as _register_builtin
from ._image import IMAGE_DTYPE as IMAGE_DTYPE
from ._image import pack_egraph as pack_egraph
from ._image import packed_words as packed_words
from ._image import unpack_egraph as unpack_egraph
from ._kernels import EGRAPH_KERNELS as EGRAPH_KERNELS
from ._kernels import egraph_check as egraph_check
from ._kernels import egraph_clear as egraph_clear
from ._kernels import egraph_compress as egraph_compress
from ._kernels import egraph_init as egraph_init
from ._kernels import egraph_merge as egraph_merge
from ._kernels import egraph_rewrite as egraph_rewrite
from ._kernels import egraph_signatures as egraph_signatures
from ._layout import EGRAPH_COLUMNS as EGRAPH_COLUMNS
from ._layout import ByteSpan as ByteSpan
from ._layout import EGraphByteLayout as EGraphByteLayout
from ._layout import EGraphLayout as EGraphLayout
from ._layout import WordSpan as WordSpan
from ._plan import BorrowedEGraphUploadPlan as BorrowedEGraphUploadPlan
from ._plan import EGraphUploadPlan as EGraphUploadPlan
from ._plan import borrow_egraph_image as borrow_egraph_image
from ._plan import plan_egraph_upload as plan_egraph_upload
from ._rounds import MAX_ROUNDS_LIMIT as MAX_ROUNDS_LIMIT
from ._rounds import Canonicalization as Canonicalization
from ._rounds import canonicalize as canonicalize
from ._rounds import round_steps as round_steps
from ._rounds import scratch_words as scratch_words
from ._snapshot import EGraphSnapshot as EGraphSnapshot
from ._state import EGRAPH_STATE_WORDS as EGRAPH_STATE_WORDS
from ._upload import DEFAULT_CHUNK_BYTES as DEFAULT_CHUNK_BYTES
from ._upload import EGraphSource as EGraphSource
from ._upload import ResidentEGraph as ResidentEGraph
from ._upload import upload_egraph as upload_egraph
from ._view import DeviceColumn as DeviceColumn
from ._view import EGraphDeviceView as EGraphDeviceView
from ._view import EGraphHostView as EGraphHostView
from ._view import check_column_spans as check_column_spans
from ._view import egraph_view as egraph_view
from ._view import resolve_device_view as resolve_device_view
from ._view import resolve_host_view as resolve_host_view

_register_builtin(*EGRAPH_KERNELS)

__all__ = [
    "BorrowedEGraphUploadPlan",
    "ByteSpan",
    "Canonicalization",
    "DEFAULT_CHUNK_BYTES",
    "DeviceColumn",
    "EGRAPH_COLUMNS",
    "EGRAPH_KERNELS",
    "EGRAPH_STATE_WORDS",
    "EGraphByteLayout",
    "EGraphDeviceView",
    "EGraphHostView",
    "EGraphLayout",
    "EGraphSnapshot",
    "EGraphSource",
    "EGraphUploadPlan",
    "IMAGE_DTYPE",
    "MAX_ROUNDS_LIMIT",
    "ResidentEGraph",
    "WordSpan",
    "borrow_egraph_image",
    "canonicalize",
    "check_column_spans",
    "egraph_check",
    "egraph_clear",
    "egraph_compress",
    "egraph_init",
    "egraph_merge",
    "egraph_rewrite",
    "egraph_signatures",
    "egraph_view",
    "pack_egraph",
    "packed_words",
    "plan_egraph_upload",
    "resolve_device_view",
    "resolve_host_view",
    "round_steps",
    "scratch_words",
    "unpack_egraph",
    "upload_egraph",
]
