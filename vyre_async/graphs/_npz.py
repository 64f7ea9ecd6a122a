"""``.npz`` archives of a :class:`CsrGraph`: the arrays as written, no pickle either way."""

from __future__ import annotations

import math
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._files import open_regular, replace_atomically
from .._memory import check_host_memory
from ..errors import ValidationError
from ._csr import CsrGraph
from ._header import GraphFileHeader
from ._text import StrPath, excerpt, unreadable

_REQUIRED = frozenset({"offsets", "indices"})
_KNOWN = _REQUIRED | {"weights", "symmetric"}
_SCIPY_KEYS = frozenset({"indptr", "indices", "data", "format", "shape"})
_FIX = "write the file with vyre_async.graphs.save_npz(graph, path)."


def save_npz(graph: CsrGraph, path: StrPath) -> Path:
    """Write ``graph`` to ``path`` as an uncompressed ``.npz`` archive, atomically.

    The archive holds ``offsets``, ``indices``, ``weights`` (when weighted) and a
    0-d bool ``symmetric``. It is written to a temporary file beside ``path``, synced
    and renamed, so a reader never sees half a file. The name is used as given (no
    ``.npz`` is appended).

    Args:
        graph: The graph.
        path: Destination file; its folder is made if missing.

    Returns:
        The path written.
    """
    target = Path(path)
    arrays: dict[str, npt.NDArray[Any]] = {"offsets": graph.offsets, "indices": graph.indices}
    if graph.weights is not None:
        arrays["weights"] = graph.weights
    arrays["symmetric"] = np.array(graph.symmetric)
    replace_atomically(target, lambda file: np.savez(file, allow_pickle=False, **arrays))
    return target


def load_npz(
    path: StrPath, *, memory_limit: int | None = None, quote_lines: bool = True
) -> CsrGraph:
    """Read a graph written by :func:`save_npz` (never unpickling anything).

    Every array's ``.npy`` header is read first: an archive whose headers declare
    more data than its members hold, or a graph needing more than ``memory_limit``,
    is refused before any array is read.

    Args:
        path: The ``.npz`` file.
        memory_limit: Host bytes the graph may need; default: what the machine has.
        quote_lines: Whether an error may quote the file's first bytes.

    Returns:
        The graph, validated as on construction.

    Raises:
        ValidationError: The file is not such an archive, lacks an array, declares
            more than it holds or more than ``memory_limit``, or its arrays break
            the CSR rules; the message names the file.
    """
    name = os.fspath(path)
    header = npz_header(path, quote_lines=quote_lines)
    check_host_memory(
        header.nbytes or 0,
        f"{name}: a graph of {header.num_vertices:,} vertices and {header.num_edges:,} edges",
        fix="load a smaller graph, or run on a machine with more memory.",
        limit=memory_limit,
    )
    arrays = _read_arrays(path, quote_lines)
    symmetric = arrays.pop("symmetric", np.array(False))
    if symmetric.shape != () or symmetric.dtype != np.bool_:
        raise ValidationError(
            f"{name}: 'symmetric' is {symmetric.dtype} of shape {symmetric.shape}, "
            "expected a 0-d bool",
            fix=_FIX,
        )
    try:
        return CsrGraph(
            arrays["offsets"], arrays["indices"], arrays.get("weights"), symmetric=bool(symmetric)
        )
    except ValidationError as err:
        raise ValidationError(f"{name}: {err.what}", fix=err.fix) from err


