"""Records a data user can open: every field in every chunk, read through pandas and
pyarrow, Parquet chunks, and full results stacked in one array file per chunk."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec
import numpy as np
import pytest
from graph_references import pagerank_float64, scipy_levels
from job_files import expected_reach, random_sources, rmat_graph, write_job

import vyre_async as va
from vyre_async.cli import main
from vyre_async.jobs import (
    BlockResult,
    ItemRecord,
    JobRunner,
    WorkloadSection,
    execute_block,
    load_job,
    open_item_arrays,
    read_item_array,
    read_records,
)
from vyre_async.jobs.output import ArrayRecords, ResultStore, record_layout
from vyre_async.sessions import ResidentGraphSession

LAYOUT = record_layout(["bfs"])

#: Every kind of item, a failed one among the reach items (source 7).
MIXED = [
    {"kind": "bfs", "readback": "levels", "sources": {"random": 30, "seed": 3}},
    {"kind": "khop", "k": 2, "readback": "levels", "sources": {"random": 10, "seed": 5}},
    {"kind": "reach", "sources": list(range(40))},
    {"kind": "pagerank"},
]
FAILING_SOURCE = 7
#: The columns of its records, in order.
FIELDS = list(record_layout(str(w["kind"]) for w in MIXED).fields)


async def _fail_one_source(
    session: ResidentGraphSession, workload: WorkloadSection, sources: np.ndarray
) -> BlockResult:
    if workload.kind == "reach" and FAILING_SOURCE in sources:
        raise va.ValidationError(f"source {FAILING_SOURCE} is refused", fix="none (a test).")
    return await execute_block(session, workload, sources)


def _run_mixed(folder: Path, chunk_format: str = "jsonl") -> Path:
    """MIXED with one failed item, run to completion in ``folder``: its output folder."""
    job = write_job(
        folder,
        MIXED,
        # format only where it is not the default, so the JSON-lines tests run on any version
        output={"commit_items": 8} | ({"format": chunk_format} if chunk_format != "jsonl" else {}),
        limits={"max_failed_items": 1, "retries": 0},
    )
    spec = load_job(job)
    summary = anyio.run(JobRunner(spec, job_file=job, execute=_fail_one_source).run)
    assert summary.status == "complete", summary.message
    return folder / "out"


def _chunk_files(out: Path) -> list[Path]:
    names = [c["name"] for c in json.loads((out / "manifest.json").read_text())["chunks"]]
    return [out / "chunks" / name for name in names]


def _check_against_references(records: list[ItemRecord], out: Path) -> None:
    """Reach counts, levels, k-hop ids and ranks against SciPy and float64 NumPy."""
    graph = rmat_graph()
    bfs = random_sources(30, 3, graph.num_vertices)
    khop = random_sources(10, 5, graph.num_vertices)
    with open_item_arrays(out) as arrays:
        for r in records:
            if r.kind == "reach":
                assert r.source == r.id - 40
                if r.source == FAILING_SOURCE:
                    assert not r.ok
                    assert r.error is not None
                    assert f"source {FAILING_SOURCE} is refused" in r.error
                    assert r.error_code == va.ValidationError.code
                    assert (r.reached, r.array) == (None, None)
                else:
                    assert r.ok
                    assert r.reached == expected_reach(graph, r.source)
            elif r.kind == "pagerank":
                assert r.array is not None
                ranks = arrays.read(r.array, r.id)
                np.testing.assert_allclose(ranks, pagerank_float64(graph, 0.85), atol=1e-6)
                assert r.top_vertex == int(np.argmax(ranks))
            elif r.kind == "bfs":
                assert r.source == bfs[r.id]
                assert r.array is not None
                want = scipy_levels(graph, bfs[r.id])
                np.testing.assert_array_equal(arrays.read(r.array, r.id), want)
                assert r.reached == int((want >= 0).sum())
            else:
                assert r.source == khop[r.id - 30]
                assert r.array is not None
                levels = scipy_levels(graph, khop[r.id - 30])
                want = np.flatnonzero((levels >= 0) & (levels <= 2))
                np.testing.assert_array_equal(arrays.read(r.array, r.id), want)


def test_every_json_line_of_every_chunk_carries_every_record_field(tmp_path: Path) -> None:
    """Counts, levels, PageRank and failed items alike: each line has all 15 keys."""
    out = _run_mixed(tmp_path)
    lines = [json.loads(line) for p in _chunk_files(out) for line in p.read_text().splitlines()]
    assert len(lines) == 30 + 10 + 40 + 1
    assert {line["kind"] for line in lines} == {"bfs", "khop", "reach", "pagerank"}
    assert any(line["ok"] is False for line in lines)
    for line in lines:
        assert list(line) == FIELDS
    pagerank = next(line for line in lines if line["kind"] == "pagerank")
    assert pagerank["source"] is None
    assert pagerank["attempts"] == 1


def test_pandas_and_pyarrow_read_each_json_lines_chunk_with_the_same_full_columns(
    tmp_path: Path,
) -> None:
    """pd.read_json and pyarrow.json on each chunk: every column, ok and attempts included."""
    pd = pytest.importorskip("pandas", reason="pandas is in the test extra; CI runs this")
    pj = pytest.importorskip("pyarrow.json", reason="pyarrow is in the test extra; CI runs this")
    out = _run_mixed(tmp_path)
    chunks = _chunk_files(out)
    assert len(chunks) >= 4
    for path in chunks:
        assert list(pd.read_json(path, lines=True).columns) == FIELDS, path.name
        assert pj.read_json(path).column_names == FIELDS, path.name


def test_read_records_as_arrow_has_every_field_as_a_typed_column_equal_to_the_records(
    tmp_path: Path,
) -> None:
    """as_="arrow": the records' values in columns of fixed types, SciPy's counts in them."""
    pa = pytest.importorskip("pyarrow", reason="pyarrow is in the test extra; CI runs this")
    out = _run_mixed(tmp_path)
    records = list(read_records(out))
    _check_against_references(records, out)
    table = read_records(out, as_="arrow")
    assert table.column_names == FIELDS
    types = {f.name: f.type for f in table.schema}
    assert types["id"] == types["reached"] == types["error_code"] == pa.int64()
    assert types["kind"] == types["array"] == types["error"] == pa.string()
    assert (types["ok"], types["top_rank"]) == (pa.bool_(), pa.float64())
    assert table.to_pylist() == [msgspec.structs.asdict(r) for r in records]


def test_read_records_as_pandas_gives_nullable_columns_with_na_where_a_field_does_not_apply(
    tmp_path: Path,
) -> None:
    """as_="pandas": all columns, Int64/boolean/string dtypes, pd.NA for fields not used."""
    pd = pytest.importorskip("pandas", reason="pandas is in the test extra; CI runs this")
    pytest.importorskip("pyarrow", reason="pyarrow is in the test extra; CI runs this")
    out = _run_mixed(tmp_path)
    records = list(read_records(out))
    frame = read_records(out, as_="pandas")
    assert list(frame.columns) == FIELDS
    assert str(frame["id"].dtype) == "Int64"
    assert str(frame["source"].dtype) == "Int64"
    assert str(frame["ok"].dtype) == "boolean"
    assert str(frame["top_rank"].dtype) == "Float64"
    assert isinstance(frame["kind"].dtype, pd.StringDtype)
    rows = [
        {k: None if v is pd.NA else v for k, v in row.items()}
        for row in frame.to_dict(orient="records")
    ]
    assert rows == [msgspec.structs.asdict(r) for r in records]
    pagerank = frame[frame["kind"] == "pagerank"].iloc[0]
    assert pagerank["source"] is pd.NA
    assert int(frame["ok"].sum()) == len(records) - 1
    with open_item_arrays(out) as arrays:
        row = frame[frame["kind"] == "bfs"].iloc[0]
        want = scipy_levels(rmat_graph(), int(row["source"]))
        np.testing.assert_array_equal(arrays.read(row["array"], row["id"]), want)


def test_a_parquet_job_writes_parquet_chunks_with_the_records_of_a_json_lines_job(
    tmp_path: Path,
) -> None:
    """format = "parquet": only .parquet chunks, each with every column; the same records
    and arrays as the JSON-lines run; a pyarrow dataset over chunks/ reads every item once."""
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is in the test extra")
    ds = pytest.importorskip("pyarrow.dataset", reason="pyarrow is in the test extra")
    (tmp_path / "j").mkdir()
    (tmp_path / "p").mkdir()
    json_out = _run_mixed(tmp_path / "j")
    parquet_out = _run_mixed(tmp_path / "p", "parquet")
    chunks = _chunk_files(parquet_out)
    assert chunks
    assert all(p.suffix == ".parquet" for p in chunks)
    assert sorted((parquet_out / "chunks").iterdir()) == sorted(chunks)
    for path in chunks:
        assert pq.read_table(path).column_names == FIELDS
    table = ds.dataset(parquet_out / "chunks", format="parquet").to_table()
    assert sorted(table.column("id").to_pylist()) == list(range(81))
    got = sorted(read_records(parquet_out), key=lambda r: r.id)
    want = sorted(read_records(json_out), key=lambda r: r.id)

    def same(r: ItemRecord) -> tuple[Any, ...]:
        # All but the array file's name (it holds the run's writer token) and run_ms.
        return tuple(getattr(r, f) for f in FIELDS if f not in ("array", "run_ms"))

    assert [same(r) for r in got] == [same(r) for r in want]
    _check_against_references(got, parquet_out)


def test_a_levels_job_stacks_each_chunks_arrays_in_one_file(tmp_path: Path) -> None:
    """200 levels items in chunks of >= 50: one array file per chunk, each item's levels
    read back from it equal to SciPy's."""
    job = write_job(
        tmp_path,
        [{"kind": "bfs", "readback": "levels", "sources": {"random": 200, "seed": 6}}],
        output={"commit_items": 50, "commit_interval_s": 60.0},
    )
    assert main(["run", str(job)]) == 0
    out = tmp_path / "out"
    manifest = json.loads((out / "manifest.json").read_text())
    chunks = manifest["chunks"]
    assert 3 <= len(chunks) <= 5
    files = sorted(p.name for p in (out / "arrays").iterdir())
    assert files == sorted(c["files"][0][0].removeprefix("arrays/") for c in chunks)
    assert all(len(c["files"]) == 1 for c in chunks)
    records = list(read_records(out))
    offset = 0
    for chunk in chunks:
        mine = records[offset : offset + chunk["records"]]
        offset += chunk["records"]
        assert {r.array for r in mine} == {chunk["files"][0][0]}
    graph = rmat_graph()
    sources = random_sources(200, 6, graph.num_vertices)
    with open_item_arrays(out) as arrays:
        for r in records:
            assert r.array is not None
            np.testing.assert_array_equal(
                arrays.read(r.array, r.id), scipy_levels(graph, sources[r.id])
            )


