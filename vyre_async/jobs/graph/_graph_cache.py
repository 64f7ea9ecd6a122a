"""Generated R-MAT graphs kept on disk, so a job generates each graph once per machine.

Each entry is an uncompressed ``.npz`` under ``$VYRE_ASYNC_GRAPH_CACHE_DIR``, else
``<cache root>/graphs`` (the kernel cache's root: ``$VYRE_ASYNC_CACHE_DIR``, else the
XDG cache folder), named by the graph's parameters and the generator's version. It
holds ``offsets``, ``indices``, a 0-d ``symmetric``, the parameters as JSON bytes and a
SHA-256 tree over the arrays. A reader checks all of them; any mismatch (a torn copy, a
flipped bit, another generator version) logs a warning and counts as a miss, and the
fresh graph replaces the entry. Writes go to a temporary file beside the entry, are
synced and renamed, so readers see the old entry or the whole new one.

The cache is an optimisation only: failing to read or write it never fails a job.
"""

from __future__ import annotations

import hashlib
import math
import os
import struct
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from io import BufferedReader
from pathlib import Path
from typing import BinaryIO

import msgspec
import numpy as np

from ..._files import replace_atomically
from ...graphs import CsrGraph, RmatParams, trusted_csr
from ...kernels import cache_root
from ...logging import get_logger

_log = get_logger("vyre_async.jobs")

#: Bytes hashed per leaf of the checksum tree (leaves are hashed in parallel).
_LEAF_BYTES = 64 << 20
_MEMBERS = frozenset({"offsets", "indices", "symmetric", "params", "checksum"})


