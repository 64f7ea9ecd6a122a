"""Reading numeric text files in blocks: a fast path in C and a careful path that names lines.

A file is read in blocks of whole lines. The fast path hands a block (comment lines
blanked) to ``np.loadtxt``'s C parser. When that fails, the careful path tokenises
the block: NumPy finds where tokens start, which line each is on and which lines are
comments or blank, without a Python loop over lines; every data line keeps its
1-based line number, so the error names the exact line.

Only regular files are read (a FIFO or ``/dev/zero`` is refused, not waited on), no
line may be longer than :data:`MAX_LINE_BYTES`, and an error quotes at most
:data:`QUOTE_CHARS` characters of the line, or none when the caller asks for none.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._files import open_regular
from ..errors import ValidationError

#: Bytes read per block; a block's tokens live as Python bytes objects, ~20x larger.
_BLOCK = 1 << 22
#: Longest line accepted: an edge or entry line is a few numbers.
MAX_LINE_BYTES = 1 << 16
#: Characters of a bad line an error message quotes.
QUOTE_CHARS = 40

StrPath = str | os.PathLike[str]
Int64s = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class RowBlock:
    """The data lines (neither blank nor comment) of one block of a text file.

    Attributes:
        path: The file, for error messages.
        lines: 1-based line number of each data line.
        counts: Number of tokens on each data line.
        tokens: The tokens of every data line, in file order.
        quote: Whether error messages may quote the file's text.
    """

    path: StrPath
    lines: Int64s
    counts: Int64s
    tokens: list[bytes]
    quote: bool = True

    def fail(self, row: int, problem: str, fix: str, *, joiner: str = ", got") -> ValidationError:
        """The error for data line ``row``: file, line number, problem and the line's text.

        The message reads ``"<path> line <n>: <problem><joiner> '<line text>'"``, the
        text cut to :data:`QUOTE_CHARS` characters and left out when ``quote`` is off.
        """
        where = f"{os.fspath(self.path)} line {int(self.lines[row])}: {problem}"
        if not self.quote:
            return ValidationError(where, fix=fix)
        start = int(self.counts[:row].sum())
        text = b" ".join(self.tokens[start : start + int(self.counts[row])])
        return ValidationError(f"{where}{joiner} {excerpt(text)!r}", fix=fix)

    def table(self, width: int, what: str, fix: str) -> npt.NDArray[np.bytes_]:
        """The tokens as a ``(rows, width)`` byte-string array.

        Raises:
            ValidationError: A line does not have exactly ``width`` tokens.
        """
        wrong = self.counts != width
        if wrong.any():
            raise self.fail(int(np.argmax(wrong)), f"expected {what}", fix)
        table = np.array(self.tokens, dtype=np.bytes_) if self.tokens else np.empty(0, "S1")
        return table.reshape(-1, width)

    def parse(
        self, column: npt.NDArray[np.bytes_], dtype: type[np.generic], what: str, fix: str
    ) -> Any:
        """Parse one column of :meth:`table` as ``dtype`` (int64 or float64).

        Raises:
            ValidationError: A token is not a number of that kind; its line is named.
        """
        try:
            return column.astype(dtype)
        except (ValueError, OverflowError):
            pass
        convert = int if dtype == np.int64 else float
        values = []
        for row, token in enumerate(column.tolist()):
            try:
                values.append(np.asarray(convert(token), dtype=dtype))
            except (ValueError, OverflowError):
                shown = f"{excerpt(token)!r}" if self.quote else "a token"
                problem = f"{shown} is not {what}"
                raise self.fail(row, problem, fix, joiner=" in") from None
        return np.array(values, dtype=dtype)


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Whole lines of a text file, read as one block.

    Attributes:
        path: The file, for error messages.
        data: The bytes, ending at a line end (or at the end of the file).
        line_base: Lines of the file before this block.
        quote: Whether error messages may quote the file's text.
    """

    path: StrPath
    data: bytes
    line_base: int
    quote: bool = True

    @property
    def last_line(self) -> int:
        """1-based number of the block's last line."""
        return self.line_base + self.data.count(b"\n") + (not self.data.endswith(b"\n"))

    def first_data_line(self, comments: str) -> tuple[RowBlock, TextBlock] | None:
        """Split off the first line that is neither blank nor a comment.

        Returns:
            That line as a one-line :class:`RowBlock` and the rest of the block, or
            ``None`` when the block has no data line.
        """
        marks = tuple(c.encode("ascii") for c in comments)
        start, line_no = 0, self.line_base
        while start < len(self.data):
            end = self.data.find(b"\n", start)
            end = len(self.data) if end < 0 else end
            line_no += 1
            tokens = self.data[start:end].split()
            if tokens and not tokens[0].startswith(marks):
                head = RowBlock(
                    self.path, np.array([line_no]), np.array([len(tokens)]), tokens, self.quote
                )
                return head, TextBlock(self.path, self.data[end + 1 :], line_no, self.quote)
            start = end + 1
        return None

    def columns(self, comments: str, width: int) -> list[Any] | None:
        """Parse every data line as ``width`` numbers in C, or ``None`` if that fails.

        The first ``min(width, 2)`` columns are int64, a third is float64. ``None``
        sends the caller to :meth:`rows`, which finds and names the bad line.
        """
        text = self.data
        if any(c.encode("ascii") in text for c in comments):
            marks = tuple(c.encode("ascii") for c in comments)
            text = b"\n".join(
                b"" if line.lstrip().startswith(marks) else line for line in text.split(b"\n")
            )
        if not text.strip():
            return [np.empty(0, np.int64)] * 2 + [np.empty(0, np.float64)] * (width - 2)
        dtype = [("c0", "<i8"), ("c1", "<i8"), ("c2", "<f8")][:width]
        try:
            table = np.loadtxt(io.StringIO(text.decode("latin-1")), dtype=dtype, comments=None)
        except ValueError:
            return None
        table = np.atleast_1d(table)
        return [table[name] for name, _ in dtype]

    def rows(self, comments: str) -> RowBlock:
        """Tokenise the block in Python, keeping each data line's number (the careful path)."""
        codes = np.frombuffer(comments.encode("ascii"), dtype=np.uint8)
        block = _scan_block(self.path, self.data, self.line_base, codes)
        return block if self.quote else dataclasses.replace(block, quote=False)


