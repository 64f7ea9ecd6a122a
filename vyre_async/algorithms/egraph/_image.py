"""Packing a snapshot into one little-endian ``u32`` image, and unpacking it again."""

from __future__ import annotations

import numpy as np

from ...errors import ValidationError
from ._layout import EGRAPH_COLUMNS, EGraphLayout, WordSpan
from ._reference import row_signatures
from ._snapshot import EGraphSnapshot

#: Column starts are aligned to this many words (256 bytes: whole cache lines).
COLUMN_ALIGN_WORDS = 64
#: The image's element type: ``u32``, little-endian on every host.
IMAGE_DTYPE = np.dtype("<u4")


def image_columns(snapshot: EGraphSnapshot) -> dict[str, np.ndarray]:
    """Every image column of ``snapshot``, in :data:`EGRAPH_COLUMNS` order.

    ``row_signatures`` hash each row's operator and children as given (each child
    its own canonical class), as the device's ``egraph_signatures`` would.
    """
    offsets = snapshot.children_offsets
    starts, lens = offsets[:-1], np.diff(offsets)
    groups, counts = np.unique(snapshot.eclass_ids, return_counts=True)
    group_offsets = np.zeros(groups.size + 1, dtype=np.int64)
    np.cumsum(counts, out=group_offsets[1:])
    columns = {
        "row_eclass_ids": snapshot.eclass_ids,
        "row_language_op_ids": snapshot.op_ids,
        "row_children_offsets": starts,
        "row_children_lens": lens,
        "row_signatures": row_signatures(snapshot.op_ids, lens, starts, snapshot.children),
        "children": snapshot.children,
        "group_eclass_ids": groups,
        "group_offsets": group_offsets,
        "group_rows": np.argsort(snapshot.eclass_ids, kind="stable"),
    }
    return {name: columns[name] for name in EGRAPH_COLUMNS}


