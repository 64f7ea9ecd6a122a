"""Reading files that must be regular files, and replacing cache entries atomically.

A FIFO blocks a plain ``open`` until a writer appears, and ``/dev/zero`` never ends;
both would hang a loader or fill memory. :func:`open_regular` opens without
blocking, checks the opened file (not the path, which could change in between) and
refuses anything but a regular file. :func:`replace_atomically` writes a file so that
readers see the old one or the whole new one, never a prefix (the cubin and graph
caches). :func:`file_digest` hashes what an open file holds, in blocks (a job's
graph file, its output folder's chunks and array files).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "FileTooLargeError",
    "NotRegularFileError",
    "file_digest",
    "open_regular",
    "read_regular",
    "replace_atomically",
]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_HASH_BLOCK = 1 << 20


class NotRegularFileError(OSError):
    """The path names something other than a regular file (``strerror`` says what)."""


class FileTooLargeError(OSError):
    """A file holds more bytes than its reader accepts."""


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file (symlinks are followed).

    Raises:
        NotRegularFileError: It is a directory, FIFO, device or socket.
        OSError: It cannot be opened.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    kind = next((name for test, name in _KINDS if test(mode)), "an unusual kind of file")
    raise NotRegularFileError(0, f"it is {kind}, not a regular file", os.fspath(path))


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """All bytes of the regular file ``path``, refusing one of more than ``limit`` bytes.

    Raises:
        FileTooLargeError: The file holds more than ``limit`` bytes (only ``limit + 1``
            are ever read).
        NotRegularFileError: Not a regular file.
        OSError: It cannot be read.
    """
    with open_regular(path) as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(0, f"it holds more than {limit:,} bytes", os.fspath(path))
    return data


def replace_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Make ``path`` hold what ``write`` writes, all at once (blocking).

    The bytes go to a temporary file in the same folder, are fsynced, and replace
    ``path`` with :func:`os.replace`; the folder is fsynced too where the filesystem
    allows it. Concurrent writers each replace the file whole.

    Raises:
        OSError: The folder or file could not be made or written (no temporary file
            is left behind).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:24]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    # Makes the rename durable; some filesystems refuse to open or fsync a folder, and
    # losing a cache entry on a crash only costs rebuilding it.
    with contextlib.suppress(OSError):
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def file_digest(file: BinaryIO) -> tuple[int, str]:
    """``(size, SHA-256 hex)`` of what is left to read in ``file``, read in blocks."""
    digest = hashlib.sha256()
    size = 0
    while block := file.read(_HASH_BLOCK):
        digest.update(block)
        size += len(block)
    return size, digest.hexdigest()