def test_item_arrays_refuse_an_unlisted_file_a_foreign_item_and_a_changed_file(
    tmp_path: Path,
) -> None:
    """ConfigurationError with a Fix for a file the manifest does not commit, an item the
    file does not hold, and a file changed since its commit (named, checksum)."""
    out = _run_mixed(tmp_path)
    record = next(r for r in read_records(out) if r.kind == "bfs")
    assert record.array is not None
    with open_item_arrays(out) as arrays:
        with pytest.raises(va.ConfigurationError, match="is not an array file") as info:
            arrays.read("arrays/000099-0badc0de.npz", record.id)
        assert "Fix:" in str(info.value)
        with pytest.raises(va.ConfigurationError, match="holds no array of item 999"):
            arrays.read(record.array, 999)
        with pytest.raises(TypeError, match="row\\['array'\\]"):
            arrays.read(None, record.id)  # type: ignore[arg-type]
    path = out / record.array
    data = bytearray(path.read_bytes())
    data[-100] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(va.ConfigurationError, match="checksum") as info:
        read_item_array(out, record.array, record.id)
    assert str(path) in str(info.value)
    assert "Fix:" in str(info.value)


def test_a_failed_item_never_names_an_array_and_each_cut_chunk_keeps_its_own_file(
    tmp_path: Path,
) -> None:
    """Store level: arrays appended across two cuts land in each chunk's own file; an
    array that travels with a failed item's record is dropped."""
    store = ResultStore.open(
        tmp_path / "o", layout=LAYOUT, job="j", fingerprint="f", total_items=6, resume=False
    )
    try:
        rows: list[np.ndarray | None] = [np.full(4, i, dtype=np.int32) for i in range(6)]
        records = [LAYOUT.record_type(i, 0, "bfs", i) for i in range(6)]
        records[4] = LAYOUT.record_type(4, 0, "bfs", 4, ok=False, error="lost", error_code=1)
        first = store.append_arrays([ArrayRecords(records[:3], rows[:3])])
        store.commit(first, 0, store.cut())
        second = store.append_arrays([ArrayRecords(records[3:], rows[3:])])
        assert all(isinstance(r, ItemRecord) for r in [*first, *second])
        assert second[1].array is None  # type: ignore[union-attr]
        store.commit(second, 1, store.cut())
    finally:
        store.close()
    out = tmp_path / "o"
    chunks = json.loads((out / "manifest.json").read_text())["chunks"]
    assert [len(c["files"]) for c in chunks] == [1, 1]
    assert {r.array for r in first} == {chunks[0]["files"][0][0]}  # type: ignore[union-attr]
    with open_item_arrays(out) as arrays:
        for r in read_records(out):
            if r.id == 4:
                assert r.array is None
            else:
                assert r.array is not None
                np.testing.assert_array_equal(arrays.read(r.array, r.id), rows[r.id])


