"""Graph files: whitespace edge lists, and :func:`load_graph` choosing a loader by suffix.

Text loaders stream the file in blocks (see ``_text``) and report the first problem
as one :class:`ValidationError` naming the file and its 1-based line number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from ._checks import INT32_MAX
from ._columns import EdgeColumns
from ._csr import CsrGraph
from ._mtx import load_matrix_market
from ._npz import load_npz
from ._text import StrPath, read_blocks

GraphFileKind = Literal["edge_list", "matrix_market", "npz"]

_EDGE_FIX = "write one edge per line as 'src dst' or 'src dst weight', ids counting from 0."


def load_edge_list(
    path: StrPath,
    *,
    num_vertices: int | None = None,
    symmetric: bool = False,
    comments: str = "#%",
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

    Returns:
        The graph, weighted when the lines have three fields.

    Raises:
        ValidationError: The file cannot be read, or a line is malformed or names
            an id out of range; the message names the file and line.
    """
    if isinstance(num_vertices, int):
        limit = num_vertices - 1
        range_fix = (
            f"vertex ids must be below num_vertices={num_vertices}; raise it or fix the line."
        )
    else:  # None, or a wrong type that from_edges reports
        limit = INT32_MAX - 1
        range_fix = "vertex ids must be below 2**31 - 1; renumber the vertices densely from 0."
    edges: EdgeColumns | None = None
    for text in read_blocks(path):
        if edges is None:
            found = text.first_data_line(comments)
            if found is None:
                continue
            head = found[0]
            if int(head.counts[0]) not in (2, 3):
                raise head.fail(0, "expected 2 or 3 numbers (src dst [weight])", _EDGE_FIX)
            edges = EdgeColumns(int(head.counts[0]), base=0, limit=limit, range_fix=range_fix)
        parsed = text.columns(comments, edges.width)
        if parsed is not None and edges.add_parsed(parsed):
            continue
        block = text.rows(comments)
        what = "2 numbers (src dst)" if edges.width == 2 else "3 numbers (src dst weight)"
        edges.add_rows(block, f"{what} like the first edge line", _EDGE_FIX)
    if edges is None:
        edges = EdgeColumns(2, base=0, limit=limit, range_fix=range_fix)
    return edges.build(num_vertices, symmetric=symmetric)


def load_graph(path: StrPath, kind: GraphFileKind | None = None) -> CsrGraph:
    """Load a graph file, choosing the format by ``kind`` or else by the file's suffix.

    Args:
        path: The file: ``.mtx`` is Matrix Market, ``.npz`` an archive from
            :func:`save_npz`, anything else a whitespace edge list.
        kind: ``"edge_list"``, ``"matrix_market"`` or ``"npz"`` to override the suffix.

    Returns:
        The graph.

    Raises:
        ValueError: ``kind`` is not one of the three.
        ValidationError: The file is malformed (see the loader for its format).
    """
    if kind is None:
        suffix = Path(path).suffix.lower()
        kind = "matrix_market" if suffix == ".mtx" else "npz" if suffix == ".npz" else "edge_list"
    if kind == "matrix_market":
        return load_matrix_market(path)
    if kind == "npz":
        return load_npz(path)
    if kind == "edge_list":
        return load_edge_list(path)
    raise ValueError(f"unknown graph file kind {kind!r}; expected edge_list, matrix_market or npz")
