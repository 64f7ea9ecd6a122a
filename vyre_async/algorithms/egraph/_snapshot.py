"""The e-graph snapshot: e-nodes (rows) as ``uint32`` columns, validated once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ...errors import ValidationError

#: Largest id or count a ``u32`` column may hold; ``0xFFFFFFFF`` marks an empty slot.
U32_LIMIT = 0xFFFFFFFE
_SHARD = "shard the e-graph before upload (each part with fewer than 2**32 - 1 rows, "
_SHARD += "children and e-classes)."


def as_u32_column(name: str, values: object) -> np.ndarray:
    """``values`` as a read-only 1-D ``uint32`` array, refusing what does not fit.

    Raises:
        ValidationError: Not 1-D integers, or a value outside ``[0, 2**32 - 2]``.
    """
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValidationError(
            f"e-graph column {name!r} must be 1-D, got shape {array.shape}",
            fix=f"pass {name} as a flat sequence of integers.",
        )
    if array.size == 0:
        array = array.astype(np.uint32)
    if array.dtype.kind not in "iu":
        raise ValidationError(
            f"e-graph column {name!r} must hold integers, got dtype {array.dtype}",
            fix=f"convert it first: np.asarray({name}, dtype=np.uint32).",
        )
    if array.size and (int(array.min()) < 0 or int(array.max()) > U32_LIMIT):
        raise ValidationError(
            f"e-graph column {name!r} holds values in [{int(array.min())}, "
            f"{int(array.max())}], outside the u32 id range [0, {U32_LIMIT}]",
            fix=_SHARD if int(array.max()) > U32_LIMIT else f"keep {name} non-negative.",
        )
    column = np.ascontiguousarray(array, dtype=np.uint32)
    if column is array:
        column = column.copy()
    column.setflags(write=False)
    return column


class EGraphSnapshot:
    """An e-graph's rows (e-nodes): each an e-class id, an operator id and child e-classes.

    Row ``i`` belongs to e-class ``eclass_ids[i]``, applies language operator
    ``op_ids[i]`` and has children ``children[children_offsets[i]:children_offsets[i+1]]``
    (e-class ids). Columns are stored as read-only ``uint32`` copies.

    Args:
        eclass_ids: E-class of each row.
        op_ids: Operator id of each row.
        children_offsets: ``num_rows + 1`` non-decreasing offsets into ``children``,
            from 0 to ``len(children)``.
        children: Child e-class ids, row after row.
        num_classes: Number of e-classes; default the largest id used plus one.

    Raises:
        ValidationError: Lengths disagree, offsets are not a prefix sum, an id is
            out of range, or a count does not fit in ``u32``.
    """

    __slots__ = ("children", "children_offsets", "eclass_ids", "num_classes", "op_ids")
    __hash__ = None  # type: ignore[assignment]

    def __init__(
        self,
        eclass_ids: Any,
        op_ids: Any,
        children_offsets: Any,
        children: Any,
        *,
        num_classes: int | None = None,
    ) -> None:
        self.eclass_ids = as_u32_column("eclass_ids", eclass_ids)
        self.op_ids = as_u32_column("op_ids", op_ids)
        self.children_offsets = as_u32_column("children_offsets", children_offsets)
        self.children = as_u32_column("children", children)
        rows = self.eclass_ids.size
        if self.op_ids.size != rows or self.children_offsets.size != rows + 1:
            raise ValidationError(
                f"an e-graph of {rows} rows (eclass_ids) needs {rows} op_ids and "
                f"{rows + 1} children_offsets, got {self.op_ids.size} and "
                f"{self.children_offsets.size}",
                fix="give one op id per row and one offset per row plus a final one.",
            )
        self._check_offsets()
        used = max(
            int(self.eclass_ids.max(initial=0)) + int(rows > 0),
            int(self.children.max(initial=0)) + int(self.children.size > 0),
        )
        if num_classes is None:
            num_classes = used
        if isinstance(num_classes, bool) or not isinstance(num_classes, int | np.integer):
            raise TypeError(f"num_classes must be an int, got {type(num_classes).__name__}")
        if not used <= int(num_classes) <= U32_LIMIT:
            raise ValidationError(
                f"num_classes={num_classes} but the rows use e-class ids up to {used - 1}"
                if int(num_classes) < used
                else f"num_classes={num_classes} does not fit the u32 id range",
                fix=f"pass num_classes >= {used}, or leave it out."
                if int(num_classes) < used
                else _SHARD,
            )
        self.num_classes = int(num_classes)

    def _check_offsets(self) -> None:
        offsets = self.children_offsets
        steps = np.diff(offsets.astype(np.int64))
        if offsets[0] != 0 or offsets[-1] != self.children.size or (steps < 0).any():
            bad = int(np.argmax(steps < 0)) if (steps < 0).any() else -1
            raise ValidationError(
                f"children_offsets must rise from 0 to len(children)={self.children.size}; "
                f"it starts at {int(offsets[0])}, ends at {int(offsets[-1])}"
                + (f" and falls at row {bad} (its end is before its start)" if bad >= 0 else ""),
                fix="build offsets as np.concatenate([[0], np.cumsum(children_per_row)]).",
            )

    @classmethod
    def from_rows(
        cls, rows: Iterable[tuple[int, int, Sequence[int]]], *, num_classes: int | None = None
    ) -> EGraphSnapshot:
        """A snapshot from ``(eclass_id, op_id, children)`` tuples, in row order."""
        eclass_ids: list[int] = []
        op_ids: list[int] = []
        offsets = [0]
        children: list[int] = []
        for eclass, op, kids in rows:
            eclass_ids.append(eclass)
            op_ids.append(op)
            children.extend(kids)
            offsets.append(len(children))
        return cls(
            np.array(eclass_ids, dtype=np.int64),
            np.array(op_ids, dtype=np.int64),
            np.array(offsets, dtype=np.int64),
            np.array(children, dtype=np.int64),
            num_classes=num_classes,
        )

    @property
    def num_rows(self) -> int:
        """Number of rows (e-nodes)."""
        return int(self.eclass_ids.size)

    @property
    def num_children(self) -> int:
        """Number of child references over all rows."""
        return int(self.children.size)

    def row(self, index: int) -> tuple[int, int, tuple[int, ...]]:
        """Row ``index`` as ``(eclass_id, op_id, children)``."""
        start, end = int(self.children_offsets[index]), int(self.children_offsets[index + 1])
        kids = tuple(int(c) for c in self.children[start:end])
        return int(self.eclass_ids[index]), int(self.op_ids[index]), kids

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EGraphSnapshot):
            return NotImplemented
        return self.num_classes == other.num_classes and all(
            np.array_equal(getattr(self, name), getattr(other, name))
            for name in ("eclass_ids", "op_ids", "children_offsets", "children")
        )

    def __repr__(self) -> str:
        return (
            f"EGraphSnapshot(rows={self.num_rows}, children={self.num_children}, "
            f"classes={self.num_classes})"
        )
