"""Where each column of a packed e-graph image lives: word spans, then byte spans.

The device image is one little-endian ``u32`` array; a :class:`EGraphLayout` names
the span (offset, length, in words) of each column in it, and
:class:`EGraphByteLayout` is the same in bytes, with every conversion checked to
fit an unsigned 64-bit byte address.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeVar

from ...errors import ValidationError

#: The image's columns, in the order they are packed.
EGRAPH_COLUMNS: tuple[str, ...] = (
    "row_eclass_ids",
    "row_language_op_ids",
    "row_children_offsets",
    "row_children_lens",
    "row_signatures",
    "children",
    "group_eclass_ids",
    "group_offsets",
    "group_rows",
)
#: Columns with one word per row.
ROW_COLUMNS: tuple[str, ...] = EGRAPH_COLUMNS[:5]
#: Bytes per word of the image.
WORD_BYTES = 4
#: Largest byte address (and byte count) a device pointer can hold.
U64_MAX = 2**64 - 1
_SHARD_FIX = "shard the e-graph before upload, so each image stays far below 2**64 bytes."


@dataclass(frozen=True, slots=True)
class WordSpan:
    """A column's place in the image, in ``u32`` words."""

    offset: int
    length: int

    @property
    def end(self) -> int:
        """One past the column's last word."""
        return self.offset + self.length


@dataclass(frozen=True, slots=True)
class ByteSpan:
    """A column's place in the image, in bytes."""

    offset: int
    nbytes: int

    @property
    def end(self) -> int:
        """One past the column's last byte."""
        return self.offset + self.nbytes


T = TypeVar("T")


def _frozen(mapping: Mapping[str, T]) -> Mapping[str, T]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, eq=False)
class EGraphLayout:
    """The word span of every image column, plus the e-class count the image serves.

    Args:
        spans: A :class:`WordSpan` for each name in :data:`EGRAPH_COLUMNS`.
        num_classes: E-classes of the e-graph (ids in ``[0, num_classes)``); classes
            without rows appear only here.

    Raises:
        ValidationError: A column is missing or unknown, a span is negative, the row
            columns disagree in length, or the group columns do not fit the rows.
    """

    spans: Mapping[str, WordSpan]
    num_classes: int

    def __post_init__(self) -> None:
        names = set(self.spans)
        if names != set(EGRAPH_COLUMNS):
            missing, extra = set(EGRAPH_COLUMNS) - names, names - set(EGRAPH_COLUMNS)
            raise ValidationError(
                f"an e-graph layout needs exactly the columns {', '.join(EGRAPH_COLUMNS)}; "
                f"missing {sorted(missing)}, unknown {sorted(extra)}",
                fix="build layouts with pack_egraph(), or name every column once.",
            )
        for name in EGRAPH_COLUMNS:
            span = self.spans[name]
            if not isinstance(span, WordSpan) or span.offset < 0 or span.length < 0:
                raise ValidationError(
                    f"column {name!r} has span {span!r}; spans are WordSpan(offset >= 0, "
                    "length >= 0)",
                    fix=f"give {name!r} a non-negative WordSpan.",
                )
        if self.num_classes < 0:
            raise ValidationError(
                f"num_classes={self.num_classes} is negative", fix="pass num_classes >= 0."
            )
        rows = self.spans["row_eclass_ids"].length
        for name in (*ROW_COLUMNS, "group_rows"):
            if self.spans[name].length != rows:
                raise ValidationError(
                    f"column {name!r} has {self.spans[name].length} words but the image "
                    f"has {rows} rows (row_eclass_ids)",
                    fix=f"give {name!r} exactly one word per row.",
                )
        groups = self.spans["group_eclass_ids"].length
        if self.spans["group_offsets"].length != groups + 1:
            raise ValidationError(
                f"column 'group_offsets' has {self.spans['group_offsets'].length} words for "
                f"{groups} groups (group_eclass_ids)",
                fix="give group_offsets one word per group plus a final one.",
            )
        object.__setattr__(self, "spans", _frozen({n: self.spans[n] for n in EGRAPH_COLUMNS}))

    @property
    def num_rows(self) -> int:
        """Rows (e-nodes) in the image."""
        return self.spans["row_eclass_ids"].length

    @property
    def num_children(self) -> int:
        """Words of the ``children`` column."""
        return self.spans["children"].length

    @property
    def total_words(self) -> int:
        """Words an image must hold: the end of the furthest column."""
        return max(span.end for span in self.spans.values())

    def to_bytes(self) -> EGraphByteLayout:
        """The same layout in bytes (see :class:`EGraphByteLayout`)."""
        return EGraphByteLayout(self)


@dataclass(frozen=True, eq=False, init=False)
class EGraphByteLayout:
    """A word layout converted to byte spans, each checked to fit a ``u64`` address.

    Args:
        words: The word layout.

    Attributes:
        words: The word layout.
        spans: A :class:`ByteSpan` per column, in :data:`EGRAPH_COLUMNS` order.
        nbytes: Bytes an image must hold (the end of the furthest column).

    Raises:
        ValidationError: A column's byte offset or end overflows ``u64``; the message
            names the column.
    """

    words: EGraphLayout
    spans: Mapping[str, ByteSpan]
    nbytes: int

    def __init__(self, words: EGraphLayout) -> None:
        spans: dict[str, ByteSpan] = {}
        for name, span in words.spans.items():
            begin, end = span.offset * WORD_BYTES, span.end * WORD_BYTES
            if end > U64_MAX:
                raise ValidationError(
                    f"column {name!r} spans words [{span.offset}, {span.end}), which is bytes "
                    f"[{begin}, {end}): past the largest 64-bit byte address {U64_MAX}",
                    fix=_SHARD_FIX,
                )
            spans[name] = ByteSpan(begin, end - begin)
        object.__setattr__(self, "words", words)
        object.__setattr__(self, "spans", _frozen(spans))
        object.__setattr__(self, "nbytes", max(s.end for s in spans.values()))
