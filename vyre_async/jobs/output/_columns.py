"""Records as columns: the Arrow schema of a folder's records, Arrow tables, pandas.

pyarrow and pandas are optional: they are imported when a Parquet chunk is written
or read (see :mod:`._parquet`) or a table is asked for, and a missing one is
reported with the package to install (:func:`optional`). Every chunk of a folder has
the same schema (:func:`arrow_schema` of its :class:`~._records.RecordLayout`),
whichever fields its items use: integers
are ``int64``, ``kind``, ``array`` and ``error`` are strings, ``run_ms`` and the
kinds' float columns are ``float64``, ``ok`` is a boolean; a field that does not
apply to an item is null.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import msgspec

from ...algorithms import kind_names
from ...errors import VyreError
from ._records import ItemRecord, RecordLayout

_STRINGS = {"kind", "array", "error"}
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


def arrow_schema(pa: Any, layout: RecordLayout) -> Any:
    """The Arrow schema of a table of ``layout``'s records (``pa`` is the pyarrow module)."""
    floats = {"run_ms", *(name for name, kind in layout.columns if kind == "float")}

    def kind(name: str) -> Any:
        if name in _STRINGS:
            return pa.string()
        if name in floats:
            return pa.float64()
        return pa.bool_() if name == "ok" else pa.int64()

    return pa.schema([pa.field(n, kind(n), nullable=n not in _NOT_NULL) for n in layout.fields])


def records_table(pa: Any, records: Sequence[ItemRecord], layout: RecordLayout) -> Any:
    """A ``pyarrow.Table`` of ``records``, one column per field (:func:`arrow_schema`)."""
    return json_lines_table(pa, _encoder.encode_lines(records), layout)


def json_lines_table(pa: Any, data: bytes, layout: RecordLayout) -> Any:
    """A ``pyarrow.Table`` of ``layout``'s records encoded as JSON lines (a chunk's
    bytes), checked.

    pyarrow's JSON reader parses without holding the GIL, so the event loop and the
    workers keep running while a committer thread turns a chunk into columns (a
    job writing Parquet ran about 20% faster this way than building the columns
    from the records in Python).

    Raises:
        ValueError: The lines are not records (see :func:`check_table`).
    """
    schema = arrow_schema(pa, layout)
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
        table = table.select(list(layout.fields)).cast(schema)
    except (ValueError, KeyError, pa.ArrowException) as exc:
        raise ValueError(f"its lines are not records ({exc})") from None
    check_table(pa, table, layout)
    return table


def table_records(pa: Any, table: Any, layout: RecordLayout) -> list[ItemRecord]:
    """The records of a table of :func:`arrow_schema` (a Parquet chunk read back).

    Raises:
        ValueError: The table has other columns or types, a null where a record
            has none, or a kind the layout does not name.
    """
    table = check_table(pa, table, layout)
    columns = table.to_pydict()
    record_type, fields = layout.record_type, layout.fields
    return [record_type(*row) for row in zip(*(columns[name] for name in fields), strict=True)]


def check_table(pa: Any, table: Any, layout: RecordLayout) -> Any:
    """Refuse a table that is not one of ``layout``'s records (see
    :func:`table_records`); return it with its columns in the layout's order."""
    schema = arrow_schema(pa, layout)
    if set(table.schema.names) != set(schema.names) or len(table.schema) != len(schema):
        got = ", ".join(f"{f.name}: {f.type}" for f in table.schema)
        raise ValueError(f"its columns are {got}, not those of this folder's records")
    table = table.select(list(schema.names))
    if not table.schema.equals(schema):
        got = ", ".join(f"{f.name}: {f.type}" for f in table.schema)
        raise ValueError(f"its columns are {got}, not those of this folder's records")
    for name in _NOT_NULL:
        if table.column(name).null_count:
            raise ValueError(f"its column {name!r} holds nulls")
    kinds = set(table.column("kind").unique().to_pylist())
    known = set(layout.kinds or kind_names())
    if not kinds <= known:
        raise ValueError(f"its column 'kind' holds {sorted(kinds - known)}")
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
