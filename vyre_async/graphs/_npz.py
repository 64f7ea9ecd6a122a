"""``.npz`` archives of a :class:`CsrGraph`: the arrays as written, no pickle either way."""

from __future__ import annotations

import contextlib
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from ._csr import CsrGraph
from ._text import StrPath

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
        path: Destination file; its directory must exist.

    Returns:
        The path written.
    """
    target = Path(path)
    arrays: dict[str, npt.NDArray[Any]] = {"offsets": graph.offsets, "indices": graph.indices}
    if graph.weights is not None:
        arrays["weights"] = graph.weights
    arrays["symmetric"] = np.array(graph.symmetric)
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            np.savez(file, allow_pickle=False, **arrays)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return target


def load_npz(path: StrPath) -> CsrGraph:
    """Read a graph written by :func:`save_npz` (never unpickling anything).

    Args:
        path: The ``.npz`` file.

    Returns:
        The graph, validated as on construction.

    Raises:
        ValidationError: The file is not such an archive, lacks an array, or its
            arrays break the CSR rules; the message names the file.
    """
    name = os.fspath(path)
    arrays = _read_arrays(path)
    keys = set(arrays)
    if keys >= _SCIPY_KEYS:
        raise ValidationError(
            f"{name} is a scipy.sparse.save_npz file, not a graph archive",
            fix="load it with scipy.sparse.load_npz and pass its indptr and indices "
            "to CsrGraph, or convert it once with save_npz.",
        )
    missing, unknown = _REQUIRED - keys, keys - _KNOWN
    if missing or unknown:
        raise ValidationError(
            f"{name} has arrays {sorted(keys)}; missing {sorted(missing)}, "
            f"unexpected {sorted(unknown)}",
            fix=_FIX,
        )
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


def _read_arrays(path: StrPath) -> dict[str, npt.NDArray[Any]]:
    name = os.fspath(path)
    try:
        with open(path, "rb") as file:
            head = file.read(4)
        if not head.startswith(b"PK"):  # every zip archive, so every .npz, starts so
            raise ValidationError(
                f"{name} is not a .npz archive: it starts with {head!r}, not a zip header",
                fix=_FIX,
            )
        with np.load(path, allow_pickle=False) as archive:
            if isinstance(archive, np.lib.npyio.NpzFile):
                return {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise ValidationError(f"{name} is not a readable .npz archive: {err}", fix=_FIX) from err
    raise ValidationError(f"{name} holds a single .npy array, not a graph archive", fix=_FIX)
