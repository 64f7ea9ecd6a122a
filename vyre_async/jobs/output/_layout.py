"""The names in a job's output folder, and which names a run may write or leave behind."""

from __future__ import annotations

import re
from typing import Literal, get_args

from ._atomic import TEMP_PREFIX

#: The names of the chunk formats (``[output] format``), each the suffix of its chunk
#: files: JSON lines, or Parquet. Each format is a module (see :mod:`._chunk_formats`).
ChunkFormatName = Literal["jsonl", "parquet"]

MANIFEST_FILE = "manifest.json"
SUMMARY_FILE = "summary.json"
LOG_FILE = "log.jsonl"
LOCK_FILE = ".lock"
CHUNKS_DIR = "chunks"
ARRAYS_DIR = "arrays"
#: What the folder itself may hold, by kind.
ROOT_FILES = {MANIFEST_FILE, SUMMARY_FILE, LOG_FILE, LOCK_FILE}
ROOT_DIRS = {CHUNKS_DIR, ARRAYS_DIR}
#: Temp files of the manifest and summary (``.tmp-<pid>-<name>``).
ROOT_TEMP = re.compile(rf"^{re.escape(TEMP_PREFIX)}\d+-(?:manifest|summary)\.json$")
#: A committed chunk's name (number, writer token, format) and its array file's path,
#: as the manifest lists them.
_SUFFIXES = "|".join(get_args(ChunkFormatName))
CHUNK_NAME = re.compile(rf"^(\d{{6}})-([0-9a-f]{{8}})\.({_SUFFIXES})$")
ARRAY_PATH = re.compile(rf"^{ARRAYS_DIR}/(\d{{6}}-[0-9a-f]{{8}}\.npz)$")
#: Chunks a run writes at once; they join the manifest in order, so a run that ends
#: leaves at most this many written and unlisted, numbered from the manifest's count.
CHUNKS_WRITTEN_AT_ONCE = 2
FOREIGN_FIX = (
    "vyre-async writes only into a new or empty folder, or one of its own job folders; "
    "choose another folder with --out DIR, or move the files named above away."
)


def chunk_name(seq: int, writer: str, chunk_format: ChunkFormatName) -> str:
    """The name of chunk number ``seq`` written by the run with token ``writer``."""
    return f"{seq:06d}-{writer}.{chunk_format}"


def writing_names(listed: int, writer: str, chunk_format: ChunkFormatName) -> tuple[str, ...]:
    """The chunks a run with token ``writer`` may be writing while the manifest lists
    ``listed`` chunks: the next :data:`CHUNKS_WRITTEN_AT_ONCE`, numbered from ``listed``."""
    return tuple(
        chunk_name(seq, writer, chunk_format)
        for seq in range(listed, listed + CHUNKS_WRITTEN_AT_ONCE)
    )


def array_name(seq: int, writer: str) -> str:
    """The name (in ``arrays/``) of the full results of chunk number ``seq``'s items."""
    return f"{seq:06d}-{writer}.npz"


def own_uncommitted(writer: str, suffix: str) -> re.Pattern[str]:
    """Names a run with token ``writer`` gives its chunk or array files (and their temp
    files); group 1 is the chunk's number."""
    return re.compile(rf"^(?:{re.escape(TEMP_PREFIX)}\d+-)?(\d{{6}})-{writer}\.{suffix}$")
