"""E-graphs on the device: snapshot -> packed ``u32`` image -> resident canonicalization.

An :class:`EGraphSnapshot` (rows of e-class id, operator id and child e-classes)
packs into one little-endian ``u32`` image with a column layout; an upload plan
moves it to a backend as one resident buffer; a kernel view resolves it into
checked per-column pointers; an :class:`EGraphSession` merges congruent e-classes
on the device until a fixed point.
"""

from ._image import IMAGE_DTYPE as IMAGE_DTYPE
from ._image import pack_egraph as pack_egraph
from ._image import packed_words as packed_words
from ._image import unpack_egraph as unpack_egraph
from ._layout import EGRAPH_COLUMNS as EGRAPH_COLUMNS
from ._layout import ByteSpan as ByteSpan
from ._layout import EGraphByteLayout as EGraphByteLayout
from ._layout import EGraphLayout as EGraphLayout
from ._layout import WordSpan as WordSpan
from ._plan import BorrowedEGraphUploadPlan as BorrowedEGraphUploadPlan
from ._plan import EGraphUploadPlan as EGraphUploadPlan
from ._plan import borrow_egraph_image as borrow_egraph_image
from ._plan import plan_egraph_upload as plan_egraph_upload
from ._rounds import Canonicalization as Canonicalization
from ._session import EGraphSession as EGraphSession
from ._snapshot import EGraphSnapshot as EGraphSnapshot
from ._upload import ResidentEGraph as ResidentEGraph
from ._upload import upload_egraph as upload_egraph
from ._view import DeviceColumn as DeviceColumn
from ._view import EGraphDeviceView as EGraphDeviceView
from ._view import EGraphHostView as EGraphHostView
from ._view import check_column_spans as check_column_spans
from ._view import resolve_device_view as resolve_device_view
from ._view import resolve_host_view as resolve_host_view

__all__ = [
    "BorrowedEGraphUploadPlan",
    "ByteSpan",
    "Canonicalization",
    "DeviceColumn",
    "EGRAPH_COLUMNS",
    "EGraphByteLayout",
    "EGraphDeviceView",
    "EGraphHostView",
    "EGraphLayout",
    "EGraphSession",
    "EGraphSnapshot",
    "EGraphUploadPlan",
    "IMAGE_DTYPE",
    "ResidentEGraph",
    "WordSpan",
    "borrow_egraph_image",
    "check_column_spans",
    "pack_egraph",
    "packed_words",
    "plan_egraph_upload",
    "resolve_device_view",
    "resolve_host_view",
    "unpack_egraph",
    "upload_egraph",
]