def npz_header(path: StrPath, *, quote_lines: bool = True) -> GraphFileHeader:
    """The array headers of a graph archive (see :func:`read_graph_header`).

    Raises:
        ValidationError: Not a readable regular file, not a graph archive, an array
            header that is bad or declares more data than its member holds.
    """
    name = os.fspath(path)
    try:
        with open_regular(path) as file:
            file_bytes = os.fstat(file.fileno()).st_size
            head = file.read(4)
            if not head.startswith(b"PK"):  # every zip archive, so every .npz, starts so
                shown = f": it starts with {head!r}, not a zip header" if quote_lines else ""
                raise ValidationError(f"{name} is not a .npz archive{shown}", fix=_FIX)
            file.seek(0)
            with zipfile.ZipFile(file) as archive:
                members = archive.namelist()
                odd = next((m for m in members if not m.endswith(".npy")), None)
                if odd is not None:
                    shown = f" {excerpt(odd.encode())!r}," if quote_lines else ""
                    raise ValidationError(
                        f"{name} holds a member{shown} that is not a .npy array", fix=_FIX
                    )
                _check_keys(name, {m.removesuffix(".npy") for m in members}, quote_lines)
                shapes = {
                    m.removesuffix(".npy"): member_header(name, archive, archive.getinfo(m))
                    for m in members
                }
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        if isinstance(err, OSError) and not isinstance(err, zipfile.BadZipFile):
            raise unreadable(path, err) from err
        detail = f": {err}" if quote_lines else ""
        raise ValidationError(f"{name} is not a readable .npz archive{detail}", fix=_FIX) from err
    num_vertices = max(_count(shapes["offsets"][0]) - 1, 0)
    num_edges = _count(shapes["indices"][0])
    declared = sum(_count(shape) * itemsize for shape, itemsize in shapes.values())
    # The arrays, then validation's temporaries (about as much again).
    nbytes = 2 * declared + 8 * num_vertices
    return GraphFileHeader(num_vertices, num_edges, nbytes, file_bytes)


def member_header(
    name: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo, fix: str = _FIX
) -> tuple[tuple[int, ...], int]:
    """``(shape, itemsize)`` from a member's ``.npy`` header, checked against the size the
    archive declares for the member (read from the member's first bytes only).

    Raises:
        ValidationError: Not a ``.npy`` member, one of Python objects, or one whose
            header and declared size disagree (``fix`` is the error's fix).
        ValueError: The header is malformed.
    """
    if not info.filename.endswith(".npy"):
        raise ValidationError(f"{name} holds {info.filename!r}, which is not a .npy array", fix=fix)
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise ValueError(f"{info.filename}: .npy format version {version} is not supported")
        header_bytes = member.tell()
    if dtype.hasobject:
        raise ValidationError(
            f"{name}: {info.filename} holds Python objects, which are never unpickled", fix=fix
        )
    data_bytes = _count(shape) * dtype.itemsize
    if header_bytes + data_bytes != info.file_size:
        raise ValidationError(
            f"{name}: the header of {info.filename} declares {_count(shape):,} items "
            f"({data_bytes:,} bytes) but the member holds {info.file_size - header_bytes:,} "
            "bytes of data",
            fix=fix,
        )
    return shape, dtype.itemsize


def _count(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def _check_keys(name: str, keys: set[str], quote: bool) -> None:
    if keys >= _SCIPY_KEYS:
        raise ValidationError(
            f"{name} is a scipy.sparse.save_npz file, not a graph archive",
            fix="load it with scipy.sparse.load_npz and pass its indptr and indices "
            "to CsrGraph, or convert it once with save_npz.",
        )
    missing, unknown = _REQUIRED - keys, keys - _KNOWN
    if missing or unknown:
        show = (
            (lambda names: str([excerpt(k.encode()) for k in sorted(names)[:8]])) if quote else len
        )
        problems = [f"missing {sorted(missing)}"] if missing else []
        if unknown:
            problems.append(f"unexpected {show(unknown)}")
        raise ValidationError(f"{name} has arrays {show(keys)}; {', '.join(problems)}", fix=_FIX)


def _read_arrays(path: StrPath, quote: bool) -> dict[str, npt.NDArray[Any]]:
    """The archive's arrays (their headers were checked by :func:`npz_header`)."""
    name = os.fspath(path)
    try:
        with open_regular(path) as file, np.load(file, allow_pickle=False) as archive:
            if isinstance(archive, np.lib.npyio.NpzFile):
                return {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        detail = f": {err}" if quote else ""
        raise ValidationError(f"{name} is not a readable .npz archive{detail}", fix=_FIX) from err
    raise ValidationError(f"{name} holds a single .npy array, not a graph archive", fix=_FIX)
