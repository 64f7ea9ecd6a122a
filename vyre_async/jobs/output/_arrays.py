"""Full results of a chunk's items, stacked in one ``.npz`` file per chunk.

An array file, ``arrays/<chunk number>-<token>.npz``, is what ``numpy.savez``
writes: a ZIP archive (stored, not compressed) of one ``.npy`` member per item,
named by the item's id, so ``np.load(path)["17"]`` is item 17's array. Items of
different workloads (levels, k-hop vertex ids, ranks) differ in length and dtype,
which is why each keeps its own member rather than a row of one 2-D array.

The committer writes the file as the chunk's blocks arrive, under a temp name
(:class:`ArrayFileWriter`), and commits it with the chunk: the manifest records its
size and SHA-256. :class:`ItemArrays` reads items back, checking each file against
the manifest before it is used.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from ..._files import file_digest
from ...errors import ConfigurationError
from ._atomic import Folder, NotPlainError
from ._layout import ARRAY_PATH, ARRAYS_DIR, MANIFEST_FILE, array_name
from ._records import FileEntry
from ._verify import damaged, open_output

#: Files :class:`ItemArrays` keeps open at once (a job's items are usually read in
#: commit order, so each file is opened once).
OPEN_FILES = 4
#: Room for a member's ``.npy`` header when deciding whether it needs ZIP64.
_HEADER_ROOM = 1 << 16


class ArrayFileWriter:
    """One chunk's array file, written member by member; see the module docstring.

    Blocks on file I/O: the committer calls it in a worker thread.

    Args:
        folder: The ``arrays/`` folder.
        seq: The number of the chunk it belongs to.
        writer: The run's writer token.
    """

    def __init__(self, folder: Folder, seq: int, writer: str) -> None:
        self.seq = seq
        self.path = f"{ARRAYS_DIR}/{array_name(seq, writer)}"
        self._pending = folder.create(array_name(seq, writer))
        # An unseekable writer: zipfile then writes each member's sizes after it, so
        # the file is written front to back once and hashed on the way.
        self._zip = zipfile.ZipFile(self._pending.writer, "w", zipfile.ZIP_STORED)  # type: ignore[call-overload]  # it writes and flushes, nothing more
        self.items = 0

    def add(self, item: int, array: np.ndarray) -> None:
        """Write ``array`` as item ``item``'s member."""
        big = array.nbytes + _HEADER_ROOM > zipfile.ZIP64_LIMIT
        with self._zip.open(f"{int(item)}.npy", "w", force_zip64=big) as member:
            np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)
        self.items += 1

    def finish(self) -> FileEntry:
        """Close, fsync and rename it in place (the caller fsyncs the folder); its entry."""
        self._zip.close()
        size, sha256 = self._pending.finish(sync=False)
        return FileEntry(self.path, size, sha256)

    def discard(self) -> None:
        """Remove it (a run that stops before committing its chunk)."""
        # Closed first, so that the archive never writes its end to a closed file when
        # it is collected (nor raises again on a full disk): the file goes anyway.
        with contextlib.suppress(OSError, ValueError):
            self._zip.close()
        self._pending.discard()


