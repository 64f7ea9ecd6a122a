"""Matrix Market ``coordinate`` files as graphs: header, size line, 1-based entries."""

from __future__ import annotations

import os

import numpy as np

from .._files import open_regular
from ..errors import ValidationError
from ._checks import INT32_MAX
from ._columns import HELD_BYTES_PER_EDGE, EdgeColumns, estimate_graph_bytes
from ._csr import CsrGraph
from ._header import GraphFileHeader
from ._text import MAX_LINE_BYTES, RowBlock, StrPath, excerpt, read_blocks, unreadable

_MTX_FIX = "write each entry as 'row col' (pattern) or 'row col value', indices from 1."


def load_matrix_market(
    path: StrPath,
    *,
    symmetric: bool = False,
    memory_limit: int | None = None,
    quote_lines: bool = True,
) -> CsrGraph:
    """Load a Matrix Market ``coordinate`` file as a graph: entry ``(i, j)`` is edge i-1 -> j-1.

    Supports ``pattern``, ``real`` and ``integer`` fields with ``general`` or
    ``symmetric`` symmetry; a symmetric file gives a symmetric graph. Values become
    float32 weights (duplicate entries keep their first value).

    Args:
        path: The ``.mtx`` file.
        symmetric: Also symmetrise a ``general`` file.
        memory_limit: Host bytes the graph may need (estimated from the size line
            before any entry is read); default: what the machine has.
        quote_lines: Whether an error quotes a short excerpt of the bad line.

    Returns:
        The graph with as many vertices as the matrix has rows.

    Raises:
        ValidationError: A bad header or size line, a malformed entry, an index out
            of range, an entry count that differs from the size line, a file that
            is not a regular file, or a graph needing more than ``memory_limit``.
    """
    field, mtx_symmetric = _mtx_header(path, quote_lines)
    width = 2 if field == "pattern" else 3
    shape = "2 numbers (row col)" if width == 2 else "3 numbers (row col value)"
    size: tuple[int, int] | None = None
    edges = EdgeColumns(
        width, base=1, limit=0, range_fix="", source=os.fspath(path), memory_limit=memory_limit
    )
    seen = last_line = 0
    for text in read_blocks(path, quote=quote_lines):
        last_line = text.last_line
        if size is None:
            found = text.first_data_line("%")
            if found is None:
                continue
            head, text = found
            size = _mtx_size(head)
            edges.check_memory(size[0], size[1], symmetric=symmetric or mtx_symmetric)
            edges.limit = size[0]
            edges.range_fix = f"row and column indices run from 1 to {size[0]}, the matrix size."
        parsed = text.columns("%", width)
        fits = parsed is not None and seen + parsed[0].size <= size[1]
        if parsed is not None and fits and edges.add_parsed(parsed):
            seen += parsed[0].size
            continue
        block = text.rows("%")
        if seen + block.counts.size > size[1]:
            raise block.fail(
                size[1] - seen,
                f"more entries than the {size[1]} the size line declares",
                "make the size line's third number the entry count.",
            )
        seen += block.counts.size
        edges.add_rows(block, f"{shape} for a {field} matrix", _MTX_FIX)
    if size is None:
        raise ValidationError(
            f"{os.fspath(path)} line {max(last_line, 2)}: the size line 'rows cols entries' "
            "is missing",
            fix="add the size line after the header and comments.",
        )
    if seen != size[1]:
        raise ValidationError(
            f"{os.fspath(path)} line {last_line}: the file ends after {seen} of the "
            f"{size[1]} entries the size line declares",
            fix="make the size line's third number the entry count, or restore the lost lines.",
        )
    return edges.build(size[0], symmetric=symmetric or mtx_symmetric)


def matrix_market_header(
    path: StrPath, *, symmetric: bool = False, quote_lines: bool = True
) -> GraphFileHeader:
    """The header and size line of a Matrix Market file (see :func:`read_graph_header`).

    Raises:
        ValidationError: The file is not a readable regular file, or its header or
            size line is bad.
    """
    field, mtx_symmetric = _mtx_header(path, quote_lines)
    size = None
    for text in read_blocks(path, quote=quote_lines):
        found = text.first_data_line("%")
        if found is not None:
            size = _mtx_size(found[0])
            break
    try:
        file_bytes = os.stat(path).st_size
    except OSError as err:
        raise unreadable(path, err) from err
    if size is None:
        return GraphFileHeader(None, None, None, file_bytes)
    vertices, entries = size
    nbytes = HELD_BYTES_PER_EDGE * entries + estimate_graph_bytes(
        vertices, entries, symmetric=symmetric or mtx_symmetric, weighted=field != "pattern"
    )
    return GraphFileHeader(vertices, entries, nbytes, file_bytes)


def _mtx_header(path: StrPath, quote: bool) -> tuple[str, bool]:
    try:
        with open_regular(path) as file:
            first = file.readline(MAX_LINE_BYTES).decode("utf-8", "replace")
    except OSError as err:
        raise unreadable(path, err) from err
    words = first.lower().split()
    problem = None
    if len(words) != 5 or words[0] != "%%matrixmarket" or words[1] != "matrix":
        problem = "expected the header '%%MatrixMarket matrix coordinate <field> <symmetry>'"
    elif words[2] != "coordinate":
        problem = f"the {_word(words[2], quote)} format is not supported, only 'coordinate'"
    elif words[3] not in ("pattern", "real", "integer"):
        problem = (
            f"the {_word(words[3], quote)} field is not supported, only pattern, real or integer"
        )
    elif words[4] not in ("general", "symmetric"):
        problem = (
            f"the {_word(words[4], quote)} symmetry is not supported, only general or symmetric"
        )
    if problem is not None:
        got = f", got {excerpt(first.strip().encode())!r}" if quote else ""
        raise ValidationError(
            f"{os.fspath(path)} line 1: {problem}{got}",
            fix="start the file with e.g. '%%MatrixMarket matrix coordinate real general'.",
        )
    return words[3], words[4] == "symmetric"


def _word(word: str, quote: bool) -> str:
    return repr(excerpt(word.encode())) if quote else "given"


def _mtx_size(block: RowBlock) -> tuple[int, int]:
    """``(rows, entries)`` from the size line, the block's first data line."""
    fix = "the first line after the comments must be 'rows cols entries', three integers."
    if int(block.counts[0]) != 3:
        raise block.fail(0, "expected the size line 'rows cols entries'", fix)
    head = RowBlock(block.path, block.lines[:1], block.counts[:1], block.tokens[:3], block.quote)
    numbers = head.parse(head.table(3, "", fix)[0], np.int64, "an integer", fix)
    rows, cols, nnz = (int(x) for x in numbers)
    if rows != cols or not 0 <= rows <= INT32_MAX or nnz < 0:
        raise head.fail(0, "a graph needs a square matrix of at most 2**31 - 1 rows", fix)
    return rows, nnz
