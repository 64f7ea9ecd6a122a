"""`vyre-async show RUN`: a run's summary and its first records as an aligned table."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from run_folders import MIXED, chunk_lines, manifest, run_mixed

from vyre_async.cli import main
from vyre_async.jobs import describe_run
from vyre_async.jobs.output import ResultStore, record_layout

LAYOUT = record_layout(["reach"])


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete JSON-lines run of every kind of item, one failed."""
    return run_mixed(tmp_path_factory.mktemp("mixed"), tmp_path_factory)


def _table(out: str) -> tuple[list[str], list[dict[str, str]]]:
    """The table's lines (header, rule, rows) and each row as column -> cell."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("records ")) + 1
    table = lines[start:]
    header = table[0].split()
    rows = [dict(zip(header, re.split(r" {2,}", line.strip()), strict=True)) for line in table[2:]]
    return table, rows


def _cell(value: Any) -> str:
    """How the table shows a JSON value, for the columns compared."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def test_show_prints_the_summary_and_the_first_records_in_commit_order(
    mixed_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 0; job, fingerprint, counts, complete, format and the device from the
    manifest and summary.json; then the first 12 committed records, one aligned row each."""
    assert main(["show", str(mixed_run), "--limit", "12"]) == 0
    out = capsys.readouterr().out
    written = manifest(mixed_run)
    summary = json.loads((mixed_run / "summary.json").read_text())
    assert "job:         'test-job'" in out
    assert f"fingerprint: {written['fingerprint']}" in out
    assert "items:       81 of 81 committed, 1 failed" in out
    assert "complete:    yes" in out
    assert f"format:      jsonl, {len(written['chunks'])} chunk(s)" in out
    assert f"complete on cpu ({summary['device']})" in out
    assert "records 1-12 of 81, in commit order (--limit N shows more):" in out
    table, rows = _table(out)
    assert len({len(line) for line in table}) == 1  # every line as wide: aligned
    want = chunk_lines(mixed_run)[:12]
    assert len(rows) == 12
    for row, record in zip(rows, want, strict=True):
        for column in ("id", "workload", "kind", "source", "ok", "reached", "array"):
            assert row[column] == _cell(record[column]), (column, record)


def test_show_leaves_out_columns_that_no_row_shown_uses(
    mixed_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--limit 5: the columns are the fields some shown record sets, plus id, kind and
    ok (so a few rows of one kind leave most of the 15 fields out)."""
    assert main(["show", str(mixed_run), "--limit", "5"]) == 0
    table, _ = _table(capsys.readouterr().out)
    shown = chunk_lines(mixed_run)[:5]
    used = {name for record in shown for name, value in record.items() if value is not None}
    fields = record_layout(str(w["kind"]) for w in MIXED).fields
    assert table[0].split() == [name for name in fields if name in used | {"id", "kind", "ok"}]
    assert len(table[0].split()) < len(fields)


def test_show_lists_a_failed_item_with_its_error(mixed_run: Path) -> None:
    """--limit 81: the failed reach item's row says ok false and starts its error text."""
    _, rows = _table(describe_run(mixed_run, limit=81))
    assert len(rows) == 81
    failed = [row for row in rows if row["ok"] == "false"]
    assert len(failed) == 1
    assert failed[0]["source"] == "7"
    assert failed[0]["error"].startswith("source 7 is refused")
    assert failed[0]["reached"] == "-"


def test_show_reads_a_parquet_run(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Parquet folder: its first records, as pyarrow reads them from its first chunk."""
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is in the test extra")
    out = run_mixed(tmp_path_factory.mktemp("parquet"), tmp_path_factory, "parquet")
    assert main(["show", str(out), "--limit", "4"]) == 0
    text = capsys.readouterr().out
    assert "format:      parquet" in text
    first = manifest(out)["chunks"][0]["name"]
    want = pq.read_table(out / "chunks" / first).to_pylist()[:4]
    _, rows = _table(text)
    assert [row["id"] for row in rows] == [str(r["id"]) for r in want]
    assert [row["source"] for row in rows] == [_cell(r["source"]) for r in want]


def test_show_of_an_incomplete_run_says_what_is_committed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """3 of 6 items committed, no summary.json (a run killed): both said, 3 rows."""
    store = ResultStore.open(
        tmp_path / "o", layout=LAYOUT, job="j", fingerprint="f", total_items=6, resume=False
    )
    try:
        store.commit([LAYOUT.record_type(i, 0, "reach", 10 + i, reached=i + 1) for i in (4, 0, 2)])
    finally:
        store.close()
    assert main(["show", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "items:       3 of 6 committed, 0 failed" in out
    assert "complete:    no" in out
    assert "last run:    no readable summary.json" in out
    assert "records 1-3 of 3, in commit order:" in out
    _, rows = _table(out)
    assert [(r["id"], r["source"], r["reached"]) for r in rows] == [
        ("4", "14", "5"),
        ("0", "10", "1"),
        ("2", "12", "3"),
    ]


def test_show_limit_0_prints_the_summary_alone(
    mixed_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--limit 0: the summary lines and no table."""
    assert main(["show", str(mixed_run), "--limit", "0"]) == 0
    out = capsys.readouterr().out
    assert "complete:    yes" in out
    assert "records" not in out


@pytest.mark.parametrize("limit", ["-1", "many"])
def test_show_refuses_a_limit_that_is_not_a_count(
    mixed_run: Path, limit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--limit -1 or a word: usage error, exit 2, naming the value."""
    with pytest.raises(SystemExit) as info:
        main(["show", str(mixed_run), "--limit", limit])
    assert info.value.code == 2
    assert repr(limit) in capsys.readouterr().err


@pytest.mark.parametrize("folder", ["missing", "not-a-job"])
def test_show_of_a_folder_without_a_job_exits_2_with_a_fix(
    tmp_path: Path, folder: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder that does not exist or holds no manifest: exit 2, one message with a fix,
    no traceback, nothing on standard output."""
    (tmp_path / "not-a-job").mkdir()
    (tmp_path / "not-a-job" / "notes.txt").write_text("mine")
    assert main(["show", str(tmp_path / folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert str(tmp_path / folder) in captured.err
    assert "Fix: pass the output folder of a vyre-async job" in captured.err
    assert "Traceback" not in captured.err
