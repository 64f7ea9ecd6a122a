"""The SHA-256 of a job's graph file, hashed once per content and kept in the graph cache.

A job's fingerprint covers its graph file's content, so a resume accepts the same
bytes whatever happened to the file's timestamps (a ``touch``, a copy that kept the
content) and refuses other bytes. Hashing a large file costs a full read (SHA-256
runs at about 1-2 GB/s on one core, slower when the file is not in the page cache),
so each digest is kept in ``<graph cache>/digests/`` under the file's device and
inode, with the size, modification and status-change times it was taken at: while
they are the same, the digest is reused without reading the file; when any differs
(the file was touched, rewritten, replaced) the file is hashed once more and the
entry replaced. The status-change time cannot be set by a user, so a file rewritten
and given its old modification time back is still read again.

The cache is an optimisation only: failing to read or write an entry never fails a
job (it costs a hash), and an entry the reader cannot use counts as absent.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec

from ..._files import file_digest, open_regular, replace_atomically
from ...logging import get_logger
from ._graph_cache import graph_cache_dir

_log = get_logger("vyre_async.jobs")

#: Bytes an entry may hold (a path and a few numbers).
_ENTRY_LIMIT = 1 << 16


class DigestEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A file's SHA-256, with what identified the file when it was taken.

    Attributes:
        path: Where the file was (for people reading the cache; not compared).
        device: ``st_dev``.
        inode: ``st_ino``.
        size: ``st_size``.
        mtime_ns: ``st_mtime_ns``.
        ctime_ns: ``st_ctime_ns``.
        sha256: SHA-256 of its content, hex.
    """

    path: str
    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    sha256: str


_decoder = msgspec.json.Decoder(DigestEntry)


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _entry_path(st: os.stat_result) -> Path:
    name = hashlib.sha256(f"{st.st_dev}:{st.st_ino}".encode()).hexdigest()[:32]
    return graph_cache_dir() / "digests" / f"{name}.json"


def graph_file_sha256(path: Path) -> str:
    """SHA-256 (hex) of the regular file ``path``, from the cache when it still holds
    for the file as it is (blocking).

    Raises:
        OSError: The file cannot be opened or read, or is not a regular file
            (``vyre_async._files.NotRegularFileError``).
    """
    with open_regular(path) as file:
        before = os.fstat(file.fileno())
        entry_path = _entry_path(before)
        cached = _read_entry(entry_path)
        if cached is not None and _identity(before) == (
            cached.device,
            cached.inode,
            cached.size,
            cached.mtime_ns,
            cached.ctime_ns,
        ):
            return cached.sha256
        size, sha256 = file_digest(file)  # the one full read
        after = os.fstat(file.fileno())
    if _identity(after) == _identity(before) and size == before.st_size:  # not written meanwhile
        entry = DigestEntry(str(path), *_identity(before), sha256)
        _write_entry(entry_path, entry)
    return sha256


def _read_entry(path: Path) -> DigestEntry | None:
    try:
        with open_regular(path) as file:
            data = file.read(_ENTRY_LIMIT + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        _log.warning("graph_digest_unreadable", path=str(path), error=str(exc))
        return None
    try:
        return _decoder.decode(data) if len(data) <= _ENTRY_LIMIT else None
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None  # damaged or of another layout: hashed again and replaced


def _write_entry(path: Path, entry: DigestEntry) -> None:
    data = msgspec.json.encode(entry)
    try:
        replace_atomically(path, lambda file: file.write(data))
    except OSError as exc:
        _log.warning(
            "graph_digest_write_failed",
            path=str(path),
            error=str(exc),
            fix="set VYRE_ASYNC_GRAPH_CACHE_DIR to a writable folder (without it, each "
            "resume after the graph file's times changed hashes it again)",
        )
