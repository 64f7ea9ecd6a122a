"""The on-disk half of the CUBIN cache: where it lives, its file format, atomic writes.

Each entry is one file, ``<cache dir>/cubin/<key>.cubin``, holding a fixed header
(magic, format version, payload length, SHA-256 of the payload) and then the payload.
A torn write, a truncated copy or a flipped bit fails the header check; the entry is
then logged and treated as a miss, and the fresh build overwrites it.

The disk cache is an optimisation only: any failure to read or write it is logged and
compilation goes on in memory.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

from .._files import replace_atomically
from ..logging import get_logger

_log = get_logger("vyre_async.kernels")

MAGIC = b"VYRECUBN"
FORMAT_VERSION = 1
#: magic, format version, reserved (zero), payload length, SHA-256 of the payload.
HEADER = struct.Struct("<8sHHQ32s")
SUFFIX = ".cubin"


def cache_root() -> Path:
    """The cache root: ``$VYRE_ASYNC_CACHE_DIR``, else ``$XDG_CACHE_HOME/vyre_async``,
    else ``~/.cache/vyre_async``. Read on every call, so tests and callers can move it.
    """
    explicit = os.environ.get("VYRE_ASYNC_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "vyre_async"
    return Path.home() / ".cache" / "vyre_async"


def cubin_dir() -> Path:
    """Where compiled kernel images are kept (``<cache root>/cubin``)."""
    return cache_root() / "cubin"


def entry_path(key: str) -> Path:
    """The file that holds (or would hold) the entry for ``key``."""
    return cubin_dir() / f"{key}{SUFFIX}"


def frame(payload: bytes) -> bytes:
    """Prefix ``payload`` with the integrity header."""
    digest = hashlib.sha256(payload).digest()
    return HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(payload), digest) + payload


def unframe(data: bytes) -> bytes:
    """Check the header of a cache file's bytes and return the payload.

    Raises:
        ValueError: The data is not an intact entry of this format version; the
            message says which check failed.
    """
    if len(data) < HEADER.size:
        raise ValueError(f"file has {len(data)} bytes, shorter than the {HEADER.size}-byte header")
    magic, version, _reserved, length, digest = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ValueError(f"bad magic {magic!r}")
    if version != FORMAT_VERSION:
        raise ValueError(f"format version {version}, this build reads {FORMAT_VERSION}")
    payload = data[HEADER.size :]
    if len(payload) != length:
        raise ValueError(f"payload has {len(payload)} bytes, header says {length}")
    if hashlib.sha256(payload).digest() != digest:
        raise ValueError("payload SHA-256 does not match the header")
    return payload


def read_entry(key: str) -> bytes | None:
    """The verified payload stored for ``key``, or ``None`` when absent or damaged.

    A damaged or unreadable file is logged as a warning; the caller rebuilds and
    :func:`write_entry` replaces it.
    """
    path = entry_path(key)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _log.warning("cubin_cache_unreadable", path=str(path), error=str(exc))
        return None
    try:
        return unframe(data)
    except ValueError as exc:
        report_corrupt(path, str(exc))
        return None


def report_corrupt(path: Path, reason: str) -> None:
    """Log that the entry at ``path`` is damaged and will be rebuilt."""
    _log.warning("cubin_cache_corrupt", path=str(path), reason=reason, action="rebuilding")


def write_entry(key: str, payload: bytes) -> bool:
    """Store ``payload`` for ``key`` atomically; never raises for I/O trouble.

    The bytes go to a temporary file in the same directory, are fsynced, and then
    replace the entry with :func:`os.replace`, so readers see the old file or the whole
    new one, never a prefix. Concurrent writers of one key each replace it whole.

    Returns:
        Whether the entry was written; a failure is logged as a warning.
    """
    path = entry_path(key)
    try:
        replace_atomically(path, lambda file: file.write(frame(payload)))
    except OSError as exc:
        _log.warning(
            "cubin_cache_write_failed",
            path=str(path),
            error=str(exc),
            fix="set VYRE_ASYNC_CACHE_DIR to a writable directory; compiling goes on in memory",
        )
        return False
    return True
