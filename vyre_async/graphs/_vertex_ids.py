"""Renumbering: arbitrary vertex ids to ``0 .. V-1`` and back (:class:`VertexIds`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from ._checks import INT32_MAX
from ._column_input import all_integers, column_array


class VertexIds:
    """The original id of each vertex of a renumbered graph, and the way between them.

    Vertex ``v`` of the graph was called ``ids[v]`` by the caller. Made by
    :meth:`CsrGraph.from_edges` with ``renumber=True`` and by
    :meth:`CsrGraph.from_networkx`; use it to turn the caller's ids into vertex
    numbers for a query and the numbers in a result back into the caller's ids.

    Example:
        >>> from vyre_async.graphs import CsrGraph
        >>> graph, ids = CsrGraph.from_edges(["b", "a"], ["c", "b"], renumber=True)
        >>> ids.to_vertex("b"), list(ids.to_ids([0, 2]))
        (1, ['a', 'c'])

    Args:
        ids: One id per vertex, all distinct; kept as a read-only array.

    Attributes:
        ids: The original ids, in vertex order: integer ids as int64, others as an
            object array (strings, tuples, any hashable).
    """

    __slots__ = ("_index", "_sorted", "ids")

    ids: npt.NDArray[Any]

    def __init__(self, ids: npt.NDArray[Any]) -> None:
        frozen = np.asarray(ids).view()
        if frozen.ndim != 1:
            raise ValueError(f"ids must be 1-D, got shape {frozen.shape}")
        frozen.flags.writeable = False
        self.ids = frozen
        self._index: dict[Any, int] | None = None
        # Numbers and strings come out of np.unique sorted: binary search finds them.
        self._sorted = frozen.dtype.kind in "iufUS" and bool(np.all(frozen[1:] > frozen[:-1]))

    def __len__(self) -> int:
        return int(self.ids.size)

    def __repr__(self) -> str:
        shown = ", ".join(repr(x) for x in self.ids[:3].tolist())
        more = ", ..." if self.ids.size > 3 else ""
        return f"VertexIds({self.ids.size} vertices: {shown}{more})"

    def to_vertex(self, original: object) -> int:
        """The vertex number of one original id.

        Raises:
            ValidationError: The id names no vertex of the graph.
        """
        probe = np.asarray([original])
        if probe.shape != (1,):  # a tuple id: keep it whole
            probe = np.empty(1, dtype=object)
            probe[0] = original
        return int(self.to_vertices(probe)[0])

    def to_vertices(self, originals: Iterable[object] | npt.ArrayLike) -> npt.NDArray[np.int32]:
        """The vertex numbers (int32) of original ids, in the order given.

        Args:
            originals: Original ids: a list, a NumPy array, a pandas or Arrow column.

        Raises:
            ValidationError: An id names no vertex of the graph (the first is named).
        """
        wanted = _as_array(originals)
        if self._sorted and wanted.dtype.kind in "iufUS":
            try:
                found = np.searchsorted(self.ids, wanted)
            except TypeError:  # a string among numbers, say: no order between them
                pass
            else:
                inside = found < self.ids.size
                hit = np.zeros(wanted.size, dtype=bool)
                hit[inside] = self.ids[found[inside]] == wanted[inside]
                if not hit.all():
                    self._unknown(wanted, int(np.argmax(~hit)))
                return found.astype(np.int32)
        index = self._lookup()
        vertices = np.empty(wanted.size, dtype=np.int32)
        for i, original in enumerate(wanted.tolist()):
            try:
                vertices[i] = index[original]
            except (KeyError, TypeError):  # TypeError: an unhashable value
                self._unknown(wanted, i)
        return vertices

    def to_ids(self, vertices: npt.ArrayLike) -> npt.NDArray[Any]:
        """The original ids of vertex numbers (any integer array, a mask's ``nonzero()``).

        Raises:
            ValidationError: A number is not a vertex of the graph (the first is named).
        """
        numbers = np.asarray(vertices)
        if numbers.size and numbers.dtype.kind not in "iu":
            raise ValidationError(
                f"vertex numbers have dtype {numbers.dtype}; expected integers",
                fix="pass vertex numbers, e.g. np.flatnonzero(levels >= 0).",
            )
        if numbers.size and (numbers.min() < 0 or numbers.max() >= self.ids.size):
            bad = (numbers < 0) | (numbers >= self.ids.size)
            pos = int(np.argmax(bad.reshape(-1)))
            raise ValidationError(
                f"vertex number {int(numbers.reshape(-1)[pos])} (position {pos}) is outside "
                f"[0, {self.ids.size})",
                fix=f"pass vertex numbers of this graph: 0 <= v < {self.ids.size}.",
            )
        result: npt.NDArray[Any] = self.ids[numbers]
        return result

    def _lookup(self) -> dict[Any, int]:
        if self._index is None:
            self._index = {original: v for v, original in enumerate(self.ids.tolist())}
        return self._index

    def _unknown(self, wanted: npt.NDArray[Any], pos: int) -> NoReturn:
        raise ValidationError(
            f"id {_plain(wanted[pos])!r} (position {pos}) is not a vertex of this graph",
            fix="pass ids that occur in the graph's edges; VertexIds.ids lists them all.",
        )


def _plain(value: object) -> object:
    """A NumPy scalar as the Python value it holds (``'q'``, not ``np.str_('q')``)."""
    return value.item() if isinstance(value, np.generic) else value


def _as_array(values: object) -> npt.NDArray[Any]:
    if not hasattr(values, "__len__") and hasattr(values, "__iter__"):
        values = list(values)  # a generator, say
    array: npt.NDArray[Any] = column_array("ids", values, keep_items=True)
    if array.ndim != 1:
        raise ValidationError(
            f"the ids have shape {array.shape}; expected a flat sequence of ids",
            fix="pass a list or 1-D array of ids; VertexIds.to_vertex takes a single id.",
        )
    return array


def renumber_edges(
    src: npt.NDArray[Any], dst: npt.NDArray[Any]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], VertexIds]:
    """Number the ids of both columns from 0; return the numbered columns and the ids.

    Ids that have an order (numbers, strings) are numbered in ascending order; a mix
    without one (a string and a number, tuples of mixed types) in order of first
    appearance, all sources before all destinations.

    Raises:
        ValidationError: More than 2**31 - 1 distinct ids, or an unhashable id.
    """
    both = _joined(src, dst)
    try:
        ids, inverse = np.unique(both, return_inverse=True)
    except TypeError:  # no order between the ids
        ids, inverse = _first_appearance(both)
    else:
        if ids.dtype.kind == "O" and all_integers(ids.tolist()):
            ids = ids.astype(np.int64)
    if ids.size > INT32_MAX:
        raise ValidationError(
            f"the edges name {ids.size} distinct vertices; at most {INT32_MAX} are supported",
            fix="split the graph; vertex numbers are int32 on the device.",
        )
    inverse = inverse.reshape(-1).astype(np.int64, copy=False)
    return inverse[: src.size], inverse[src.size :], VertexIds(ids)


def _joined(src: npt.NDArray[Any], dst: npt.NDArray[Any]) -> npt.NDArray[Any]:
    if src.dtype.kind == "O" or dst.dtype.kind == "O" or src.dtype.kind != dst.dtype.kind:
        both = np.empty(src.size + dst.size, dtype=object)
        both[: src.size] = src
        both[src.size :] = dst
        return both
    return np.concatenate((src, dst))


def _first_appearance(both: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
    index: dict[Any, int] = {}
    inverse = np.empty(both.size, dtype=np.int64)
    for i, original in enumerate(both.tolist()):
        try:
            inverse[i] = index.setdefault(original, len(index))
        except TypeError:
            raise ValidationError(
                f"id {original!r} ({type(original).__name__}) cannot be a vertex id: it is "
                "not hashable",
                fix="use hashable ids: numbers, strings or tuples.",
            ) from None
    return ids_array(list(index)), inverse  # a dict keeps insertion order: v's id is v-th


def ids_array(values: list[Any]) -> npt.NDArray[Any]:
    """Ids as an array: int64 when all are integers, else an object array of the values."""
    if values and all_integers(values):
        return np.array(values, dtype=np.int64)
    ids = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        ids[i] = value  # one by one: a tuple stays one element
    return ids
