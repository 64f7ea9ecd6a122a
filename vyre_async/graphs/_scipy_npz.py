"""``scipy.sparse.save_npz`` files as graphs, their sizes checked before SciPy inflates them.

SciPy compresses these archives by default, so a file of a few megabytes may inflate
to gigabytes. Every member's ``.npy`` header is read first and checked against the
size the archive declares for it (inflating stops there: Python's ``zipfile`` never
gives more than a member's declared size); the graph's host memory is estimated
from those sizes and refused above the limit before SciPy reads a single array.
"""

from __future__ import annotations

import math
import os
import zipfile
from typing import Any, BinaryIO

import numpy as np

from .._files import open_regular
from .._memory import check_host_memory
from ..errors import ValidationError
from ._columns import estimate_graph_bytes
from ._csr import CsrGraph
from ._header import GraphFileHeader
from ._npz import member_header
from ._optional import optional_module
from ._text import StrPath, unreadable

_FIX = (
    "write it with scipy.sparse.save_npz(path, matrix), or use kind = 'npz' for files "
    "from vyre_async.graphs.save_npz."
)
#: Bytes the ``shape`` member may declare (a 2-item integer array and its header).
_SHAPE_BYTES = 1024


def scipy_npz_header(
    path: StrPath, *, symmetric: bool = False, quote_lines: bool = True
) -> GraphFileHeader:
    """The vertex and entry counts of a ``scipy.sparse.save_npz`` file, and the host
    memory loading it as a graph needs, from its members' headers (blocking).

    Raises:
        ValidationError: Not a readable regular file, not such an archive, or a member
            whose header and declared size disagree.
    """
    try:
        with open_regular(path) as file:
            return _header(file, os.fspath(path), symmetric, quote_lines)
    except OSError as err:
        raise unreadable(path, err) from err


def load_scipy_npz(
    path: StrPath,
    *,
    symmetric: bool = False,
    memory_limit: int | None = None,
    quote_lines: bool = True,
) -> CsrGraph:
    """Read a ``scipy.sparse.save_npz`` adjacency matrix as a graph (blocking).

    The members' headers are checked and the memory estimated first (see the module
    docstring); the file is opened once, so the arrays read are those checked.

    Args:
        path: The ``.npz`` file.
        symmetric: Add every entry reversed (see :meth:`CsrGraph.from_scipy`).
        memory_limit: Host bytes the graph may need; default: what the machine has.
        quote_lines: Whether an error may quote what the file holds.

    Raises:
        ValidationError: Not such a file, sizes that disagree, a graph needing more
            than ``memory_limit``, or a matrix that is no graph.
        UnsupportedFeatureError: SciPy is not installed.
    """
    name = os.fspath(path)
    sparse: Any = optional_module("scipy.sparse", f"reading {name}")
    try:
        with open_regular(path) as file:
            header = _header(file, name, symmetric, quote_lines)
            check_host_memory(
                header.nbytes or 0,
                f"{name}: a graph of {header.num_vertices:,} vertices and "
                f"{header.num_edges:,} matrix entries",
                fix="load a smaller graph, or run on a machine with more memory.",
                limit=memory_limit,
            )
            file.seek(0)
            matrix = sparse.load_npz(file)
    except OSError as err:
        raise unreadable(path, err) from err
    except (ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        raise _not_scipy(name, err, quote_lines) from err
    return CsrGraph.from_scipy(matrix, symmetric=symmetric)


def _header(file: BinaryIO, name: str, symmetric: bool, quote: bool) -> GraphFileHeader:
    file_bytes = os.fstat(file.fileno()).st_size
    try:
        with zipfile.ZipFile(file) as archive:
            members = {
                info.filename.removesuffix(".npy"): (
                    info,
                    *member_header(name, archive, info, _FIX),
                )
                for info in archive.infolist()
            }
            if "format" not in members or "shape" not in members:
                raise ValidationError(
                    f"{name} is not a scipy.sparse.save_npz file: it has no 'format' and "
                    "'shape' arrays",
                    fix=_FIX,
                )
            rows = _rows(name, archive, members["shape"][0])
    except (ValueError, EOFError, zipfile.BadZipFile) as err:
        raise _not_scipy(name, err, quote) from err
    declared = sum(math.prod(shape) * itemsize for _, shape, itemsize in members.values())
    entries = math.prod(members["data"][1]) if "data" in members else 0
    # SciPy's arrays and their canonical CSR copy, then building the graph (measured
    # on COO and CSR files, directed and symmetric, within this estimate).
    nbytes = 3 * declared + estimate_graph_bytes(rows, entries, symmetric=symmetric, weighted=True)
    return GraphFileHeader(rows, entries, nbytes, file_bytes)


def _rows(name: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """The matrix's row count, from its small ``shape`` member."""
    if info.file_size > _SHAPE_BYTES:
        raise ValidationError(
            f"{name}: its shape array declares {info.file_size:,} bytes; a matrix's shape "
            "is two integers",
            fix=_FIX,
        )
    with archive.open(info) as member:
        shape = np.lib.format.read_array(member, allow_pickle=False)
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or int(shape.min()) < 0:
        raise ValidationError(
            f"{name}: its shape array is {shape.dtype} of shape {shape.shape}, not two "
            "non-negative integers",
            fix=_FIX,
        )
    return int(shape[0])


def _not_scipy(name: str, err: BaseException, quote: bool) -> ValidationError:
    detail = f" ({err})" if quote else ""
    return ValidationError(f"{name} is not a scipy.sparse.save_npz file{detail}", fix=_FIX)
