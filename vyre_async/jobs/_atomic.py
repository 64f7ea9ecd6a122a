"""Atomic, durable file writes: temp file in the same folder, fsync, rename, folder fsync.

After :func:`write_atomic` returns, the file holds either its old content or all of
the new one, also across a power cut or a ``kill -9`` at any moment.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

TEMP_PREFIX = ".tmp-"


def write_atomic(
    path: Path, content: bytes | Callable[[BinaryIO], None], *, sync_folder: bool = True
) -> int:
    """Replace ``path`` with ``content`` atomically; return the bytes written.

    Args:
        path: The file to (re)place.
        content: The bytes, or a function that writes them to an open binary file.
        sync_folder: Also fsync the folder so the rename itself is durable (callers
            writing many files may sync the folder once afterwards instead).
    """
    temp = path.with_name(f"{TEMP_PREFIX}{os.getpid()}-{path.name}")
    try:
        with open(temp, "wb") as file:
            if isinstance(content, bytes):
                file.write(content)
            else:
                content(file)
            file.flush()
            os.fsync(file.fileno())
            size = file.tell()
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    if sync_folder:
        sync_dir(path.parent)
    return size


def sync_dir(folder: Path) -> None:
    """fsync a folder, making the renames and creations inside it durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_temp_files(folder: Path) -> int:
    """Delete temp files an interrupted write left in ``folder``; return how many."""
    removed = 0
    for leftover in folder.glob(f"{TEMP_PREFIX}*"):
        with contextlib.suppress(OSError):
            leftover.unlink()
            removed += 1
    return removed
