"""Upload plans: the packed words, their byte layout and size, ready for one upload.

An owned plan holds an image it packed itself; a borrowed plan holds a read-only
view of words the caller already has (packed earlier, or memory-mapped from a
file), so planning copies nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

from ...errors import ValidationError
from ._image import IMAGE_DTYPE, check_image_contents, check_image_words, pack_egraph
from ._layout import EGraphByteLayout, EGraphLayout
from ._snapshot import EGraphSnapshot


@dataclass(frozen=True, eq=False)
class EGraphUploadPlan:
    """An image this plan owns: packed from a snapshot by :func:`plan_egraph_upload`.

    Attributes:
        words: The packed ``<u4`` image (read-only).
        layout: Byte spans of its columns.
        nbytes: Bytes to upload (the whole image).
    """

    words: np.ndarray
    layout: EGraphByteLayout
    nbytes: int

    @property
    def owned(self) -> bool:
        """True: the plan packed, and holds, its own copy of the words."""
        return True


@dataclass(frozen=True, eq=False)
class BorrowedEGraphUploadPlan:
    """A caller's packed image, held as a read-only view (no copy).

    The caller must not change the words until the upload finished.

    Attributes:
        words: A read-only view of the caller's ``<u4`` words.
        layout: Byte spans of its columns.
        nbytes: Bytes to upload (up to the end of the furthest column).
    """

    words: np.ndarray
    layout: EGraphByteLayout
    nbytes: int

    @property
    def owned(self) -> bool:
        """False: the words belong to the caller."""
        return False


#: Either plan; ``upload_egraph`` takes both.
UploadPlan: TypeAlias = EGraphUploadPlan | BorrowedEGraphUploadPlan


def plan_egraph_upload(snapshot: EGraphSnapshot) -> EGraphUploadPlan:
    """Pack ``snapshot`` into an owned plan (heavy NumPy work: call it off the event loop).

    Raises:
        ValidationError: A column's byte span overflows ``u64`` (see
            :class:`EGraphByteLayout`).
    """
    words, layout = pack_egraph(snapshot)
    words.setflags(write=False)
    byte_layout = layout.to_bytes()
    return EGraphUploadPlan(words, byte_layout, byte_layout.nbytes)


def borrow_egraph_image(words: np.ndarray, layout: EGraphLayout) -> BorrowedEGraphUploadPlan:
    """A plan over words the caller already packed, without copying them.

    Args:
        words: A 1-D, C-contiguous, little-endian ``u32`` array (``'<u4'``).
        layout: The layout the words were packed with.

    Raises:
        ValidationError: The words are not little-endian ``u32``, not contiguous
            (either would need a copy), shorter than the layout, or hold ids that
            would make a kernel read out of bounds (see ``check_image_contents``).
    """
    check_image_words(words, layout)
    if words.dtype != IMAGE_DTYPE or not words.flags.c_contiguous:
        raise ValidationError(
            f"a borrowed e-graph image must be C-contiguous '<u4' words; this one is "
            f"{words.dtype.str}{'' if words.flags.c_contiguous else ', strided'}, which "
            "would need a copy",
            fix="pass np.ascontiguousarray(words, dtype='<u4'), or plan the snapshot with "
            "plan_egraph_upload() (an owned copy).",
        )
    check_image_contents(words, layout)  # reads every id once; copies nothing
    view = words[: layout.total_words].view()
    view.setflags(write=False)
    byte_layout = layout.to_bytes()
    return BorrowedEGraphUploadPlan(view, byte_layout, byte_layout.nbytes)
