"""Files a job names beside its own: SciPy ``.npz`` matrices and edge tables.

Every problem is one :class:`ConfigurationError` naming the job file, the path inside
it (``$.graph.path``) and the file read.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from ...errors import ConfigurationError, ValidationError
from ...graphs import CsrGraph, load_scipy_npz
from ..spec import GraphSection

#: Edge-table formats by suffix, each read by pyarrow.
TABLE_SUFFIXES = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".feather": "feather",
    ".arrow": "feather",
    ".ipc": "feather",
    ".csv": "csv",
}


def load_scipy_npz_graph(
    path: Path,
    graph: GraphSection,
    where: str,
    *,
    memory_limit: int | None = None,
    quote_lines: bool = True,
) -> CsrGraph:
    """The graph of a ``scipy.sparse.save_npz`` adjacency matrix (blocking).

    The archive's declared sizes are checked, and the graph's memory against
    ``memory_limit``, before any array is inflated (see :func:`load_scipy_npz`).

    Raises:
        ConfigurationError: SciPy is missing, the file is not such a matrix, its
            graph would need more than ``memory_limit``, or the matrix is no graph.
    """
    _module("scipy.sparse", "scipy", where)
    try:
        return load_scipy_npz(
            path, symmetric=graph.symmetric, memory_limit=memory_limit, quote_lines=quote_lines
        )
    except ValidationError as exc:
        raise ConfigurationError(f"{where}.path: {exc.what}", fix=exc.fix) from None


def load_table_graph(path: Path, graph: GraphSection, where: str) -> CsrGraph:
    """The graph of a Parquet, Feather/Arrow IPC or CSV edge table (blocking).

    Ids must be integers counting from 0 (the job's sources name them); the weight
    column, when named, becomes float32 weights.

    Raises:
        ConfigurationError: pyarrow is missing, the suffix is unknown, the file cannot
            be read, a column is absent, or an id column does not hold vertex ids.
    """
    kind = TABLE_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ConfigurationError(
            f"{where}.path: {path.name} has suffix {path.suffix or '(none)'!r}; an edge "
            f"table is one of {', '.join(sorted(TABLE_SUFFIXES))}",
            fix="name the file by its format (.parquet, .feather or .csv).",
        )
    pyarrow: Any = _module(f"pyarrow.{kind}", "pyarrow", where)
    names = [graph.src_column, graph.dst_column]
    if graph.weight_column is not None:
        names.append(graph.weight_column)
    try:
        if kind == "csv":
            options = pyarrow.ConvertOptions(include_columns=names)
            table = pyarrow.read_csv(path, convert_options=options)
        else:
            table = pyarrow.read_table(path, columns=names)
    except (OSError, ValueError, KeyError) as exc:  # pyarrow.ArrowInvalid is a ValueError
        raise ConfigurationError(
            f"{where}.path: {path} cannot be read as a {kind} table with columns "
            f"{', '.join(names)} ({exc})",
            fix="check the file, and that it has the columns that $.graph.src_column, "
            "dst_column and weight_column name.",
        ) from None
    weights = table[graph.weight_column] if graph.weight_column is not None else None
    try:
        return CsrGraph.from_edges(
            table[graph.src_column],
            table[graph.dst_column],
            symmetric=graph.symmetric,
            weights=weights,
        )
    except ValidationError as exc:
        raise ConfigurationError(
            f"{where}.path: {path}: {exc.what}",
            fix="in a job file, table ids must be integers from 0 (the sources name them); "
            "renumber other ids first with CsrGraph.from_edges(..., renumber=True), write "
            "the graph with vyre_async.graphs.save_npz and use kind = 'npz'.",
        ) from None


def _module(name: str, package: str, where: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigurationError(
            f"{where}.kind: reading this graph needs {package}, which cannot be imported ({exc})",
            fix=f"install it: pip install {package}",
        ) from exc
