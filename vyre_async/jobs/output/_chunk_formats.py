"""How a folder's chunks are written and read: one module per format, looked up by name.

A folder's manifest names its chunk format (``[output] format``), and every chunk
file bears it as its suffix. Each format is one module that owns everything about
it (:mod:`._jsonl`, :mod:`._parquet`): what it needs installed, how a chunk's
records become its bytes, and how its bytes become records or an Arrow table,
checked. The store, the verifier and the readers look the format up here and never
ask which one it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, Protocol

from ._jsonl import JSON_LINES
from ._parquet import PARQUET
from ._record_parts import RecordPart
from ._records import ItemRecord, RecordLayout


class ChunkFormat(Protocol):
    """One way of writing a folder's chunks (see the module)."""

    @property
    def name(self) -> str:
        """The format's name in ``[output] format`` and the manifest: its chunks' suffix."""
        ...

    @property
    def title(self) -> str:
        """The format as messages name it (``"Parquet"``)."""
        ...

    def check_available(self, needed_for: str, *, instead: str | None = None) -> None:
        """Refuse the format when a package it needs cannot be imported.

        Args:
            needed_for: What needs it, as the message starts ("reading the ... chunk X").
            instead: What else the user may do, ending the fix after "or ".

        Raises:
            ConfigurationError: Naming the package and how to install it.
        """
        ...

    def encode(
        self, parts: Sequence[RecordPart], layout: RecordLayout
    ) -> bytes | Callable[[BinaryIO], None]:
        """A chunk of ``parts``: its bytes, or a function that writes them to a file.

        Raises:
            ConfigurationError: A package the format needs cannot be imported.
        """
        ...

    def records(self, data: bytes, layout: RecordLayout) -> list[ItemRecord]:
        """The records of a chunk's bytes, each checked against ``layout``.

        Raises:
            ValueError: The bytes do not hold valid records of ``layout``.
            ConfigurationError: A package the format needs cannot be imported.
        """
        ...

    def table(self, data: bytes, layout: RecordLayout, pa: Any) -> Any:
        """A ``pyarrow.Table`` of a chunk's bytes (``pa`` is the pyarrow module), checked
        against the Arrow schema of ``layout``'s records.

        Raises:
            ValueError: The bytes do not hold valid records of ``layout``.
            ConfigurationError: A package the format needs cannot be imported.
        """
        ...


#: Every chunk format, by name.
CHUNK_FORMATS: dict[str, ChunkFormat] = {each.name: each for each in (JSON_LINES, PARQUET)}


def chunk_format_named(name: str) -> ChunkFormat:
    """The chunk format called ``name`` (a manifest's or ``[output] format``).

    Raises:
        KeyError: No format has the name (a manifest's and the spec's types allow
            only the names here).
    """
    return CHUNK_FORMATS[name]


def format_of_chunk(chunk: str) -> ChunkFormat:
    """The format of a chunk file, by its suffix (a name :data:`~._layout.CHUNK_NAME`
    matched)."""
    return chunk_format_named(chunk.rpartition(".")[2])
