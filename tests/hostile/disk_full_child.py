"""The command line on a disk that fills up, for the disk-full tests.

Usage: ``python tests/hostile/disk_full_child.py SUFFIX FILES ARGS...``: the output
folder's files whose names end in SUFFIX (``.npz`` array files, ``.jsonl`` chunks)
are written as usual for the first FILES of them; the next one gets a few hundred
bytes, then every write fails with ENOSPC, as a full disk fails it. ARGS go to the
``vyre-async`` command line; its exit code is this process's.
"""

from __future__ import annotations

import errno
import sys
from typing import Any

from vyre_async.cli import main
from vyre_async.jobs.output import _atomic

ROOM = 300


class FullDisk:
    """A file that takes ``ROOM`` more bytes, then fails every write with ENOSPC."""

    def __init__(self, file: Any) -> None:
        self._file = file
        self._room = ROOM

    def write(self, data: bytes) -> int:
        if len(data) > self._room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._room -= len(data)
        return int(self._file.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


def fill_the_disk(suffix: str, files: int) -> None:
    """Make the file after the first ``files`` ending in ``suffix`` hit a full disk."""
    create = _atomic.Folder.create
    seen = [0]

    def create_on_a_filling_disk(self: _atomic.Folder, name: str) -> _atomic.PendingFile:
        pending = create(self, name)
        if name.endswith(suffix):
            seen[0] += 1
            if seen[0] > files:
                pending.writer._file = FullDisk(pending.writer._file)  # type: ignore[assignment]
        return pending

    _atomic.Folder.create = create_on_a_filling_disk  # type: ignore[method-assign]


if __name__ == "__main__":
    fill_the_disk(sys.argv[1], int(sys.argv[2]))
    sys.exit(main(sys.argv[3:]))