def _without(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make ``names`` (and their submodules already imported) fail to import."""
    for loaded in list(sys.modules):
        if loaded.partition(".")[0] in names:
            monkeypatch.setitem(sys.modules, loaded, None)
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize(("missing", "as_"), [("pyarrow", "arrow"), ("pandas", "pandas")])
def test_without_the_library_read_records_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str, as_: Any
) -> None:
    """as_="arrow" without pyarrow, as_="pandas" without pandas: UnsupportedFeatureError
    naming the package, with a pip install Fix."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1]}])
    assert main(["run", str(job)]) == 0
    _without(monkeypatch, missing)
    with pytest.raises(va.UnsupportedFeatureError, match=f"needs {missing}") as info:
        read_records(tmp_path / "out", as_=as_)
    assert "Fix: install it: pip install" in str(info.value)
    assert len(list(read_records(tmp_path / "out"))) == 2  # plain records need neither


def test_a_parquet_job_without_pyarrow_is_refused_before_any_folder_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate and run exit 2 naming $.output.format and pyarrow, with a Fix; no folder."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1]}], output={"format": "parquet"})
    _without(monkeypatch, "pyarrow")
    for command in ("validate", "run"):
        assert main([command, str(job)]) == 2
        err = capsys.readouterr().err
        assert "$.output.format" in err
        assert "needs pyarrow" in err
        assert "Fix: install it: pip install 'vyre-async[parquet]'" in err
        assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_reading_parquet_chunks_without_pyarrow_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Parquet folder read (or resumed) without pyarrow: ConfigurationError with a Fix."""
    pytest.importorskip("pyarrow", reason="pyarrow is in the test extra; CI runs this")
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1]}], output={"format": "parquet"})
    assert main(["run", str(job)]) == 0
    _without(monkeypatch, "pyarrow")
    with pytest.raises(va.ConfigurationError, match="needs pyarrow") as info:
        list(read_records(tmp_path / "out"))
    assert ".parquet" in str(info.value)
    assert "Fix: install it" in str(info.value)


def test_resuming_a_folder_in_another_chunk_format_is_refused_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A JSON-lines folder resumed with format = "parquet": exit 2, both formats, a Fix;
    the folder unchanged."""
    pytest.importorskip("pyarrow", reason="pyarrow is in the test extra; CI runs this")
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1, 2]}])
    assert main(["run", str(job)]) == 0
    before = (tmp_path / "out" / "manifest.json").read_bytes()
    write_job(tmp_path, [{"kind": "reach", "sources": [0, 1, 2]}], output={"format": "parquet"})
    capsys.readouterr()
    assert main(["run", str(job), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "written as jsonl chunks; this run writes parquet" in err
    assert 'Fix: resume it with [output] format = "jsonl"' in err
    assert (tmp_path / "out" / "manifest.json").read_bytes() == before


def test_a_targets_readback_job_records_the_targets_levels(tmp_path: Path) -> None:
    """bfs and khop with readback = "targets": each item's array is its targets' levels,
    reached and max_level count over them (against SciPy)."""
    graph = rmat_graph()
    targets = [int(t) for t in random_sources(6, 11, graph.num_vertices)]
    job = write_job(
        tmp_path,
        [
            {"kind": "bfs", "readback": "targets", "targets": targets, "sources": [1, 2, 3]},
            {"kind": "khop", "k": 1, "readback": "targets", "targets": targets, "sources": [4]},
        ],
    )
    summary = anyio.run(JobRunner(load_job(job), job_file=job).run)
    assert summary.status == "complete", summary.message
    out = tmp_path / "out"
    with open_item_arrays(out) as arrays:
        for r in read_records(out):
            levels = scipy_levels(graph, r.source)[targets]
            if r.kind == "khop":
                levels = np.where(levels <= 1, levels, -1)
            assert r.array is not None
            np.testing.assert_array_equal(arrays.read(r.array, r.id), levels)
            assert r.reached == int((levels >= 0).sum())
            assert r.max_level == int(levels.max())


def test_a_targets_readback_without_targets_is_refused_before_the_run(tmp_path: Path) -> None:
    """readback = "targets" with no targets: a ConfigurationError naming the workload."""
    job = write_job(tmp_path, [{"kind": "bfs", "readback": "targets", "sources": [1]}])
    with pytest.raises(va.ConfigurationError, match=r"\$\.workload\[0\].*targets") as info:
        anyio.run(JobRunner(load_job(job), job_file=job).run)
    assert "Fix:" in str(info.value)
