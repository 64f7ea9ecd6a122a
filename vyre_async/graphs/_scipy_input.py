"""SciPy sparse matrices (any format, index and value dtype) as checked CSR arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from ._checks import INT32_MAX
from ._optional import optional_module


def canonical_csr(
    matrix: object,
) -> tuple[npt.NDArray[np.integer[Any]], npt.NDArray[np.integer[Any]], npt.NDArray[Any]]:
    """``(indptr, indices, data)`` of ``matrix`` in SciPy's canonical CSR form.

    Canonical: column indices sorted within each row and duplicates summed, as
    ``matrix.tocsr()`` followed by ``sum_duplicates()`` gives them. Explicitly stored
    zeros stay (they are edges). The caller's matrix is never modified: arrays shared
    with it are copied before anything is sorted in place. The arrays returned may be
    the caller's own when already canonical; the caller casts (copies) them.

    Raises:
        TypeError: ``matrix`` is not a SciPy sparse matrix or array.
        ValidationError: The matrix is not square, has more rows than int32 vertex ids
            can number, holds complex or non-numeric values, or a stored column index
            lies outside the matrix.
    """
    sparse = optional_module("scipy.sparse", "CsrGraph.from_scipy")
    if not sparse.issparse(matrix):
        raise TypeError(
            f"matrix must be a scipy.sparse matrix or array, got {type(matrix).__name__}; "
            "wrap a dense array with scipy.sparse.csr_array(array)"
        )
    m: Any = matrix
    shape = tuple(int(x) for x in m.shape)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValidationError(
            f"the matrix has shape {shape}; a graph's adjacency matrix is square",
            fix="pass an n x n matrix: entry (i, j) is the edge i -> j.",
        )
    n = shape[0]
    if n > INT32_MAX:  # checked before tocsr(), which would allocate n + 1 offsets
        raise ValidationError(
            f"the matrix has {n} rows; vertex ids are int32, so at most {INT32_MAX} vertices",
            fix="split the graph, or drop the empty rows and renumber the vertices "
            "(CsrGraph.from_edges(..., renumber=True)).",
        )
    if m.dtype.kind not in "biuf":
        raise ValidationError(
            f"the matrix holds {m.dtype} values; edge weights are real numbers",
            fix="pass a real-valued matrix (matrix.real, or abs(matrix)), or weighted=False.",
        )
    csr = m.tocsr()
    if not csr.has_canonical_format:
        if csr is m or getattr(csr, "indices", None) is getattr(m, "indices", None):
            csr = csr.copy()  # sum_duplicates sorts in place: never the caller's arrays
        csr.sum_duplicates()
    indptr, indices, data = csr.indptr, csr.indices, csr.data
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= n):
        bad = (indices < 0) | (indices >= n)
        pos = int(np.argmax(bad))
        raise ValidationError(
            f"the matrix stores column index {int(indices[pos])} (entry {pos}) outside [0, {n})",
            fix="repair the matrix's index arrays; scipy.sparse does not check them on "
            "construction.",
        )
    return indptr, indices, data


def entry_namer(indptr: npt.NDArray[np.integer[Any]], indices: npt.NDArray[np.integer[Any]]) -> Any:
    """A function naming stored entry ``k`` as ``"entry (row, col)"`` for messages."""

    def name(k: int) -> str:
        row = int(np.searchsorted(indptr, k, side="right")) - 1
        return f"matrix entry ({row}, {int(indices[k])})"

    return name
