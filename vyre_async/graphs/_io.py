"""Graph files: whitespace edge lists, and :func:`load_graph` choosing a loader by suffix.

Text loaders stream the file in blocks (see ``_text``) and report the first problem
as one :class:`ValidationError` naming the file and its 1-based line number.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from .._files import open_regular
from ._checks import INT32_MAX
from ._columns import HELD_BYTES_PER_EDGE, EdgeColumns, estimate_graph_bytes
from ._csr import CsrGraph
from ._header import GraphFileHeader
from ._mtx import load_matrix_market, matrix_market_header
from ._npz import load_npz, npz_header
from ._scipy_npz import load_scipy_npz, scipy_npz_header
from ._text import StrPath, read_blocks, unreadable

GraphFileKind = Literal["edge_list", "matrix_market", "npz", "scipy_npz"]

_EDGE_FIX = "write one edge per line as 'src dst' or 'src dst weight', ids counting from 0."


def load_edge_list(
    path: StrPath,
    *,
    num_vertices: int | None = None,
    symmetric: bool = False,
    comments: str = "#%",
    memory_limit: int | None = None,
    quote_lines: bool = True,
) -> CsrGraph:
    """Load a text file of ``src dst [weight]`` lines, vertex ids counting from 0.

    Blank lines and lines whose first non-blank character is in ``comments`` are
    skipped. Either every edge line has a weight or none has. Duplicate edges keep
    their first weight.

    Args:
        path: The file.
        num_vertices: Vertex count; defaults to the largest id plus one.
        symmetric: Add every edge reversed (an undirected graph).
        comments: Characters that start a comment line.
        memory_limit: Host bytes the graph may need (estimated as edges are read and
            before it is built); default: what the machine has.
        quote_lines: Whether an error quotes a short excerpt of the bad line; pass
            ``False`` for files whose contents must not appear in messages.

    Returns:
        The graph, weighted when the lines have three fields.

    Raises:
        ValidationError: The file is not a readable regular file, a line is
            malformed, too long or names an id out of range (the message names the
            file and line), or the graph would need more than ``memory_limit``.
    """
    if isinstance(num_vertices, int):
        limit = num_vertices - 1
        range_fix = (
            f"vertex ids must be below num_vertices={num_vertices}; raise it or fix the line."
        )
    else:  # None, or a wrong type that from_edges reports
        limit = INT32_MAX - 1
        range_fix = "vertex ids must be below 2**31 - 1; renumber the vertices densely from 0."
    edges = EdgeColumns(
        2,
        base=0,
        limit=limit,
        range_fix=range_fix,
        source=os.fspath(path),
        memory_limit=memory_limit,
    )
    _read_edge_lines(path, comments, quote_lines, edges)
    return edges.build(num_vertices, symmetric=symmetric)


class _EdgeCounter(EdgeColumns):
    """Counts edges and finds the largest id, keeping none of them (for the header)."""

    largest = -1

    def _keep(self, src: Any, dst: Any, weights: Any | None) -> None:
        self.edges += int(src.size)
        if src.size:
            self.largest = max(self.largest, int(src.max()), int(dst.max()))


def _read_edge_lines(path: StrPath, comments: str, quote: bool, edges: EdgeColumns) -> None:
    """Feed every edge line of ``path`` to ``edges`` (its width set by the first line).

    Raises:
        ValidationError: A malformed line; the message names it.
    """
    width = 0
    for text in read_blocks(path, quote=quote):
        if not width:
            found = text.first_data_line(comments)
            if found is None:
                continue
            head = found[0]
            if int(head.counts[0]) not in (2, 3):
                raise head.fail(0, "expected 2 or 3 numbers (src dst [weight])", _EDGE_FIX)
            width = edges.width = int(head.counts[0])
        parsed = text.columns(comments, width)
        if parsed is not None and edges.add_parsed(parsed):
            continue
        block = text.rows(comments)
        what = "2 numbers (src dst)" if width == 2 else "3 numbers (src dst weight)"
        edges.add_rows(block, f"{what} like the first edge line", _EDGE_FIX)


def load_graph(
    path: StrPath,
    kind: GraphFileKind | None = None,
    *,
    memory_limit: int | None = None,
    quote_lines: bool = True,
) -> CsrGraph:
    """Load a graph file, choosing the format by ``kind`` or else by the file's suffix.

    Args:
        path: The file: ``.mtx`` is Matrix Market, ``.npz`` an archive from
            :func:`save_npz`, anything else a whitespace edge list.
        kind: ``"edge_list"``, ``"matrix_market"``, ``"npz"`` or ``"scipy_npz"`` (a
            ``scipy.sparse.save_npz`` adjacency matrix; needs SciPy) to override the
            suffix.
        memory_limit: Host bytes the graph may need; default: what the machine has.
        quote_lines: Whether errors may quote a short excerpt of the file.

    Returns:
        The graph.

    Raises:
        ValueError: ``kind`` is not one of the four.
        ValidationError: The file is malformed (see the loader for its format), not
            a regular file, or its graph would need more than ``memory_limit``.
    """
    kind = _file_kind(path, kind)
    if kind == "matrix_market":
        return load_matrix_market(path, memory_limit=memory_limit, quote_lines=quote_lines)
    if kind == "npz":
        return load_npz(path, memory_limit=memory_limit, quote_lines=quote_lines)
    if kind == "scipy_npz":
        return load_scipy_npz(path, memory_limit=memory_limit, quote_lines=quote_lines)
    return load_edge_list(path, memory_limit=memory_limit, quote_lines=quote_lines)


def read_graph_header(
    path: StrPath,
    kind: GraphFileKind | None = None,
    *,
    symmetric: bool = False,
    scan_edge_list: bool = False,
    quote_lines: bool = True,
) -> GraphFileHeader:
    """What a graph file's header says, without loading the graph.

    A Matrix Market file's size line gives the vertex and entry counts, a ``.npz``
    archive's array headers (and a SciPy one's shape) give the vertex and edge counts,
    checked against the sizes the archive declares. An edge list has no
    header: only its byte size is known, unless ``scan_edge_list`` reads it through
    (in bounded memory, keeping no edge) for its counts. The file must be a regular
    file.

    Args:
        path: The file.
        kind: As for :func:`load_graph`.
        symmetric: Estimate the memory for the graph loaded with ``symmetric=True``.
        scan_edge_list: Read an edge list through for its vertex and edge counts
            (malformed lines are reported as loading would).
        quote_lines: Whether errors may quote a short excerpt of the file.

    Returns:
        The header's numbers and the host memory loading the graph needs.

    Raises:
        ValueError: ``kind`` is not one of the four.
        ValidationError: The file is not a readable regular file or its header is bad.
    """
    kind = _file_kind(path, kind)
    if kind == "matrix_market":
        return matrix_market_header(path, symmetric=symmetric, quote_lines=quote_lines)
    if kind == "npz":
        return npz_header(path, quote_lines=quote_lines)
    if kind == "scipy_npz":
        return scipy_npz_header(path, symmetric=symmetric, quote_lines=quote_lines)
    try:
        with open_regular(path) as file:
            size = os.fstat(file.fileno()).st_size
    except OSError as err:
        raise unreadable(path, err) from err
    if not scan_edge_list:
        return GraphFileHeader(num_vertices=None, num_edges=None, nbytes=None, file_bytes=size)
    fix = "vertex ids must be below 2**31 - 1; renumber the vertices densely from 0."
    counter = _EdgeCounter(2, base=0, limit=INT32_MAX - 1, range_fix=fix, source=os.fspath(path))
    _read_edge_lines(path, "#%", quote_lines, counter)
    vertices = counter.largest + 1
    nbytes = HELD_BYTES_PER_EDGE * counter.edges + estimate_graph_bytes(
        vertices, counter.edges, symmetric=symmetric, weighted=counter.width == 3
    )
    return GraphFileHeader(vertices, counter.edges, nbytes, size)


def _file_kind(path: StrPath, kind: GraphFileKind | None) -> GraphFileKind:
    if kind is None:
        suffix = Path(path).suffix.lower()
        return "matrix_market" if suffix == ".mtx" else "npz" if suffix == ".npz" else "edge_list"
    if kind not in ("edge_list", "matrix_market", "npz", "scipy_npz"):
        raise ValueError(
            f"unknown graph file kind {kind!r}; expected edge_list, matrix_market, npz or scipy_npz"
        )
    return kind
