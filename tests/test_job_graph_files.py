"""Job files naming SciPy matrices and edge tables as graphs, and sources in .npy/text files."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec
import numpy as np
import pytest
import scipy.sparse
from graph_references import scipy_levels
from job_files import committed, expected_reach, job_file, rmat_graph, write_job

from vyre_async.cli import main
from vyre_async.errors import ConfigurationError
from vyre_async.graphs import CsrGraph
from vyre_async.jobs import JobRunner, load_job
from vyre_async.jobs.graph import job_fingerprint
from vyre_async.jobs.graph._graph_source import load_job_graph

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
pa_csv = pytest.importorskip("pyarrow.csv", reason="pyarrow has no CSV support here")
pa_feather = pytest.importorskip("pyarrow.feather", reason="pyarrow has no Feather support here")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow has no Parquet support here")


async def _run(job: Path) -> list[Any]:
    spec = await anyio.to_thread.run_sync(load_job, job)
    summary = await JobRunner(spec, job_file=job).run()
    assert summary.status == "complete"
    return sorted(await committed(job.parent / "out"), key=lambda r: r.id)


def _write_sources_text(path: Path, sources: list[int]) -> None:
    """Sources as text: a comment, several per line, blank lines, trailing comments."""
    lines = ["# sources for the test", ""]
    for at in range(0, len(sources), 3):
        lines.append(" ".join(map(str, sources[at : at + 3])) + "  # three per line")
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("suffix", [".npy", ".txt"])
async def test_sources_from_a_file_run_as_listed_sources(
    tmp_path: Path, rng: np.random.Generator, suffix: str
) -> None:
    """Sources read from a .npy or text file give one record per id, counts equal SciPy's."""
    graph = rmat_graph()
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 40)]
    path = tmp_path / f"sources{suffix}"
    if suffix == ".npy":
        await anyio.to_thread.run_sync(np.save, path, np.array(sources, dtype=np.int32))
    else:
        await anyio.to_thread.run_sync(_write_sources_text, path, sources)
    job = await job_file(tmp_path, [{"kind": "bfs", "sources": path.name}])
    records = await _run(job)
    assert [r.source for r in records] == sources
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in sources]


def test_validate_counts_the_items_of_a_sources_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`vyre-async validate` reads the sources file: 25 ids are 25 items."""
    np.save(tmp_path / "s.npy", np.arange(25, dtype=np.uint16))
    job = write_job(tmp_path, [{"kind": "reach", "sources": "s.npy"}])
    assert main(["validate", str(job)]) == 0
    assert "25 item(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "content", "needles"),
    [
        ("absent.npy", None, ["cannot be read as a .npy array"]),
        ("absent.txt", None, ["cannot be read"]),
        ("grid.npy", np.zeros((2, 3), np.int64), ["shape (2, 3)", "1-D integer array"]),
        ("float.npy", np.array([1.0, 2.5]), ["dtype float64"]),
        ("neg.npy", np.array([3, -1]), ["entry 1 is -1", "negative"]),
        ("big.npy", np.array([2**63 + 1], np.uint64), ["entry 0 is 9223372036854775809"]),
        ("bad.txt", "1 2\n# note\n3 x 4\n", ["line 3: 'x' is not an integer vertex id"]),
        ("neg.txt", "4\n-2\n", ["entry 1 is -2"]),
        ("empty.txt", "# nothing here\n\n", ["lists no sources"]),
    ],
)
def test_bad_sources_files_name_the_workload_file_and_entry(
    tmp_path: Path, name: str, content: Any, needles: list[str]
) -> None:
    """A missing, misshapen or non-integer sources file is one ConfigurationError + Fix."""
    path = tmp_path / name
    if isinstance(content, np.ndarray):
        np.save(path, content)
    elif isinstance(content, str):
        path.write_text(content)
    job = write_job(tmp_path, [{"kind": "bfs", "sources": name}])
    with pytest.raises(ConfigurationError) as info:
        load_job(job)
    message = str(info.value)
    assert f"{job}: $.workload[0].sources" in message
    assert "Fix:" in message
    for needle in needles:
        assert needle in message


def test_a_changed_sources_file_changes_the_fingerprint(tmp_path: Path) -> None:
    """The job's fingerprint covers the ids in its sources file (so resume refuses a change)."""
    np.save(tmp_path / "s.npy", np.array([1, 2, 3]))
    job = write_job(tmp_path, [{"kind": "bfs", "sources": "s.npy"}])
    before = job_fingerprint(load_job(job), job)
    np.save(tmp_path / "s.npy", np.array([1, 2, 4]))
    assert job_fingerprint(load_job(job), job) != before


def _random_matrix(rng: np.random.Generator, n: int) -> scipy.sparse.csr_array:
    rows, cols = rng.integers(0, n, 6 * n), rng.integers(0, n, 6 * n)
    return scipy.sparse.coo_array((rng.random(6 * n) + 0.5, (rows, cols)), shape=(n, n)).tocsr()