def pack_egraph(
    snapshot: EGraphSnapshot, *, out: np.ndarray | None = None
) -> tuple[np.ndarray, EGraphLayout]:
    """Pack ``snapshot`` into one ``<u4`` array and the layout of its columns.

    Columns follow each other in :data:`EGRAPH_COLUMNS` order, each starting on a
    256-byte boundary; the padding is zero.

    Args:
        snapshot: The e-graph.
        out: Pack into this array instead of a new one, e.g. page-locked host memory
            (CuPy's ``cupyx.empty_pinned``), which ``upload_egraph`` of a plan
            borrowing it then copies to the device without staging: a writable, 1-D,
            C-contiguous ``'<u4'`` array of at least :func:`packed_words` words.

    Returns:
        ``(words, layout)``: the image (a view of ``out`` when given) and where each
        column lies in it.

    Raises:
        ValidationError: ``out`` is not such an array.
    """
    if not isinstance(snapshot, EGraphSnapshot):
        raise TypeError(f"pack_egraph takes an EGraphSnapshot, got {type(snapshot).__name__}")
    columns = image_columns(snapshot)
    spans: dict[str, WordSpan] = {}
    at = 0
    for name, column in columns.items():
        spans[name] = WordSpan(at, int(column.size))
        at += -(-int(column.size) // COLUMN_ALIGN_WORDS) * COLUMN_ALIGN_WORDS
    layout = EGraphLayout(spans, snapshot.num_classes)
    if out is None:
        words = np.zeros(layout.total_words, dtype=IMAGE_DTYPE)
    else:
        words = _checked_out(out, layout.total_words)
        words.fill(0)
    for name, column in columns.items():
        span = spans[name]
        words[span.offset : span.end] = column
    return words, layout


def packed_words(snapshot: EGraphSnapshot) -> int:
    """Words :func:`pack_egraph` needs for ``snapshot`` (to size an ``out`` array)."""
    rows = int(snapshot.eclass_ids.size)
    groups = int(np.unique(snapshot.eclass_ids).size)
    # The sizes of image_columns(), without computing the columns.
    sizes = [rows] * 5 + [int(snapshot.children.size), groups, groups + 1, rows]
    padded = sum(-(-size // COLUMN_ALIGN_WORDS) * COLUMN_ALIGN_WORDS for size in sizes[:-1])
    return padded + sizes[-1]  # the image ends where its last column does


def _checked_out(out: np.ndarray, total_words: int) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise ValidationError(
            f"out must be a NumPy array, got {type(out).__name__}",
            fix="pass e.g. cupyx.empty_pinned((packed_words(snapshot),), dtype='<u4').",
        )
    if out.dtype != IMAGE_DTYPE or out.ndim != 1 or not out.flags.c_contiguous:
        raise ValidationError(
            f"out must be 1-D, C-contiguous '<u4' words; got {out.dtype.str} with shape "
            f"{out.shape}{'' if out.flags.c_contiguous else ', strided'}",
            fix="allocate it with dtype='<u4' and shape (packed_words(snapshot),).",
        )
    if not out.flags.writeable:
        raise ValidationError("out is read-only", fix="pass a writable array.")
    if out.size < total_words:
        raise ValidationError(
            f"out holds {out.size} words; the image needs {total_words}",
            fix="allocate at least packed_words(snapshot) words.",
        )
    return out[:total_words]


def column_words(words: np.ndarray, layout: EGraphLayout, name: str) -> np.ndarray:
    """The words of column ``name`` (a view into ``words``)."""
    span = layout.spans[name]
    return words[span.offset : span.end]


def unpack_egraph(words: np.ndarray, layout: EGraphLayout) -> EGraphSnapshot:
    """The snapshot an image holds: rows, operators and children (signatures and
    groups are derived data and are not read).

    Raises:
        ValidationError: ``words`` is not a 1-D ``u32`` array long enough for the
            layout, or its contents fail :func:`check_image_contents`.
    """
    check_image_contents(words, layout)
    starts = column_words(words, layout, "row_children_offsets").astype(np.int64)
    lens = column_words(words, layout, "row_children_lens").astype(np.int64)
    children = column_words(words, layout, "children")
    offsets = np.zeros(lens.size + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    within = np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1], lens)
    return EGraphSnapshot(
        column_words(words, layout, "row_eclass_ids"),
        column_words(words, layout, "row_language_op_ids"),
        offsets,
        children[np.repeat(starts, lens) + within],
        num_classes=layout.num_classes,
    )


def check_image_contents(words: np.ndarray, layout: EGraphLayout) -> None:
    """Refuse an image whose ids or child spans would make a kernel read out of bounds.

    Raises:
        ValidationError: An e-class id or child id is ``>= num_classes``, or a row's
            children run past the ``children`` column; the message names the column.
    """
    check_image_words(words, layout)
    for name in ("row_eclass_ids", "children"):
        column = column_words(words, layout, name)
        if column.size and int(column.max()) >= layout.num_classes:
            raise ValidationError(
                f"column {name!r} holds e-class id {int(column.max())} but the layout has "
                f"num_classes={layout.num_classes}",
                fix="pack the image with pack_egraph() so ids and layout agree.",
            )
    starts = column_words(words, layout, "row_children_offsets").astype(np.int64)
    ends = starts + column_words(words, layout, "row_children_lens")
    if ends.size and int(ends.max()) > layout.num_children:
        row = int(np.argmax(ends > layout.num_children))
        raise ValidationError(
            f"row {row}'s children end at word {int(ends[row])} of column "
            f"'row_children_offsets', past the {layout.num_children} words of 'children'",
            fix="pack the image with pack_egraph() so offsets and children agree.",
        )


def check_image_words(words: np.ndarray, layout: EGraphLayout) -> None:
    """Refuse an image array that is not 1-D ``u32`` words covering the whole layout."""
    if not isinstance(words, np.ndarray):
        raise TypeError(f"an e-graph image is a NumPy array, got {type(words).__name__}")
    if words.ndim != 1 or words.dtype.kind != "u" or words.dtype.itemsize != 4:
        raise ValidationError(
            f"an e-graph image must be a 1-D array of u32 words, got {words.dtype} of shape "
            f"{words.shape}",
            fix="pass the words pack_egraph() returned (dtype '<u4').",
        )
    if words.size < layout.total_words:
        raise ValidationError(
            f"the image holds {words.size} words but its layout reaches word {layout.total_words}",
            fix="pass the image together with the layout that describes it.",
        )
