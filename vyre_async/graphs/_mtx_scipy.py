"""Matrix Market files read by SciPy (``scipy.io.mmread``), when SciPy is installed.

SciPy 1.12+ reads Matrix Market with ``fast_matrix_market``, in C++ on several
threads, far faster than a Python tokenizer. It does not say which line of a broken
file is at fault, so this path only ever returns a graph for a file it read whole and
checked; for anything else it returns ``None`` and the caller's own parser (``_mtx``)
reads the file, naming the file and line of the first problem as it always has.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from ._checks import INT32_MAX
from ._csr import CsrGraph
from ._text import StrPath

_FIELDS = ("pattern", "real", "integer")
_SYMMETRIES = ("general", "symmetric")


def load_matrix_market_scipy(path: StrPath, *, symmetric: bool = False) -> CsrGraph | None:
    """Read a Matrix Market ``coordinate`` file with SciPy; ``None`` where it cannot.

    Same semantics as :func:`~vyre_async.graphs.load_matrix_market`: entry ``(i, j)``
    is edge ``i-1 -> j-1``; a ``symmetric`` file (or ``symmetric=True``) gives a
    symmetric graph; values become float32 weights, a repeated entry keeping its
    first value; ``pattern`` files give an unweighted graph.

    Args:
        path: The ``.mtx`` file.
        symmetric: Also symmetrise a ``general`` file.

    Returns:
        The graph; or ``None`` when SciPy is not installed, the header names a
        format, field or symmetry that graphs do not support, the matrix is not
        square or too large, SciPy cannot parse the file, or the entries read do not
        match the size line's count. The caller then parses the file itself.

    Raises:
        ValidationError: A value that is not finite or overflows float32 (from
            :meth:`CsrGraph.from_edges`).
    """
    try:
        scipy_io: Any = importlib.import_module("scipy.io")
    except ImportError:
        return None
    # Any failure (unreadable file, bad header, bad entry, truncation) is reported by
    # the careful parser instead, which names the line; SciPy's messages do not.
    try:
        rows, cols, entries, layout, field, symmetry = scipy_io.mminfo(path)
        supported = (
            layout == "coordinate"
            and field in _FIELDS
            and symmetry in _SYMMETRIES
            and rows == cols
            and 0 <= rows <= INT32_MAX
        )
        if not supported:
            return None
        matrix = scipy_io.mmread(path, spmatrix=False)
    except Exception:
        return None
    row = np.asarray(matrix.row)
    col = np.asarray(matrix.col)
    mirrored = symmetry == "symmetric"
    # mmread mirrors a symmetric file's off-diagonal entries: read = 2 * entries - diagonal.
    read = row.size + (int(np.count_nonzero(row == col)) if mirrored else 0)
    if read != (2 * entries if mirrored else entries):
        return None
    # The mirrored copies carry their entry's value, so the first occurrence of each
    # undirected pair (what from_edges keeps) has the value the file gave it first.
    weights = None if field == "pattern" else np.asarray(matrix.data)
    return CsrGraph.from_edges(
        row, col, int(rows), symmetric=symmetric or mirrored, weights=weights
    )
