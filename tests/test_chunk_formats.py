"""Chunk formats: one module per format, looked up by its name; no other module asks
which format it has."""

from __future__ import annotations

import ast
import io
from pathlib import Path
from typing import get_args, get_type_hints

import msgspec
import numpy as np
import pyarrow as pa
import pytest

import vyre_async as va
from vyre_async.jobs import OutputSection
from vyre_async.jobs.output import (
    ColumnRecords,
    ItemRecord,
    RecordLayout,
    RecordPart,
    chunk_format_named,
)
from vyre_async.jobs.output._chunk_formats import CHUNK_FORMATS
from vyre_async.jobs.output._layout import CHUNK_NAME, ChunkFormatName, chunk_name

PACKAGE = Path(va.__file__).resolve().parent
#: A layout of two int columns and a float one.
LAYOUT = RecordLayout(
    ("bfs", "khop", "reach"), (("reached", "int"), ("top_rank", "float"), ("max_level", "int"))
)
#: Modules (below vyre_async/) that may name a chunk format in code, and why.
NAMES_ALLOWED = {
    "jobs/output/_parquet.py": "the format's own module",
    "jobs/output/_layout.py": "the names a manifest may hold (its decode type)",
    "jobs/spec/_spec.py": "the names [output] format may hold",
    "jobs/output/_export.py": "export writes .csv or .parquet files, by the target's suffix",
    "jobs/graph/_graph_files.py": "edge tables read from .parquet files (an input, not a chunk)",
}


def _chunk(rng: np.random.Generator) -> tuple[list[RecordPart], list[ItemRecord]]:
    """Random parts (column blocks and failed items) and, independently, their records."""
    record_type = LAYOUT.record_type
    parts: list[RecordPart] = []
    expected: list[ItemRecord] = []
    next_id = 0
    for _ in range(int(rng.integers(1, 5))):
        size = int(rng.integers(1, 30))
        ids = np.arange(next_id, next_id + size, dtype=np.int64)
        sources = rng.integers(0, 2**40, size, dtype=np.int64)
        reached = rng.integers(0, 2**31, size, dtype=np.int64)
        run_ms = float(rng.uniform(0, 1e4))
        parts.append(
            ColumnRecords(
                record_type,
                ids,
                sources,
                {"reached": reached},
                workload=1,
                kind="reach",
                attempts=2,
                run_ms=run_ms,
            )
        )
        expected += [
            record_type(
                int(i), 1, "reach", int(s), attempts=2, batch=size, run_ms=run_ms, reached=int(r)
            )
            for i, s, r in zip(ids, sources, reached, strict=True)
        ]
        next_id += size
        failed = record_type(next_id, 0, "bfs", int(rng.integers(0, 99)), ok=False, error="x")
        parts.append(failed)
        expected.append(failed)
        next_id += 1
    return parts, expected


def _bytes(content: bytes | object) -> bytes:
    if isinstance(content, bytes):
        return content
    file = io.BytesIO()
    content(file)  # type: ignore[operator]
    return file.getvalue()


def test_the_spec_the_manifest_and_the_format_modules_name_the_same_formats() -> None:
    """[output] format, the manifest's type and the modules list one set of names, each a
    chunk file's suffix."""
    spec_names = get_args(get_type_hints(OutputSection)["format"])
    assert set(spec_names) == set(get_args(ChunkFormatName)) == set(CHUNK_FORMATS)
    for name, chunk_format in CHUNK_FORMATS.items():
        assert chunk_format.name == name
        assert chunk_format_named(name) is chunk_format
        match = CHUNK_NAME.match(chunk_name(7, "0123abcd", name))  # type: ignore[arg-type]
        assert match is not None
        assert match[3] == name


@pytest.mark.parametrize("name", sorted(CHUNK_FORMATS))
def test_a_format_reads_back_the_records_it_wrote(name: str, rng: np.random.Generator) -> None:
    """encode, then records and table: the records built from the parts, in order."""
    chunk_format = chunk_format_named(name)
    parts, expected = _chunk(rng)
    data = _bytes(chunk_format.encode(parts, LAYOUT))
    assert chunk_format.records(data, LAYOUT) == expected
    table = chunk_format.table(data, LAYOUT, pa)
    assert table.column_names == list(LAYOUT.fields)
    assert table.to_pylist() == [msgspec.to_builtins(r) for r in expected]


@pytest.mark.parametrize("name", sorted(CHUNK_FORMATS))
def test_a_format_refuses_bytes_that_are_not_its_records(name: str) -> None:
    """Another format's chunk, or a line of another layout: ValueError from both readers."""
    chunk_format = chunk_format_named(name)
    other = next(f for n, f in CHUNK_FORMATS.items() if n != name)
    parts = [LAYOUT.record_type(0, 0, "bfs", 3)]
    for data in (_bytes(other.encode(parts, LAYOUT)), b'{"id": 0, "shape": "odd"}\n'):
        with pytest.raises(ValueError):  # noqa: PT011  # each format has its own wording
            chunk_format.records(data, LAYOUT)
        with pytest.raises(ValueError):  # noqa: PT011
            chunk_format.table(data, LAYOUT, pa)


def chunk_formats_named_outside(package: Path) -> list[str]:
    """``path:line: 'name'`` for every string in code (not a docstring) that is Parquet's
    format name or suffix, outside the modules allowed to name it."""
    names = {"parquet", ".parquet"}
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel in NAMES_ALLOWED:
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        found += [
            f"{rel}:{node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and id(node) not in docstrings
            and isinstance(node.value, str)
            and node.value.lower() in names
        ]
    return found


def test_no_module_but_the_format_own_asks_whether_chunks_are_parquet() -> None:
    """The store, the verifier, the readers and check_job look the format up by name."""
    assert chunk_formats_named_outside(PACKAGE) == []


def test_the_format_name_check_finds_a_branch_on_a_format(tmp_path: Path) -> None:
    """The check is not blind: a module comparing a name with a format's is reported."""
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "_x.py").write_text(
        '"""Parquet in prose is fine."""\n'
        "def encode(name):\n"
        "    return name == 'parquet' or name.endswith('.parquet')\n"
    )
    found = chunk_formats_named_outside(tmp_path)
    assert found == ["jobs/_x.py:3: 'parquet'", "jobs/_x.py:3: '.parquet'"]
