"""`vyre-async export RUN --to FILE`: every committed record as CSV or Parquet, the
items' arrays in one .npz beside it, written atomically, never over a file by accident."""

from __future__ import annotations

import csv
import os
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_references import pagerank_float64, scipy_levels
from job_files import random_sources, rmat_graph, write_job
from run_folders import MIXED, chunk_lines, manifest, run_mixed

import vyre_async as va
from vyre_async.cli import main
from vyre_async.jobs import export_records
from vyre_async.jobs.output import ResultStore, record_layout

LAYOUT = record_layout(["reach"])

#: The columns of the mixed run (every kind), in order.
FIELDS = list(record_layout(str(w["kind"]) for w in MIXED).fields)


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete JSON-lines run of every kind of item, one failed."""
    return run_mixed(tmp_path_factory.mktemp("mixed"), tmp_path_factory)


def _csv_value(text: str, field: str) -> Any:
    """A CSV cell as the JSON value it stands for (the reference's types)."""
    if text == "":
        return None
    if field == "ok":
        return {"true": True, "false": False}[text]
    if field in ("top_rank", "run_ms"):
        return float(text)
    if field in ("kind", "array", "error"):
        return text
    return int(text)


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_export_csv_holds_every_committed_record_in_commit_order(
    mixed_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`export --to x.csv`: exit 0; a header of the 15 fields, then each record of the
    chunks the manifest lists, in its order, every value as the chunk holds it."""
    target = tmp_path / "records.csv"
    assert main(["export", str(mixed_run), "--to", str(target)]) == 0
    assert f"81 records written to {target}" in capsys.readouterr().out
    with target.open(newline="") as file:
        rows = list(csv.reader(file))
    assert rows[0] == FIELDS
    got = [
        {f: _csv_value(cell, f) for f, cell in zip(FIELDS, row, strict=True)} for row in rows[1:]
    ]
    assert got == chunk_lines(mixed_run)
    assert sum(r["ok"] is False for r in got) == 1


def test_export_csv_reads_back_in_pandas_with_every_column(mixed_run: Path, tmp_path: Path) -> None:
    """pandas.read_csv of the export: 81 rows, the 15 columns, ok as booleans."""
    pd = pytest.importorskip("pandas", reason="pandas is in the test extra; CI runs this")
    target = tmp_path / "records.csv"
    export_records(mixed_run, target)
    frame = pd.read_csv(target)
    assert list(frame.columns) == FIELDS
    assert len(frame) == 81
    assert frame["ok"].dtype == bool
    assert int((~frame["ok"]).sum()) == 1


def test_export_writes_each_items_array_to_one_npz_beside_it(
    mixed_run: Path, tmp_path: Path
) -> None:
    """records.csv -> records.arrays.npz: one member per item with an array, named by its
    id, equal to SciPy's levels, 2-hop ids and float64 PageRank."""
    done = export_records(mixed_run, tmp_path / "records.csv")
    assert done.arrays_path == str(tmp_path / "records.arrays.npz")
    assert (done.records, done.arrays) == (81, 41)
    graph = rmat_graph()
    bfs = random_sources(30, 3, graph.num_vertices)
    khop = random_sources(10, 5, graph.num_vertices)
    with np.load(tmp_path / "records.arrays.npz", allow_pickle=False) as arrays:
        assert sorted(arrays.files, key=int) == [str(i) for i in [*range(40), 80]]
        for i in range(30):
            np.testing.assert_array_equal(arrays[str(i)], scipy_levels(graph, bfs[i]))
        for i in range(30, 40):
            levels = scipy_levels(graph, khop[i - 30])
            want = np.flatnonzero((levels >= 0) & (levels <= 2))
            np.testing.assert_array_equal(arrays[str(i)], want)
        np.testing.assert_allclose(arrays["80"], pagerank_float64(graph, 0.85), atol=1e-6)


def test_export_of_a_run_without_arrays_writes_no_npz(tmp_path: Path) -> None:
    """Count items only: the records file alone, arrays_path None."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1, 2]}])
    assert main(["run", str(job)]) == 0
    (tmp_path / "x").mkdir()
    done = export_records(tmp_path / "out", tmp_path / "x" / "r.csv")
    assert (done.records, done.arrays_path, done.arrays) == (3, None, 0)
    assert _listing(tmp_path / "x") == ["r.csv"]


def test_export_parquet_holds_the_records_with_read_records_arrow_schema(
    mixed_run: Path, tmp_path: Path
) -> None:
    """--to x.parquet: pyarrow reads the 81 records in commit order, typed as
    read_records(as_="arrow") types them."""
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is in the test extra")
    target = tmp_path / "records.parquet"
    done = export_records(mixed_run, target)
    assert done.arrays_path == str(tmp_path / "records.arrays.npz")
    table = pq.read_table(target)
    assert table.schema.equals(va.jobs.read_records(mixed_run, as_="arrow").schema)
    assert table.to_pylist() == chunk_lines(mixed_run)


def test_export_of_a_parquet_run_to_csv_holds_its_records(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A Parquet folder exported to CSV: the records its chunks hold, read by pyarrow."""
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is in the test extra")
    out = run_mixed(tmp_path_factory.mktemp("parquet"), tmp_path_factory, "parquet")
    export_records(out, tmp_path / "r.csv")
    want = [
        row
        for chunk in manifest(out)["chunks"]
        for row in pq.read_table(out / "chunks" / chunk["name"]).to_pylist()
    ]
    with (tmp_path / "r.csv").open(newline="") as file:
        rows = list(csv.DictReader(file))
    assert [{f: _csv_value(row[f], f) for f in FIELDS} for row in rows] == want


def test_export_refuses_an_existing_file_and_replaces_it_with_force(
    mixed_run: Path, tmp_path: Path
) -> None:
    """An existing records or arrays file: ConfigurationError with a fix, both files as
    they were; force=True replaces both."""
    target = tmp_path / "r.csv"
    for existing in (target, tmp_path / "r.arrays.npz"):
        existing.write_text("mine")
        with pytest.raises(va.ConfigurationError, match="exists") as info:
            export_records(mixed_run, target)
        assert str(existing) in str(info.value)
        assert "Fix: pass --force" in str(info.value)
        assert existing.read_text() == "mine"
        existing.unlink()
    target.write_text("mine")
    (tmp_path / "r.arrays.npz").write_text("mine")
    export_records(mixed_run, target, force=True)
    assert target.read_text().startswith("id,workload,kind")
    with np.load(tmp_path / "r.arrays.npz", allow_pickle=False) as arrays:
        assert len(arrays.files) == 41
    assert _listing(tmp_path) == ["r.arrays.npz", "r.csv"]


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("records.txt", "its extension '.txt' names no format. Fix: name the file .csv"),
        ("records", "its extension '(none)' names no format"),
        ("nowhere/records.csv", "does not exist. Fix: create it first"),
        ("RUN/records.csv", "inside the run's output folder"),
    ],
)
def test_export_to_a_file_it_cannot_write_exits_2_with_a_fix(
    tmp_path: Path,
    mixed_run: Path,
    name: str,
    says: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Another extension, a missing folder, a file inside the run: exit 2, a message
    with a fix, no traceback, nothing written."""
    target = str(mixed_run / name[4:]) if name.startswith("RUN/") else str(tmp_path / name)
    before = _listing(mixed_run)
    assert main(["export", str(mixed_run), "--to", target]) == 2
    err = capsys.readouterr().err
    assert says in err
    assert "Fix:" in err
    assert "Traceback" not in err
    assert _listing(tmp_path) == [] or name.startswith("RUN/")
    assert _listing(mixed_run) == before


def test_export_of_a_folder_without_a_job_exits_2_with_a_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder with no manifest: exit 2, the fix, no file written."""
    (tmp_path / "run").mkdir()
    assert main(["export", str(tmp_path / "run"), "--to", str(tmp_path / "r.csv")]) == 2
    err = capsys.readouterr().err
    assert "Fix: pass the output folder of a vyre-async job" in err
    assert "Traceback" not in err
    assert _listing(tmp_path) == ["run"]


def test_export_to_parquet_without_pyarrow_names_the_parquet_extra(
    mixed_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No pyarrow: ConfigurationError naming pyarrow and the parquet extra; no file."""
    for loaded in list(sys.modules):
        if loaded.partition(".")[0] == "pyarrow":
            monkeypatch.setitem(sys.modules, loaded, None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(va.ConfigurationError, match="needs pyarrow") as info:
        export_records(mixed_run, tmp_path / "r.parquet")
    assert "Fix: install it: pip install 'vyre-async[parquet]'" in str(info.value)
    assert _listing(tmp_path) == []


def test_export_of_a_damaged_run_leaves_no_file_behind(tmp_path: Path) -> None:
    """The last chunk changed since its commit: ConfigurationError naming it, and neither
    the export nor a temporary file is left (the earlier chunks were written first)."""
    job = write_job(
        tmp_path,
        [{"kind": "bfs", "readback": "levels", "sources": list(range(40))}],
        output={"commit_items": 8, "commit_interval_s": 60.0},
    )
    assert main(["run", str(job)]) == 0
    out = tmp_path / "out"
    last = out / "chunks" / manifest(out)["chunks"][-1]["name"]
    last.write_bytes(last.read_bytes().replace(b'"ok":true', b'"ok":fals', 1))
    (tmp_path / "x").mkdir()
    with pytest.raises(va.ConfigurationError, match="checksum") as info:
        export_records(out, tmp_path / "x" / "r.csv")
    assert str(last) in str(info.value)
    assert _listing(tmp_path / "x") == []


def test_export_holds_one_chunk_of_records_in_memory_at_a_time(tmp_path: Path) -> None:
    """20 chunks of 1,000 records: the export's peak traced memory stays under a third
    of what reading all 20,000 records at once takes (one chunk is a twentieth)."""
    chunks, per_chunk = 20, 1000
    total = chunks * per_chunk
    store = ResultStore.open(
        tmp_path / "o", layout=LAYOUT, job="j", fingerprint="f", total_items=total, resume=False
    )
    try:
        for c in range(chunks):
            ids = range(c * per_chunk, (c + 1) * per_chunk)
            store.commit([LAYOUT.record_type(i, 0, "reach", i, reached=i % 97 + 1) for i in ids])
    finally:
        store.close()
    tracemalloc.start()
    try:
        everything = list(va.jobs.read_records(tmp_path / "o"))
        all_at_once = tracemalloc.get_traced_memory()[1]
        del everything
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        done = export_records(tmp_path / "o", tmp_path / "r.csv")
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert done.records == total
    assert peak < all_at_once / 3, (peak, all_at_once)
    assert os.path.getsize(tmp_path / "r.csv") > 0
