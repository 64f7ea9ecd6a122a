"""Sources files: the vertex ids a workload names by path, in a ``.npy`` or a text file.

:func:`resolve_sources` reads each such file into its workload's list when the job
is loaded, so everything after loading sees the ids.

They are read with the care graph files get. Only a regular file is opened: a FIFO,
a device (``/dev/zero``), a directory or a symlink loop is refused at once, never
waited on or read for ever. A ``.npy`` file's header is checked (1-D, integer, at most
``[limits] max_sources_per_file`` items, exactly as many bytes as it declares) before
anything is allocated. A text file may hold at most :data:`BYTES_PER_SOURCE` bytes per
source allowed, is read in blocks of whole lines, none longer than
:data:`MAX_LINE_BYTES`, and reading stops at the first id past the limit. Errors
quote a file's text only when the file lies inside the job file's folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import numpy as np
import numpy.typing as npt

from ..._files import open_regular
from ...errors import ConfigurationError
from ._spec import JobSpec

#: Bytes a text sources file may hold per source allowed (an id, a separator, room
#: for comments): 64 MB at the default of a million sources.
BYTES_PER_SOURCE = 64
#: Longest line of a text sources file (about 100,000 ids on one line).
MAX_LINE_BYTES = 1 << 20
#: Bytes read per block of a text file (its tokens take about 20 times as much).
_BLOCK = 1 << 20
#: Characters of a bad token an error quotes.
_QUOTE_CHARS = 40
_NO_IDS = np.empty(0, np.int64)
_NPY_FIX = "write it with np.save(path, np.asarray(sources, dtype=np.int64))."
_TEXT_FIX = "write vertex ids as integers separated by spaces or newlines; '#' starts a comment."


def resolve_sources(spec: JobSpec, job_file: Path) -> JobSpec:
    """The spec with every workload's sources file read into a list (blocking).

    A workload whose ``sources`` is a path (relative to the job file) gets the ids in
    that ``.npy`` or text file; other workloads are kept as they are, and a spec with
    no such path is returned unchanged.

    Raises:
        ConfigurationError: A sources file cannot be read, holds more ids than
            ``[limits] max_sources_per_file`` or something other than vertex ids (see
            :func:`read_sources_file`).
    """
    if not any(isinstance(w.sources, str) for w in spec.workload):
        return spec
    workloads = list(spec.workload)
    folder = job_file.parent
    for i, workload in enumerate(workloads):
        if isinstance(workload.sources, str):
            where = f"{job_file}: $.workload[{i}].sources"
            path = folder / workload.sources
            ids = read_sources_file(
                path, where, spec.limits.max_sources_per_file, quote=_inside(path, folder)
            )
            changed: Any = msgspec.structs.replace(workload, sources=ids.tolist())  # type: ignore[type-var]
            workloads[i] = changed
    return msgspec.structs.replace(spec, workload=workloads)


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies inside ``folder`` (errors quote only such files)."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte
        return False


def read_sources_file(
    path: Path, where: str, max_sources: int, *, quote: bool = True
) -> npt.NDArray[np.int64]:
    """The vertex ids in a ``.npy`` file (1-D, integer) or a text file (blocking).

    A text file holds integers separated by whitespace; ``#`` starts a comment.

    Args:
        path: The file.
        where: The job file and the path inside it, for messages
            (``job.toml: $.workload[0].sources``).
        max_sources: Most ids the file may hold (``[limits] max_sources_per_file``).
        quote: Whether an error may quote a token of the file.

    Raises:
        ConfigurationError: The file is not a readable regular file, is too large,
            has a line that is too long, holds more than ``max_sources`` ids, is
            empty, or holds something other than non-negative integer ids (the
            first offender is named: its index, and its line for text).
    """
    if "\x00" in str(path):  # a spec made in Python is not checked as a file's is
        raise ConfigurationError(
            f"{where}: {str(path)!r} holds a NUL byte, which no file name can",
            fix="name the sources file without it.",
        )
    npy = path.suffix.lower() == ".npy"
    try:
        with open_regular(path) as file:
            if npy:
                ids = _read_npy(file, path, where, max_sources)
            else:
                ids = _read_text(file, path, where, max_sources, quote)
    except (OSError, ValueError, EOFError) as exc:  # ValueError, EOFError: NumPy's
        if isinstance(exc, OSError):
            reason = exc.strerror or str(exc)
        else:  # NumPy's reason may quote the file's first bytes
            reason = str(exc) if quote else "not a .npy file NumPy reads"
        kind = " as a .npy array" if npy else ""
        raise ConfigurationError(
            f"{where}: {path} cannot be read{kind} ({reason})",
            fix="name a regular file, relative to the job file's folder.",
        ) from None
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


def _too_many(where: str, path: Path, what: str, max_sources: int) -> ConfigurationError:
    return ConfigurationError(
        f"{where}: {path} {what}, more than the {max_sources:,} sources a file may list",
        fix="list fewer sources, draw them with sources = { random = N, seed = S }, or "
        "raise [limits] max_sources_per_file (at most 100,000,000) if the job is meant "
        "to have that many.",
    )


def _read_npy(file: BinaryIO, path: Path, where: str, max_sources: int) -> npt.NDArray[np.int64]:
    """The ids of an open ``.npy`` file, its header checked before any allocation."""
    size = os.fstat(file.fileno()).st_size
    version = np.lib.format.read_magic(file)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(file)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(file)
    else:
        raise ValueError(f".npy format version {version} is not supported")
    if len(shape) != 1 or dtype.kind not in "iu":
        raise ConfigurationError(
            f"{where}: {path} holds an array of shape {shape} and dtype {dtype}; sources "
            "are a 1-D integer array",
            fix="save a flat integer array: np.save(path, sources.ravel().astype(np.int64)).",
        )
    count = int(shape[0])
    if count > max_sources:
        raise _too_many(where, path, f"declares {count:,} sources", max_sources)
    data_bytes = count * dtype.itemsize
    if size - file.tell() != data_bytes:
        raise ConfigurationError(
            f"{where}: {path}: its header declares {count:,} sources ({data_bytes:,} "
            f"bytes) but the file holds {size - file.tell():,} bytes of data",
            fix=_NPY_FIX,
        )
    array = np.fromfile(file, dtype=dtype, count=count)
    if array.size != count:  # the file shrank while it was read
        raise ValueError(f"it ended after {array.size:,} of {count:,} sources")
    if dtype.kind == "u" and count and int(array.max()) > np.iinfo(np.int64).max:
        i = int(np.argmax(array > np.iinfo(np.int64).max))
        raise ConfigurationError(
            f"{where}: {path}: entry {i} is {int(array[i])}, beyond any vertex id",
            fix="list vertex ids of the graph (below its vertex count).",
        )
    return array.astype(np.int64)


def _read_text(
    file: BinaryIO, path: Path, where: str, max_sources: int, quote: bool
) -> npt.NDArray[np.int64]:
    """The ids of an open text file, read in blocks of whole lines."""
    limit = BYTES_PER_SOURCE * max_sources
    if os.fstat(file.fileno()).st_size > limit:
        raise _too_large(where, path, limit, max_sources)
    parts: list[npt.NDArray[np.int64]] = []
    count = read = line_base = 0
    carry = b""
    while True:
        chunk = file.read(_BLOCK)
        read += len(chunk)
        if read > limit:  # it grew since it was looked at
            raise _too_large(where, path, limit, max_sources)
        data = carry + chunk
        if chunk:
            cut = data.rfind(b"\n") + 1
            if len(data) - cut > MAX_LINE_BYTES:
                line = line_base + data.count(b"\n", 0, cut) + 1
                raise ConfigurationError(
                    f"{where}: {path} line {line:,} is longer than {MAX_LINE_BYTES:,} bytes",
                    fix="write a few ids per line (one per line is fine), '#' starting a comment.",
                )
            data, carry = data[:cut], data[cut:]
        if data:
            ids = _parse_lines(data, line_base, path, where, quote)
            count += ids.size
            if count > max_sources:
                raise _too_many(where, path, f"holds more than {max_sources:,} ids", max_sources)
            parts.append(ids)
            line_base += data.count(b"\n")
        if not chunk:
            return np.concatenate(parts) if parts else _NO_IDS


def _too_large(where: str, path: Path, limit: int, max_sources: int) -> ConfigurationError:
    return ConfigurationError(
        f"{where}: {path} holds more than {limit:,} bytes ({BYTES_PER_SOURCE} per source "
        f"for the {max_sources:,} sources a file may list)",
        fix="list fewer sources, draw them with sources = { random = N, seed = S }, or "
        "raise [limits] max_sources_per_file if the job is meant to have that many.",
    )


def _parse_lines(
    data: bytes, line_base: int, path: Path, where: str, quote: bool
) -> npt.NDArray[np.int64]:
    """The ids on whole lines ``data`` (after ``line_base`` lines), a bad one named."""
    lines = data.split(b"\n")
    if b"#" in data:
        lines = [line.partition(b"#")[0] for line in lines]
    tokens = b" ".join(lines).split()
    try:
        return np.array(tokens, dtype=np.bytes_).astype(np.int64) if tokens else _NO_IDS
    except (ValueError, OverflowError):
        pass
    ids: list[int] = []
    for number, line in enumerate(lines, start=line_base + 1):  # the careful pass
        for token in line.split():
            try:
                ids.append(int(np.int64(int(token))))
            except (ValueError, OverflowError):
                shown = token[: _QUOTE_CHARS * 4].decode("utf-8", "replace")
                if len(shown) > _QUOTE_CHARS:
                    shown = shown[: _QUOTE_CHARS - 3] + "..."
                what = f"{shown!r} is" if quote else "a token there is"
                raise ConfigurationError(
                    f"{where}: {path} line {number:,}: {what} not an integer vertex id",
                    fix=_TEXT_FIX,
                ) from None
    return np.array(ids, dtype=np.int64)