class ItemArrays:
    """The full-result arrays of a job's output folder, read per item.

    Made by :func:`open_item_arrays`; close it (or use it as a context manager).
    Only array files the manifest commits are read, each checked against the size
    and SHA-256 the manifest recorded before its first item is returned, and no
    symlink is followed.

    Example::

        with open_item_arrays(out) as arrays:
            for record in read_records(out):
                if record.array is not None:
                    levels = arrays.read(record.array, record.id)

    From a pandas row, pass ``row["array"]`` (``row.array`` is pandas' own attribute).
    """

    def __init__(self, root: Folder, files: dict[str, FileEntry]) -> None:
        self._root = root
        self._files = files
        self._arrays: Folder | None = None
        self._open: dict[str, tuple[Any, Any]] = {}  # path -> (file, NpzFile)

    def read(self, array: str, item: int) -> np.ndarray:
        """Item ``item``'s array in the file ``array`` (its record's ``array`` field).

        Args:
            array: The record's ``array``: ``arrays/<chunk>-<token>.npz``.
            item: The record's ``id``.

        Returns:
            The array as the job wrote it (levels: int32, -1 unreached; k-hop
            vertex ids: int32; PageRank ranks: floating point).

        Raises:
            ConfigurationError: The manifest commits no such file, the file is
                missing or not as committed, or it holds no array of ``item``.
            TypeError: ``array`` is not a string.
            ValueError: This reader is closed.
        """
        if not isinstance(array, str):
            raise TypeError(
                f"array must be the record's array field, a str, not {type(array).__name__} "
                "(an item that kept no full result has none; from a pandas row, pass "
                "row['array']: row.array is pandas' own attribute)"
            )
        if self._root.fd < 0:
            raise ValueError("these item arrays are closed; open them again")
        npz = self._npz(array)
        try:
            values: np.ndarray = npz[str(int(item))]
        except KeyError:
            raise ConfigurationError(
                f"{self._root.path / array} holds no array of item {item}",
                fix="pass a record's own array and id (record.array, record.id).",
            ) from None
        return values

    def _npz(self, array: str) -> Any:
        if array in self._open:
            return self._open[array][1]
        entry = self._files.get(array)
        match = ARRAY_PATH.match(array)
        if entry is None or match is None:
            raise ConfigurationError(
                f"{array!r} is not an array file that {self._root.path / MANIFEST_FILE} commits",
                fix="pass a committed record's array field, as read_records returns it.",
            )
        if self._arrays is None:
            try:
                self._arrays = self._root.subfolder(ARRAYS_DIR, create=False)
            except OSError as exc:
                raise damaged(
                    self._root.path, self._root.path / ARRAYS_DIR, f"cannot be read ({exc})"
                ) from None
        path = self._root.path / array
        try:
            file = self._arrays.open_read(match[1])
        except NotPlainError as exc:
            raise damaged(self._root.path, path, f"is {exc.strerror}") from None
        except FileNotFoundError:
            raise damaged(self._root.path, path, "is missing") from None
        # The open file is checked and then read: nothing can be swapped in between.
        try:
            size, sha256 = file_digest(file)
        except BaseException:
            file.close()
            raise
        if (size, sha256) != (entry.bytes, entry.sha256):
            file.close()
            raise damaged(
                self._root.path, path, "does not match the size and checksum the manifest recorded"
            )
        try:
            file.seek(0)
            npz = np.load(file, allow_pickle=False)
        except BaseException:
            file.close()
            raise
        if len(self._open) >= OPEN_FILES:
            oldest = next(iter(self._open))
            _close(*self._open.pop(oldest))
        self._open[array] = (file, npz)
        return npz

    def close(self) -> None:
        """Close every file (a no-op the second time)."""
        for file, npz in self._open.values():
            _close(file, npz)
        self._open.clear()
        if self._arrays is not None:
            self._arrays.close()
        self._root.close()

    def __enter__(self) -> ItemArrays:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_item_arrays(folder: str | os.PathLike[str]) -> ItemArrays:
    """Open a job's output folder to read its items' full-result arrays.

    Blocks on file I/O (call it in a worker thread from async code), as do
    :meth:`ItemArrays.read` calls.

    Raises:
        ConfigurationError: The folder cannot be read or holds no job manifest.
    """
    root, manifest = open_output(Path(folder))
    files = {f.path: f for chunk in manifest.chunks for f in chunk.files}
    return ItemArrays(root, files)


def read_item_array(folder: str | os.PathLike[str], array: str, item: int) -> np.ndarray:
    """One item's full-result array (see :meth:`ItemArrays.read`; for many items, use
    :func:`open_item_arrays`, which checks each file once)."""
    with open_item_arrays(folder) as arrays:
        return arrays.read(array, item)


def _close(file: Any, npz: Any) -> None:
    with contextlib.suppress(Exception):
        npz.close()
    file.close()