@pytest.mark.parametrize("symmetric", [False, True])
def test_scipy_npz_graph_equals_from_scipy(
    tmp_path: Path, rng: np.random.Generator, symmetric: bool
) -> None:
    """kind = 'scipy_npz' loads a scipy.sparse.save_npz file as CsrGraph.from_scipy does."""
    matrix = _random_matrix(rng, 80)
    scipy.sparse.save_npz(tmp_path / "m.npz", matrix)
    graph = {"kind": "scipy_npz", "path": "m.npz", "symmetric": symmetric}
    job = write_job(tmp_path, [{"kind": "bfs", "sources": [0]}], graph=graph)
    loaded = load_job_graph(load_job(job), job)
    expected = CsrGraph.from_scipy(matrix, symmetric=symmetric)
    np.testing.assert_array_equal(loaded.offsets, expected.offsets)
    np.testing.assert_array_equal(loaded.indices, expected.indices)
    np.testing.assert_array_equal(loaded.weights, expected.weights)
    assert loaded.symmetric == symmetric


def _write_table(path: Path, src: np.ndarray, dst: np.ndarray, weights: np.ndarray) -> None:
    table = pa.table({"from": src, "to": dst, "cost": weights})
    if path.suffix == ".parquet":
        pq.write_table(table, path)
    elif path.suffix == ".feather":
        pa_feather.write_feather(table, path)
    else:
        pa_csv.write_csv(table, path)


@pytest.mark.parametrize("suffix", [".parquet", ".feather", ".csv"])
async def test_edge_table_job_runs_against_scipy(
    tmp_path: Path, rng: np.random.Generator, suffix: str
) -> None:
    """kind = 'table' reads the named columns; a BFS job on it equals SciPy's levels."""
    n = 60
    src, dst = rng.integers(0, n, 240), rng.integers(0, n, 240)
    weights = rng.integers(1, 9, 240).astype(np.float64)
    path = tmp_path / f"edges{suffix}"
    await anyio.to_thread.run_sync(_write_table, path, src, dst, weights)
    sources = [int(s) for s in rng.integers(0, int(max(src.max(), dst.max())) + 1, 12)]
    graph = {
        "kind": "table",
        "path": path.name,
        "src_column": "from",
        "dst_column": "to",
        "weight_column": "cost",
    }
    job = await job_file(tmp_path, [{"kind": "bfs", "sources": sources}], graph=graph)
    spec = await anyio.to_thread.run_sync(load_job, job)
    loaded = await anyio.to_thread.run_sync(load_job_graph, spec, job)
    expected = CsrGraph.from_edges(src, dst, weights=weights)
    np.testing.assert_array_equal(loaded.offsets, expected.offsets)
    np.testing.assert_array_equal(loaded.indices, expected.indices)
    np.testing.assert_array_equal(loaded.weights, expected.weights)
    records = await _run(job)
    for record, source in zip(records, sources, strict=True):
        assert record.reached == int((scipy_levels(expected, source) >= 0).sum())


@pytest.mark.parametrize(
    ("graph", "write", "needles"),
    [
        (
            {"kind": "table", "path": "e.parquet", "src_column": "nope"},
            True,
            ["$.graph.path", "columns nope, dst"],
        ),
        ({"kind": "table", "path": "e.xlsx"}, False, ["$.graph.path", "suffix '.xlsx'"]),
        ({"kind": "table", "path": "absent.parquet"}, False, ["cannot be read"]),
        (
            {"kind": "table", "path": "names.parquet", "src_column": "from", "dst_column": "to"},
            True,
            ["vertex ids must be integers", "renumber=True", "kind = 'npz'"],
        ),
        ({"kind": "scipy_npz", "path": "e.parquet"}, True, ["not a scipy.sparse.save_npz file"]),
    ],
    ids=["missing-column", "unknown-suffix", "absent-file", "string-ids", "not-scipy-npz"],
)
def test_unusable_graph_files_are_configuration_errors(
    tmp_path: Path, graph: dict[str, Any], write: bool, needles: list[str]
) -> None:
    """A table without its columns, of an unknown format, absent, or with string ids, and a
    file that is no SciPy matrix, each give one ConfigurationError + Fix."""
    if write:
        pq.write_table(pa.table({"from": [0, 1], "to": [1, 2]}), tmp_path / "e.parquet")
        pq.write_table(pa.table({"from": ["a", "b"], "to": ["b", "c"]}), tmp_path / "names.parquet")
    job = write_job(tmp_path, [{"kind": "bfs", "sources": [0]}], graph=graph)
    with pytest.raises(ConfigurationError) as info:
        load_job_graph(load_job(job), job)
    message = str(info.value)
    assert str(job) in message
    assert "Fix:" in message
    for needle in needles:
        assert needle in message


