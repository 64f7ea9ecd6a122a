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

from ..._files import file_digest

TEMP_PREFIX = ".tmp-"
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


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
        with self.open_read(name) as file:
            return file_digest(file)

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
        pending = self.create(name)
        try:
            if isinstance(content, bytes):
                pending.writer.write(content)
            else:
                content(pending.writer)  # type: ignore[arg-type]  # a writer is all it needs
            return pending.finish(sync=sync)
        except BaseException:
            pending.discard()
            raise

    def create(self, name: str) -> PendingFile:
        """Start writing ``name`` under a temp name; :meth:`PendingFile.finish` puts it in place.

        For a file written piece by piece (a chunk's arrays, as its items arrive);
        :meth:`write` is the same for content at hand.
        """
        temp = f"{TEMP_PREFIX}{os.getpid()}-{name}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(temp, flags, 0o644, dir_fd=self.fd)
        except FileExistsError:  # our own name, left by a process with our pid
            os.unlink(temp, dir_fd=self.fd)
            fd = os.open(temp, flags, 0o644, dir_fd=self.fd)
        return PendingFile(self, name, temp, os.fdopen(fd, "wb"))

    def remove(self, name: str) -> None:
        """Delete ``name`` (a link itself, never its target); missing is fine."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=self.fd)

    def sync(self) -> None:
        """fsync the folder, making the renames and creations inside it durable."""
        os.fsync(self.fd)


class PendingFile:
    """A file being written under a temp name in its folder; made by :meth:`Folder.create`.

    Attributes:
        name: The name it gets once finished.
        writer: Where its bytes go (they are hashed on the way).
    """

    def __init__(self, folder: Folder, name: str, temp: str, file: BinaryIO) -> None:
        self.name = name
        self._folder = folder
        self._temp = temp
        self._file: BinaryIO | None = file
        self.writer = _HashingWriter(file)

    def finish(self, *, sync: bool = True) -> tuple[int, str]:
        """fsync it, rename it to :attr:`name` (``sync``: fsync the folder); its size and SHA-256.

        On an error the temp file is removed.
        """
        file = self._file
        if file is None:
            raise ValueError(f"{self.name} was finished or discarded already")
        self._file = None
        try:
            with file:
                file.flush()
                os.fsync(file.fileno())
            fd = self._folder.fd
            os.replace(self._temp, self.name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            self._folder.remove(self._temp)
            raise
        if sync:
            self._folder.sync()
        return self.writer.size, self.writer.digest.hexdigest()

    def discard(self) -> None:
        """Close and remove the temp file (a no-op once finished or discarded)."""
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()
            self._folder.remove(self._temp)
