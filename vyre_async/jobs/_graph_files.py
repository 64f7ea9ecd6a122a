"""Files a job names beside its own: SciPy ``.npz`` matrices, edge tables, source lists.

Every problem is one :class:`ConfigurationError` naming the job file, the path inside
it (``$.graph.path``, ``$.workload[0].sources``) and the file read.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ConfigurationError, ValidationError
from ..graphs import CsrGraph
from ._spec import GraphSection

#: Edge-table formats by suffix, each read by pyarrow.
TABLE_SUFFIXES = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".feather": "feather",
    ".arrow": "feather",
    ".ipc": "feather",
    ".csv": "csv",
}


def load_scipy_npz_graph(path: Path, graph: GraphSection, where: str) -> CsrGraph:
    """The graph of a ``scipy.sparse.save_npz`` adjacency matrix (blocking).

    Raises:
        ConfigurationError: SciPy is missing, or the file is not such a matrix.
        ValidationError: The matrix is no graph (from :meth:`CsrGraph.from_scipy`).
    """
    sparse: Any = _module("scipy.sparse", "scipy", where)
    try:
        matrix = sparse.load_npz(path)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigurationError(
            f"{where}.path: {path} is not a scipy.sparse.save_npz file ({exc})",
            fix="write it with scipy.sparse.save_npz(path, matrix), or use kind = 'npz' "
            "for files from vyre_async.graphs.save_npz.",
        ) from None
    return CsrGraph.from_scipy(matrix, symmetric=graph.symmetric)


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


def read_sources_file(path: Path, where: str) -> npt.NDArray[np.int64]:
    """The vertex ids in a ``.npy`` file (1-D, integer) or a text file (blocking).

    A text file holds integers separated by whitespace; ``#`` starts a comment.

    Raises:
        ConfigurationError: The file cannot be read, is empty, holds something other
            than non-negative integer ids (the first offender is named: its index, and
            its line for text), or an id beyond int64.
    """
    read = _read_npy if path.suffix.lower() == ".npy" else _read_text
    ids = read(path, where)
    if ids.size == 0:
        raise ConfigurationError(
            f"{where}: {path} lists no sources",
            fix="put at least one vertex id in the file, or drop the workload.",
        )
    if int(ids.min()) < 0:
        i = int(np.argmax(ids < 0))
        raise ConfigurationError(
            f"{where}: {path}: entry {i} is {int(ids[i])}, a negative vertex id",
            fix="vertex ids count from 0.",
        )
    return ids


def _read_npy(path: Path, where: str) -> npt.NDArray[np.int64]:
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise ConfigurationError(
            f"{where}: {path} cannot be read as a .npy array ({exc})",
            fix="write it with np.save(path, np.asarray(sources, dtype=np.int64)).",
        ) from None
    if not isinstance(array, np.ndarray) or array.ndim != 1 or array.dtype.kind not in "iu":
        shape = getattr(array, "shape", None)
        dtype = getattr(array, "dtype", type(array).__name__)
        raise ConfigurationError(
            f"{where}: {path} holds an array of shape {shape} and dtype {dtype}; sources "
            "are a 1-D integer array",
            fix="save a flat integer array: np.save(path, sources.ravel().astype(np.int64)).",
        )
    if array.dtype == np.uint64 and array.size and int(array.max()) > np.iinfo(np.int64).max:
        i = int(np.argmax(array > np.iinfo(np.int64).max))
        raise ConfigurationError(
            f"{where}: {path}: entry {i} is {int(array[i])}, beyond any vertex id",
            fix="list vertex ids of the graph (below its vertex count).",
        )
    return array.astype(np.int64)


def _read_text(path: Path, where: str) -> npt.NDArray[np.int64]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(
            f"{where}: {path} cannot be read ({exc})",
            fix="check the path; it is relative to the job file's folder.",
        ) from None
    tokens: list[str] = []
    starts: list[int] = []  # index of each line's first token, to name a bad one's line
    for line in lines:
        starts.append(len(tokens))
        tokens.extend(line.partition("#")[0].split())
    try:
        return np.array(tokens, dtype=np.int64) if tokens else np.empty(0, np.int64)
    except (ValueError, OverflowError):
        pass
    parsed = np.empty(len(tokens), dtype=np.int64)
    for i, token in enumerate(tokens):  # the careful pass: which token, on which line
        try:
            parsed[i] = int(token)
        except (ValueError, OverflowError):
            number = int(np.searchsorted(starts, i, side="right"))
            raise ConfigurationError(
                f"{where}: {path} line {number}: {token!r} is not an integer vertex id",
                fix="write vertex ids as integers separated by spaces or newlines; "
                "'#' starts a comment.",
            ) from None
    return parsed


def _module(name: str, package: str, where: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigurationError(
            f"{where}.kind: reading this graph needs {package}, which cannot be imported ({exc})",
            fix=f"install it: pip install {package}",
        ) from exc
