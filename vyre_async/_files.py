"""Opening input files that must be regular files: job files and graph files.

A FIFO blocks a plain ``open`` until a writer appears, and ``/dev/zero`` never ends;
both would hang a loader or fill memory. :func:`open_regular` opens without
blocking, checks the opened file (not the path, which could change in between) and
refuses anything but a regular file.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

__all__ = ["FileTooLargeError", "NotRegularFileError", "open_regular", "read_regular"]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


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