def test_column_fields_belong_to_tables_only(tmp_path: Path) -> None:
    """src_column on an R-MAT graph is refused when the job file is loaded."""
    job = write_job(tmp_path, [{"kind": "bfs", "sources": [0]}], graph={"src_column": "a"})
    with pytest.raises(ConfigurationError, match=r"\$\.graph\.src_column: only kind 'table'"):
        load_job(job)


def test_missing_pyarrow_names_the_package_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without pyarrow, a table graph says to pip install pyarrow."""
    graph = {"kind": "table", "path": "e.parquet"}
    job = write_job(tmp_path, [{"kind": "bfs", "sources": [0]}], graph=graph)
    spec = load_job(job)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ConfigurationError, match=r"needs pyarrow.*Fix: install it: pip install"):
        load_job_graph(spec, job)


def test_validate_accepts_scipy_and_table_graph_files_and_refuses_a_missing_one(
    tmp_path: Path, rng: np.random.Generator, capsys: pytest.CaptureFixture[str]
) -> None:
    """`vyre-async validate` passes the scipy_npz and table jobs a run accepts (it does
    not parse them as text edge lists), and refuses one whose file is missing."""
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    scipy.sparse.save_npz(tmp_path / "m.npz", _random_matrix(rng, 40))
    pq.write_table(pa.table({"from": [0, 1, 2], "to": [1, 2, 0]}), tmp_path / "e.parquet")
    for graph in (
        {"kind": "scipy_npz", "path": "m.npz"},
        {"kind": "table", "path": "e.parquet", "src_column": "from", "dst_column": "to"},
    ):
        job = write_job(tmp_path, [{"kind": "bfs", "sources": [0]}], graph=graph)
        assert main(["validate", str(job)]) == 0, capsys.readouterr().err
        missing = write_job(
            tmp_path, [{"kind": "bfs", "sources": [0]}], graph={**graph, "path": "gone"}
        )
        assert main(["validate", str(missing)]) == 2
        err = capsys.readouterr().err
        assert "gone cannot be read" in err
        assert "Fix:" in err


def test_a_sources_file_past_the_default_limit_is_read_once_the_job_raises_it(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """1,000,001 ids: refused by default, read as listed once max_sources_per_file allows."""
    ids = rng.integers(0, 256, 1_000_001)
    (tmp_path / "s.txt").write_text("\n".join(map(str, ids.tolist())) + "\n")
    job = write_job(tmp_path, [{"kind": "reach", "sources": "s.txt"}])
    with pytest.raises(ConfigurationError, match=r"more than the 1,000,000 sources.*Fix:"):
        load_job(job)
    raised = write_job(
        tmp_path,
        [{"kind": "reach", "sources": "s.txt"}],
        limits={"max_sources_per_file": 2_000_000},
    )
    assert load_job(raised).workload[0].sources == ids.tolist()


def test_a_sources_file_outside_the_job_folder_is_not_quoted(tmp_path: Path) -> None:
    """A bad token of a sources file outside the job's folder: its line, not its text."""
    (tmp_path / "secret.txt").write_text("1\ntop-secret-words\n")
    folder = tmp_path / "job"
    folder.mkdir()
    job = write_job(folder, [{"kind": "reach", "sources": "../secret.txt"}])
    with pytest.raises(
        ConfigurationError, match=r"line 2: a token there is not an integer"
    ) as info:
        load_job(job)
    assert "top-secret" not in str(info.value)


def test_validate_refuses_a_scipy_npz_graph_above_the_memory_limit(
    tmp_path: Path, rng: np.random.Generator, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate estimates a SciPy matrix's memory from its declared sizes, not its file's:
    a million rows (4 MB of indptr, compressed to kilobytes) do not fit 0.26 GiB."""
    n = 1_000_000
    rows, cols = rng.integers(0, n, 12), rng.integers(0, n, 12)
    matrix = scipy.sparse.coo_array((np.ones(12), (rows, cols)), shape=(n, n)).tocsr()
    scipy.sparse.save_npz(tmp_path / "m.npz", matrix)
    assert (tmp_path / "m.npz").stat().st_size < 100_000
    for gib, code in ((0.26, 2), (2.0, 0)):
        job = write_job(
            tmp_path,
            [{"kind": "bfs", "sources": [0]}],
            graph={"kind": "scipy_npz", "path": "m.npz"},
            limits={"max_host_memory_gib": gib},
        )
        assert main(["validate", str(job)]) == code
    assert "of host memory" in capsys.readouterr().err


def test_a_nul_byte_in_a_sources_path_set_from_python_is_refused_where_it_is_set(
    tmp_path: Path,
) -> None:
    """A spec made in Python: its NUL byte is named by the workload's own rules, on the
    line that sets it, not as a ValueError from deep inside a run."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": "ids.txt"}])
    (tmp_path / "ids.txt").write_text("0\n")
    spec = load_job(job)
    with pytest.raises(ValueError, match=r"^\.sources: a path may not hold a NUL byte$"):
        msgspec.structs.replace(spec.workload[0], sources="ids\x00.txt")
