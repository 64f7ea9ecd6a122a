"""Records as columns: the Arrow schema of :class:`ItemRecord`, Parquet chunks, pandas.

pyarrow and pandas are optional: they are imported here, when a Parquet chunk is
written or read or a table is asked for, and a missing one is reported with the
package to install. Every chunk has the same schema (:func:`arrow_schema`),
whichever fields its items use: integers are ``int64``, ``kind``, ``array`` and
``error`` are strings, ``top_rank`` and ``run_ms`` are ``float64``, ``ok`` is a
boolean; a field that does not apply to an item is null.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import msgspec

from ..algorithms import kind_names
from ..errors import ConfigurationError, VyreError
from ._records import ItemRecord

#: The record's fields, in order: the columns of every table and chunk.
FIELDS: tuple[str, ...] = ItemRecord.__struct_fields__
_STRINGS = {"kind", "array", "error"}
_FLOATS = {"top_rank", "run_ms"}
_NOT_NULL = {"id", "workload", "kind", "ok", "attempts", "batch", "run_ms"}
_encoder = msgspec.json.Encoder()
PYARROW_FIX = "install it: pip install 'vyre-async[parquet]' (or pip install pyarrow)"


def optional(name: str, needed_for: str, error: type[VyreError], fix: str = PYARROW_FIX) -> Any:
    """Import ``name`` (``"pyarrow.parquet"``), or raise ``error`` saying what to install."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        package = name.partition(".")[0]
        raise error(
            f"{needed_for} needs {package}, which cannot be imported ({exc})", fix=fix
        ) from None


def arrow_schema(pa: Any) -> Any:
    """The Arrow schema of a table of records (``pa`` is the pyarrow module)."""

    def kind(name: str) -> Any:
        if name in _STRINGS:
            return pa.string()
        if name in _FLOATS:
            return pa.float64()
        return pa.bool_() if name == "ok" else pa.int64()

    return pa.schema([pa.field(n, kind(n), nullable=n not in _NOT_NULL) for n in FIELDS])


def records_table(pa: Any, records: Sequence[ItemRecord]) -> Any:
    """A ``pyarrow.Table`` of ``records``, one column per field (:func:`arrow_schema`)."""
    return json_lines_table(pa, _encoder.encode_lines(records))


def json_lines_table(pa: Any, data: bytes) -> Any:
    """A ``pyarrow.Table`` of records encoded as JSON lines (a chunk's bytes), checked.

    pyarrow's JSON reader parses without holding the GIL, so the event loop and the
    workers keep running while a committer thread turns a chunk into columns (a
    job writing Parquet ran about 20% faster this way than building the columns
    from the records in Python).

    Raises:
        ValueError: The lines are not records (see :func:`check_table`).
    """
    schema = arrow_schema(pa)
    if not data.strip():
        return schema.empty_table()
    pj = importlib.import_module("pyarrow.json")
    # A block must hold a whole line; error messages make the odd line long.
    longest = max(map(len, data.split(b"\n")))
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(block_size=max(1 << 20, longest + 1)),
            parse_options=pj.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="error"
            ),
        )
        table = table.select(list(FIELDS)).cast(schema)
    except (ValueError, KeyError, pa.ArrowException) as exc:
        raise ValueError(f"its lines are not records ({exc})") from None
    check_table(pa, table)
    return table


def table_records(pa: Any, table: Any) -> list[ItemRecord]:
    """The records of a table of :func:`arrow_schema` (a Parquet chunk read back).

    Raises:
        ValueError: The table has other columns or types, a null where a record
            has none, or an unknown ``kind``.
    """
    check_table(pa, table)
    columns = table.to_pydict()
    return [ItemRecord(*row) for row in zip(*(columns[name] for name in FIELDS), strict=True)]


def check_table(pa: Any, table: Any) -> None:
    """Refuse a table that is not one of records (see :func:`table_records`)."""
    schema = arrow_schema(pa)
    if not table.schema.equals(schema):
        got = ", ".join(f"{f.name}: {f.type}" for f in table.schema)
        raise ValueError(f"its columns are {got}, not those of vyre-async records")
    for name in _NOT_NULL:
        if table.column(name).null_count:
            raise ValueError(f"its column {name!r} holds nulls")
    kinds = set(table.column("kind").unique().to_pylist())
    known = set(kind_names())
    if not kinds <= known:
        raise ValueError(f"its column 'kind' holds {sorted(kinds - known)}")


def parquet_bytes(lines: bytes) -> bytes:
    """Records encoded as JSON lines, as a Parquet file (pyarrow's defaults: Snappy)."""
    pa = optional("pyarrow", "writing Parquet chunks", ConfigurationError)
    pq = optional("pyarrow.parquet", "writing Parquet chunks", ConfigurationError)
    sink = pa.BufferOutputStream()
    pq.write_table(json_lines_table(pa, lines), sink)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def parquet_table(pa: Any, pq: Any, data: bytes) -> Any:
    """The table of a Parquet chunk's bytes, checked (see :func:`check_table`).

    Raises:
        ValueError: The bytes are not Parquet, or not a table of records.
    """
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise ValueError(f"is not a Parquet file ({exc})") from None
    check_table(pa, table)
    return table


def to_pandas(table: Any, pd: Any) -> Any:
    """A DataFrame of a table of records, with pandas' nullable dtypes.

    ``Int64``, ``boolean``, ``string`` and ``Float64``: a missing value is ``pd.NA``
    in every column, and integer columns stay integers where some are null.
    """
    pa = importlib.import_module("pyarrow")
    dtypes = {
        pa.int64(): pd.Int64Dtype(),
        pa.bool_(): pd.BooleanDtype(),
        pa.string(): pd.StringDtype(),
        pa.float64(): pd.Float64Dtype(),
    }
    return table.to_pandas(types_mapper=dtypes.get)