def read_blocks(path: StrPath, *, quote: bool = True) -> Iterator[TextBlock]:
    """Yield a regular text file as blocks of whole lines.

    Args:
        path: The file.
        quote: Whether the blocks' error messages may quote the file's text.

    Raises:
        ValidationError: The file is not a regular file, cannot be read, or has a
            line longer than :data:`MAX_LINE_BYTES`.
    """
    line_base = 0
    try:
        with open_regular(path) as file:
            carry = b""
            while True:
                chunk = file.read(_BLOCK)
                data = carry + chunk
                if chunk:
                    cut = data.rfind(b"\n") + 1
                    if cut == 0 or len(data) - cut > MAX_LINE_BYTES:
                        _check_line_lengths(path, data[:cut], line_base, len(data) - cut)
                    if cut == 0:  # one line longer than a block: keep reading
                        carry = data
                        continue
                    data, carry = data[:cut], data[cut:]
                if data:
                    yield TextBlock(path, data, line_base, quote)
                    line_base += data.count(b"\n")
                if not chunk:
                    return
    except OSError as err:
        raise unreadable(path, err) from err


def _check_line_lengths(path: StrPath, whole: bytes, line_base: int, tail: int) -> None:
    """Refuse a line of more than :data:`MAX_LINE_BYTES`: ``tail`` bytes follow the
    last line end of ``whole`` (the whole lines read since ``line_base``)."""
    if tail > MAX_LINE_BYTES:
        line = line_base + whole.count(b"\n") + 1
        raise ValidationError(
            f"{os.fspath(path)} line {line}: longer than {MAX_LINE_BYTES:,} bytes",
            fix="write one edge or entry per line; a graph file's lines are a few numbers.",
        )


def unreadable(path: StrPath, err: OSError) -> ValidationError:
    """The error for a file that cannot be opened or read (or is not a regular file)."""
    return ValidationError(
        f"{os.fspath(path)} cannot be read: {err.strerror or err}",
        fix="check that the path names a readable regular file.",
    )


def excerpt(text: bytes) -> str:
    """``text`` decoded, cut to :data:`QUOTE_CHARS` characters (``...`` marks a cut)."""
    shown = text[: QUOTE_CHARS * 4].decode("utf-8", "replace")
    return shown if len(shown) <= QUOTE_CHARS else shown[: QUOTE_CHARS - 3] + "..."


def _scan_block(
    path: StrPath, data: bytes, line_base: int, comment_codes: npt.NDArray[np.uint8]
) -> RowBlock:
    raw = np.frombuffer(data, dtype=np.uint8)
    # The ASCII whitespace bytes.split() splits on: \t \n \v \f \r and space.
    blank = (raw == 32) | ((raw >= 9) & (raw <= 13))
    after_blank = np.ones(raw.size, dtype=bool)
    after_blank[1:] = blank[:-1]
    starts = np.flatnonzero(~blank & after_blank)
    newlines = np.flatnonzero(raw == 10)
    num_lines = newlines.size + (0 if data.endswith(b"\n") else 1)
    token_line = np.searchsorted(newlines, starts)
    counts = np.bincount(token_line, minlength=num_lines)
    first_token = np.cumsum(counts) - counts
    has_tokens = counts > 0
    first_byte = np.zeros(num_lines, dtype=np.uint8)
    first_byte[has_tokens] = raw[starts[first_token[has_tokens]]]
    is_data = has_tokens & ~np.isin(first_byte, comment_codes)
    tokens = data.split()
    if not is_data[has_tokens].all():
        tokens = list(itertools.compress(tokens, is_data[token_line].tolist()))
    lines = np.flatnonzero(is_data) + (line_base + 1)
    return RowBlock(path, lines, counts[is_data], tokens)