def graph_cache_dir() -> Path:
    """Where cached graphs live: ``$VYRE_ASYNC_GRAPH_CACHE_DIR``, else ``<cache root>/graphs``.

    Read on every call, so callers can move it (a graph of scale 22 takes ~0.5 GB).
    """
    explicit = os.environ.get("VYRE_ASYNC_GRAPH_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return cache_root() / "graphs"


def rmat_cache_path(params: RmatParams) -> Path:
    """The entry that holds (or would hold) the symmetric, deduplicated graph of ``params``."""
    digest = hashlib.sha256(_identity(params)).hexdigest()[:16]
    name = (
        f"rmat-s{params.scale}-e{params.edge_factor}-seed{params.seed}"
        f"-v{RmatParams.generator_version}-{digest}.npz"
    )
    return graph_cache_dir() / name


def load_cached_rmat(params: RmatParams) -> CsrGraph | None:
    """The cached graph of ``params``, or ``None`` when absent or damaged (blocking)."""
    path = rmat_cache_path(params)
    try:
        arrays = _read(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        _report_damaged(path, f"unreadable: {exc}")
        return None
    problem = _check(arrays, params)
    if problem is not None:
        _report_damaged(path, problem)
        return None
    return trusted_csr(arrays["offsets"], arrays["indices"], symmetric=True)


def save_cached_rmat(params: RmatParams, graph: CsrGraph) -> Path | None:
    """Store ``graph`` as the entry of ``params``, atomically (blocking).

    Returns:
        The entry's path, or ``None`` when it could not be written (logged).
    """
    path = rmat_cache_path(params)

    def write(file: BinaryIO) -> None:
        np.savez(
            file,
            allow_pickle=False,
            offsets=graph.offsets,
            indices=graph.indices,
            symmetric=np.array(graph.symmetric),
            params=np.frombuffer(_identity(params), dtype=np.uint8),
            checksum=np.frombuffer(_checksum(graph.offsets, graph.indices), dtype=np.uint8),
        )

    try:
        replace_atomically(path, write)
    except OSError as exc:
        _log.warning(
            "graph_cache_write_failed",
            path=str(path),
            error=str(exc),
            fix="set VYRE_ASYNC_CACHE_DIR to a writable folder with room for the graph",
        )
        return None
    return path


def _identity(params: RmatParams) -> bytes:
    """What the entry depends on, as canonical JSON bytes."""
    return msgspec.json.encode(
        {
            "generator": RmatParams.generator_version,
            "scale": params.scale,
            "edge_factor": params.edge_factor,
            "seed": params.seed,
            "a": params.a,
            "b": params.b,
            "c": params.c,
            "symmetric": True,
            "dedupe": True,
            "permute": True,
        }
    )


def _read(path: Path) -> dict[str, np.ndarray]:
    """The entry's arrays, each read straight into its own memory.

    ``np.load`` copies a member through the zip module in small reads (about 1 GB/s,
    a third of a second for a scale-22 graph on the start-up's critical path); the
    members are stored uncompressed, so each is read with one ``readinto`` from its
    place in the file instead. The checksum is checked afterwards all the same.
    """
    with open(path, "rb") as file:
        if file.read(4) != b"PK\x03\x04":
            raise ValueError("not a zip archive")
        file.seek(0)
        with zipfile.ZipFile(file) as archive:
            members = archive.infolist()
        return {info.filename.removesuffix(".npy"): _read_member(file, info) for info in members}


def _read_member(file: BufferedReader, info: zipfile.ZipInfo) -> np.ndarray:
    """One stored ``.npy`` member of an archive, read in place (bounded by its size)."""
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"member {info.filename!r} is compressed")
    file.seek(info.header_offset)
    local = file.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise ValueError(f"member {info.filename!r} has no local header")
    name_bytes, extra_bytes = struct.unpack("<HH", local[26:30])
    start = info.header_offset + 30 + name_bytes + extra_bytes
    file.seek(start)
    version = np.lib.format.read_magic(file)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(file)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(file)
    if dtype.hasobject:
        raise ValueError(f"member {info.filename!r} holds Python objects")
    count = math.prod(shape)  # exact: NumPy's product could wrap around
    if file.tell() - start + count * dtype.itemsize != info.file_size:
        raise ValueError(f"member {info.filename!r}: its header does not match its size")
    array = np.empty(shape, dtype, order="F" if fortran else "C")
    data = array.reshape(-1, order="A").view(np.uint8).data
    if file.readinto(data) != array.nbytes:
        raise EOFError(f"member {info.filename!r} is cut short")
    return array


def _check(arrays: dict[str, np.ndarray], params: RmatParams) -> str | None:
    """What is wrong with an entry's arrays, or ``None``."""
    if set(arrays) != _MEMBERS:
        return f"arrays {sorted(arrays)}, expected {sorted(_MEMBERS)}"
    if arrays["params"].tobytes() != _identity(params):
        return "written for other parameters or another generator version"
    offsets, indices = arrays["offsets"], arrays["indices"]
    if offsets.dtype not in (np.int32, np.int64) or offsets.shape != (params.num_vertices + 1,):
        return f"offsets are {offsets.dtype}{offsets.shape}, expected {params.num_vertices + 1}"
    if indices.dtype != np.int32 or indices.ndim != 1 or indices.size != int(offsets[-1]):
        return f"indices are {indices.dtype}{indices.shape}, offsets end at {int(offsets[-1])}"
    if arrays["symmetric"].shape != () or not bool(arrays["symmetric"]):
        return "not marked symmetric"
    if arrays["checksum"].tobytes() != _checksum(offsets, indices):
        return "SHA-256 of the arrays does not match the stored checksum"
    return None


def _checksum(*arrays: np.ndarray) -> bytes:
    """SHA-256 over the arrays' dtypes and lengths and the SHA-256 of each 64 MiB leaf of
    their bytes (leaves are hashed in parallel: hashlib releases the GIL)."""
    shapes = "".join(f"{a.dtype.str}:{a.size};" for a in arrays).encode()
    leaves = [leaf for array in arrays for leaf in _leaves(array)]
    with ThreadPoolExecutor(max_workers=max(1, min(os.cpu_count() or 1, 8))) as pool:
        digests = list(pool.map(lambda leaf: hashlib.sha256(leaf).digest(), leaves))
    return hashlib.sha256(shapes + b"".join(digests)).digest()


def _leaves(array: np.ndarray) -> Iterator[memoryview]:
    data = np.ascontiguousarray(array).data.cast("B")
    for start in range(0, len(data), _LEAF_BYTES):
        yield data[start : start + _LEAF_BYTES]


def _report_damaged(path: Path, reason: str) -> None:
    _log.warning("graph_cache_damaged", path=str(path), reason=reason, action="regenerating")
