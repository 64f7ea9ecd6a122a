"""A folder held open by descriptor: atomic, durable, checksummed writes that follow no link.

Every operation on a :class:`Folder` names a file *inside* it, relative to the
folder's descriptor, and opens it with ``O_NOFOLLOW``: a symlink placed in the
folder (or swapped in for a subfolder) is refused, never followed out of it.

:meth:`Folder.write` writes a temp file in the same folder, fsyncs it, renames it
over the target and fsyncs the folder: afterwards the file holds either its old
content or all of the new one, also across a power cut or a ``kill -9``. It
returns the size and SHA-256 of what it wrote, which the manifest records.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

TEMP_PREFIX = ".tmp-"
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_HASH_BLOCK = 1 << 20


class NotPlainError(OSError):
    """A name in a folder is a symlink, or not the kind of entry expected."""


class _HashingWriter:
    """A binary writer that hashes what passes through it (``np.save`` writes here)."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes | memoryview) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self._file.write(data)

    def flush(self) -> None:
        self._file.flush()


class Folder:
    """An open directory; see the module docstring. Made by :meth:`open`.

    Args:
        fd: The directory's descriptor (owned: :meth:`close` closes it).
        path: Its path, for messages.
    """

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    @classmethod
    def open(cls, path: Path) -> Folder:
        """Open the directory ``path`` (following links in ``path`` itself)."""
        return cls(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), path)

    def close(self) -> None:
        """Close the descriptor (a no-op the second time)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def subfolder(self, name: str, *, create: bool) -> Folder:
        """The directory ``name`` inside this one, made first when ``create``.

        Raises:
            NotPlainError: ``name`` is a symlink or not a directory.
            FileNotFoundError: It does not exist and ``create`` is off.
        """
        if create:
            try:
                os.mkdir(name, 0o755, dir_fd=self.fd)
            except FileExistsError:
                pass
            else:
                self.sync()
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise NotPlainError(exc.errno, "not a plain directory", name) from None
            raise
        return Folder(fd, self.path / name)

    def entries(self) -> Iterator[tuple[str, str]]:
        """``(name, kind)`` of each entry, kind ``"file"``, ``"dir"``, ``"link"`` or
        ``"other"``; links are reported as links, never followed."""
        with os.scandir(self.fd) as listing:
            for entry in listing:
                if entry.is_symlink():
                    kind = "link"
                elif entry.is_dir(follow_symlinks=False):
                    kind = "dir"
                elif entry.is_file(follow_symlinks=False):
                    kind = "file"
                else:
                    kind = "other"
                yield entry.name, kind

    def exists(self, name: str) -> bool:
        """Whether ``name`` exists (a dangling link counts)."""
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def open_read(self, name: str) -> BinaryIO:
        """Open the regular file ``name`` for reading.

        Raises:
            NotPlainError: It is a symlink or not a regular file.
            OSError: It cannot be opened.
        """
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise NotPlainError(exc.errno, "a symlink, not a regular file", name) from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise NotPlainError(errno.EINVAL, "not a regular file", name)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")

    def read(self, name: str) -> bytes:
        """All bytes of the regular file ``name`` (see :meth:`open_read`)."""
        with self.open_read(name) as file:
            return file.read()

    def digest(self, name: str) -> tuple[int, str]:
        """``(size, SHA-256 hex)`` of the regular file ``name``, read in blocks."""
        digest = hashlib.sha256()
        size = 0
        with self.open_read(name) as file:
            while block := file.read(_HASH_BLOCK):
                digest.update(block)
                size += len(block)
        return size, digest.hexdigest()

    def write(
        self,
        name: str,
        content: bytes | Callable[[BinaryIO], None],
        *,
        sync: bool = True,
        exclusive: bool = False,
    ) -> tuple[int, str]:
        """Replace (or, ``exclusive``, create) ``name`` atomically; return its size and SHA-256.

        Args:
            name: The file inside this folder.
            content: The bytes, or a function that writes them to a binary writer.
            sync: Also fsync the folder so the rename is durable (callers writing
                many files may call :meth:`sync` once afterwards instead).
            exclusive: Refuse to replace an existing ``name``.

        Raises:
            FileExistsError: ``exclusive`` and ``name`` exists.
        """
        if exclusive and self.exists(name):
            raise FileExistsError(errno.EEXIST, "refusing to replace it", name)
        temp = f"{TEMP_PREFIX}{os.getpid()}-{name}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(temp, flags, 0o644, dir_fd=self.fd)
        except FileExistsError:  # our own name, left by a process with our pid
            os.unlink(temp, dir_fd=self.fd)
            fd = os.open(temp, flags, 0o644, dir_fd=self.fd)
        try:
            with os.fdopen(fd, "wb") as file:
                writer = _HashingWriter(file)
                if isinstance(content, bytes):
                    writer.write(content)
                else:
                    content(writer)  # type: ignore[arg-type]  # a writer is all it needs
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            self.remove(temp)
            raise
        if sync:
            self.sync()
        return writer.size, writer.digest.hexdigest()

    def remove(self, name: str) -> None:
        """Delete ``name`` (a link itself, never its target); missing is fine."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=self.fd)

    def sync(self) -> None:
        """fsync the folder, making the renames and creations inside it durable."""
        os.fsync(self.fd)
