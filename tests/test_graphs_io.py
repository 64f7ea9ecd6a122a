"""Graph files: edge lists, Matrix Market and .npz round trips, and malformed-file errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.io
import scipy.sparse

from vyre_async.errors import ValidationError
from vyre_async.graphs import (
    CsrGraph,
    _text,
    load_edge_list,
    load_graph,
    load_matrix_market,
    load_npz,
    read_graph_header,
    save_npz,
)


def assert_matches(graph: CsrGraph, ref: scipy.sparse.sparray, *, weighted: bool) -> None:
    """The graph has the reference's structure (and values, when weighted)."""
    csr = scipy.sparse.csr_array(ref)
    csr.sum_duplicates()
    csr.sort_indices()
    np.testing.assert_array_equal(graph.offsets, csr.indptr)
    np.testing.assert_array_equal(graph.indices, csr.indices)
    if weighted:
        assert graph.weights is not None
        np.testing.assert_allclose(graph.weights, csr.data, rtol=1e-6)
    else:
        assert graph.weights is None


def distinct_edges(
    rng: np.random.Generator, n: int, m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``m`` distinct random pairs over ``n`` vertices, with random weights."""
    keys = rng.choice(n * n, size=m, replace=False)
    return keys // n, keys % n, rng.standard_normal(m)


def test_edge_list_skips_comments_and_blank_lines(rng: np.random.Generator, tmp_path: Path) -> None:
    """Comment lines (# or %), blank lines, tabs, CRLF and leading spaces are all accepted."""
    src, dst, _ = distinct_edges(rng, 30, 100)
    lines = ["# header comment", ""]
    for i, (u, v) in enumerate(zip(src, dst, strict=True)):
        lines.append(f"  {u}\t{v}\r" if i % 3 == 0 else f"{u} {v}")
        if i % 17 == 0:
            lines += ["% another comment 1 2 3", "   "]
    path = tmp_path / "g.txt"
    path.write_text("\n".join(lines))
    graph = load_edge_list(path, num_vertices=30)
    assert_matches(
        graph, scipy.sparse.coo_array((np.ones(100), (src, dst)), (30, 30)), weighted=False
    )


def test_edge_list_third_column_becomes_weights(rng: np.random.Generator, tmp_path: Path) -> None:
    """'src dst weight' lines give float32 weights in CSR order."""
    src, dst, w = distinct_edges(rng, 25, 80)
    path = tmp_path / "w.edges"
    path.write_text("".join(f"{u} {v} {float(x)!r}\n" for u, v, x in zip(src, dst, w, strict=True)))
    graph = load_graph(path)
    assert_matches(graph, scipy.sparse.coo_array((w, (src, dst)), (25, 25)), weighted=True)


def test_edge_list_symmetric_and_vertex_count(rng: np.random.Generator, tmp_path: Path) -> None:
    """symmetric=True adds reverse edges; num_vertices keeps trailing isolated vertices."""
    src, dst, _ = distinct_edges(rng, 10, 30)
    path = tmp_path / "s.txt"
    path.write_text("".join(f"{u} {v}\n" for u, v in zip(src, dst, strict=True)))
    graph = load_edge_list(path, num_vertices=15, symmetric=True)
    a = scipy.sparse.coo_array((np.ones(30), (src, dst)), (15, 15)).tocsr()
    expected = (a + a.T).tocsr()
    expected.data[:] = 1
    assert_matches(graph, expected, weighted=False)
    assert graph.symmetric


def test_edge_list_of_only_comments_is_the_empty_graph(tmp_path: Path) -> None:
    """A file with no edge lines loads as a graph with no edges."""
    path = tmp_path / "empty.txt"
    path.write_text("# nothing here\n\n")
    assert load_edge_list(path).num_vertices == 0
    assert load_edge_list(path, num_vertices=4).num_edges == 0


def test_edge_list_spanning_many_blocks_keeps_line_numbers(
    rng: np.random.Generator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tiny read blocks give the same graph, and an error deep in the file names its line."""
    monkeypatch.setattr(_text, "_BLOCK", 16)
    src, dst, _ = distinct_edges(rng, 40, 200)
    lines = ["# c"] + [f"{u} {v}" for u, v in zip(src, dst, strict=True)]
    path = tmp_path / "long.txt"
    path.write_text("\n".join(lines) + "\n")
    graph = load_edge_list(path, num_vertices=40)
    assert_matches(
        graph, scipy.sparse.coo_array((np.ones(200), (src, dst)), (40, 40)), weighted=False
    )
    lines[150] = "7 x7"
    path.write_text("\n".join(lines))
    with pytest.raises(ValidationError, match=r"long\.txt line 151: 'x7' is not an integer"):
        load_edge_list(path)


def test_matrix_market_general_matches_scipy(rng: np.random.Generator, tmp_path: Path) -> None:
    """A real general .mtx written by SciPy loads as the same matrix (1-based indices)."""
    src, dst, w = distinct_edges(rng, 30, 90)
    matrix = scipy.sparse.coo_array((w, (src, dst)), (30, 30))
    path = tmp_path / "g.mtx"
    scipy.io.mmwrite(path, matrix)
    assert_matches(load_graph(path), matrix, weighted=True)


def test_matrix_market_symmetric_becomes_symmetric_graph(
    rng: np.random.Generator, tmp_path: Path
) -> None:
    """A symmetric .mtx (lower triangle stored) gives the full symmetric graph."""
    src, dst, w = distinct_edges(rng, 20, 60)
    lower = scipy.sparse.coo_array((w, (np.maximum(src, dst), np.minimum(src, dst))), (20, 20))
    lower = scipy.sparse.coo_array(lower.tocsr())  # collapse pairs that met in the triangle
    full = lower + scipy.sparse.triu(lower.T, k=1)
    path = tmp_path / "s.mtx"
    scipy.io.mmwrite(path, full, symmetry="symmetric")
    assert "symmetric" in path.read_text().splitlines()[0]
    graph = load_matrix_market(path)
    assert graph.symmetric
    assert_matches(graph, full, weighted=True)


def test_matrix_market_pattern_and_integer_fields(tmp_path: Path) -> None:
    """Pattern entries have no weights; integer values become float32 weights."""
    pattern = tmp_path / "p.mtx"
    pattern.write_text("%%MatrixMarket matrix coordinate pattern general\n% c\n\n3 3 2\n1 2\n3 1\n")
    graph = load_matrix_market(pattern)
    np.testing.assert_array_equal(graph.offsets, [0, 1, 1, 2])
    np.testing.assert_array_equal(graph.indices, [1, 0])
    assert graph.weights is None
    integer = tmp_path / "i.mtx"
    integer.write_text("%%MatrixMarket MATRIX Coordinate integer general\n2 2 1\n2 2 7\n")
    np.testing.assert_array_equal(load_matrix_market(integer).weights, [7.0])


EDGE_LIST_ERRORS = [
    ("0 1\n1 2 3\n", 2, "expected 2 numbers (src dst) like the first edge line, got '1 2 3'"),
    ("# c\n0 1 2 3\n", 2, "expected 2 or 3 numbers"),
    ("0 1\n\n1 b\n", 3, "'b' is not an integer vertex id in '1 b'"),
    ("0 1 0.5\n1 2 heavy\n", 2, "'heavy' is not a number"),
    ("0 1\n-1 2\n", 2, "vertex id -1 is outside"),
    ("0 1.0\n", 1, "'1.0' is not an integer"),
    ("0 1\n2 3 # trailing note\n", 2, "got '2 3 # trailing note'"),
]


@pytest.mark.parametrize(("content", "line", "problem"), EDGE_LIST_ERRORS)
def test_malformed_edge_list_names_file_and_line(
    tmp_path: Path, content: str, line: int, problem: str
) -> None:
    """A malformed edge line raises one ValidationError with the file, line and a fix."""
    path = tmp_path / "bad.txt"
    path.write_text(content)
    with pytest.raises(ValidationError) as info:
        load_edge_list(path)
    message = str(info.value)
    assert message.startswith(f"{path} line {line}: ")
    assert problem in message
    assert "Fix:" in message


def test_edge_list_id_beyond_num_vertices_names_the_line(tmp_path: Path) -> None:
    """With num_vertices given, an id at or above it names its line."""
    path = tmp_path / "range.txt"
    path.write_text("0 1\n1 4\n")
    with pytest.raises(ValidationError, match=r"line 2: vertex id 4 is outside \[0, 3\].*Fix:"):
        load_edge_list(path, num_vertices=4)


HEADER = "%%MatrixMarket matrix coordinate real general\n"
MTX_ERRORS = [
    ("%%MatrixMarket matrix array real general\n2 2\n", 1, "'array' format is not supported"),
    ("%%MatrixMarket matrix coordinate complex general\n", 1, "'complex' field"),
    ("%%MatrixMarket matrix coordinate real hermitian\n", 1, "'hermitian' symmetry"),
    ("just numbers\n1 2\n", 1, "expected the header"),
    ("", 1, "expected the header"),
    (HEADER + "% only comments\n", 2, "size line 'rows cols entries' is missing"),
    (HEADER + "3 4 1\n1 1 1\n", 2, "square matrix"),
    (HEADER + "3 3\n", 2, "expected the size line"),
    (HEADER + "3 3 2\n1 2 1.0\n2 3\n", 4, "expected 3 numbers (row col value)"),
    (HEADER + "3 3 1\na b 1\n", 3, "'a' is not an integer index in 'a b 1'"),
    (HEADER + "3 3 1\n1 2 x\n", 3, "'x' is not a number"),
    (HEADER + "3 3 1\n0 2 1\n", 3, "index 0 is outside [1, 3]"),
    (HEADER + "3 3 1\n1 4 1\n", 3, "index 4 is outside [1, 3]"),
    (HEADER + "3 3 1\n1 2 1\n% c\n2 3 1\n", 5, "more entries than the 1"),
    (HEADER + "3 3 3\n1 2 1\n2 3 1\n", 4, "ends after 2 of the 3 entries"),
]


@pytest.mark.parametrize(("content", "line", "problem"), MTX_ERRORS)
def test_malformed_matrix_market_names_file_and_line(
    tmp_path: Path, content: str, line: int, problem: str
) -> None:
    """A bad header, size line or entry raises one ValidationError with file, line and fix."""
    path = tmp_path / "bad.mtx"
    path.write_text(content)
    with pytest.raises(ValidationError) as info:
        load_graph(path)
    message = str(info.value)
    assert message.startswith(f"{path} line {line}: ")
    assert problem in message
    assert "Fix:" in message


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("symmetric", [False, True])
def test_npz_round_trip_keeps_arrays_and_flags(
    rng: np.random.Generator, tmp_path: Path, weighted: bool, symmetric: bool
) -> None:
    """save_npz then load_npz gives identical arrays, dtypes and symmetric flag."""
    src, dst, w = distinct_edges(rng, 30, 70)
    graph = CsrGraph.from_edges(src, dst, 30, symmetric=symmetric, weights=w if weighted else None)
    path = save_npz(graph, tmp_path / "g.npz")
    loaded = load_graph(path)
    for name in ("offsets", "indices", "weights"):
        mine, theirs = getattr(graph, name), getattr(loaded, name)
        assert (mine is None) == (theirs is None)
        if mine is not None:
            np.testing.assert_array_equal(mine, theirs)
            assert mine.dtype == theirs.dtype
    assert loaded.symmetric == symmetric
    assert not list(tmp_path.glob("*.tmp"))


def test_npz_keeps_int64_offsets(tmp_path: Path) -> None:
    """int64 offsets survive the round trip as int64."""
    graph = CsrGraph(np.array([0, 1, 1], np.int64), np.array([1], np.int32))
    loaded = load_npz(save_npz(graph, tmp_path / "g64.npz"))
    assert loaded.offsets.dtype == np.int64


def write_archive(path: Path, **arrays: Any) -> Path:
    """An .npz archive with the given arrays, pickling allowed (as a hostile file might be)."""
    with path.open("wb") as file:
        np.savez(file, **arrays)
    return path


def test_malformed_npz_files_raise_naming_the_file(tmp_path: Path) -> None:
    """Non-archives, missing arrays, object arrays, SciPy archives and bad CSR all name the file."""
    text = tmp_path / "text.npz"
    text.write_text("0 1\n")
    cases = {
        text: "is not a .npz archive",
        write_archive(
            tmp_path / "missing.npz", offsets=np.zeros(1, np.int32)
        ): "missing ['indices']",
        write_archive(
            tmp_path / "object.npz",
            offsets=np.array([0, 0], dtype=object),
            indices=np.zeros(0, np.int32),
        ): "holds Python objects, which are never unpickled",
        write_archive(
            tmp_path / "bad.npz",
            offsets=np.array([0, 2, 1], np.int32),
            indices=np.zeros(1, np.int32),
        ): "offsets decrease at position 2",
        write_archive(
            tmp_path / "flag.npz",
            offsets=np.zeros(1, np.int32),
            indices=np.zeros(0, np.int32),
            symmetric=np.array(2),
        ): "'symmetric' is int64",
    }
    scipy_path = tmp_path / "scipy.npz"
    scipy.sparse.save_npz(scipy_path, scipy.sparse.csr_matrix(np.eye(2)))
    cases[scipy_path] = "scipy.sparse.save_npz file"
    for path, problem in cases.items():
        with pytest.raises(ValidationError) as info:
            load_npz(path)
        message = str(info.value)
        assert message.startswith(str(path)), message
        assert problem in message, message
        assert "Fix:" in message


def test_missing_file_is_a_validation_error(tmp_path: Path) -> None:
    """A path that does not exist raises a ValidationError naming it, for every format."""
    for name in ("none.txt", "none.mtx", "none.npz"):
        with pytest.raises(ValidationError, match=f"{name}.*Fix:"):
            load_graph(tmp_path / name)


def test_load_graph_kind_overrides_suffix_and_rejects_unknown(tmp_path: Path) -> None:
    """kind= picks the loader regardless of suffix; an unknown kind is a ValueError."""
    path = tmp_path / "graph.data"
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n")
    assert load_graph(path, kind="matrix_market").num_vertices == 2
    with pytest.raises(ValueError, match="unknown graph file kind"):
        load_graph(path, kind="graphml")  # type: ignore[arg-type]


def test_read_graph_header_gives_the_counts_loading_finds(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """Matrix Market, .npz and a scanned edge list: the header's counts = the loaded graph's."""
    src, dst, _ = distinct_edges(rng, 50, 200)
    edges = tmp_path / "g.txt"
    edges.write_text("".join(f"{s} {d}\n" for s, d in zip(src, dst, strict=True)))
    matrix = scipy.sparse.coo_array((np.ones(src.size), (src, dst)), shape=(60, 60))
    scipy.io.mmwrite(tmp_path / "g.mtx", matrix)
    save_npz(load_edge_list(edges), tmp_path / "g.npz")
    for path, kind in ((edges, None), (tmp_path / "g.mtx", None), (tmp_path / "g.npz", None)):
        header = read_graph_header(path, kind, scan_edge_list=True)
        graph = load_graph(path)
        assert header.num_vertices == graph.num_vertices
        assert header.num_edges == graph.num_edges == 200
        assert header.nbytes is not None
        assert header.nbytes >= graph.nbytes
        assert header.file_bytes == path.stat().st_size
    assert read_graph_header(edges).num_vertices is None  # not scanned: no header to read


def test_a_graph_above_the_memory_limit_is_refused_with_the_numbers(tmp_path: Path) -> None:
    """memory_limit below the estimate: ValidationError with both sizes, for every format."""
    path = tmp_path / "g.txt"
    path.write_text("0 1\n1 2\n")
    save_npz(load_edge_list(path), tmp_path / "g.npz")
    (tmp_path / "g.mtx").write_text(
        "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 3\n"
    )
    for name in ("g.txt", "g.mtx", "g.npz"):
        with pytest.raises(ValidationError, match=r"needs about .* more than the 0 MiB.*Fix:"):
            load_graph(tmp_path / name, memory_limit=10)
        assert load_graph(tmp_path / name, memory_limit=1 << 30).num_vertices == 3


def test_without_quoting_an_error_names_the_line_but_shows_none_of_it(tmp_path: Path) -> None:
    """quote_lines=False: the file and line are named, the line's text is not."""
    path = tmp_path / "g.txt"
    path.write_text("0 1\nsecret-words here\n")
    with pytest.raises(ValidationError, match="secret-words"):
        load_edge_list(path)
    with pytest.raises(ValidationError) as info:
        load_edge_list(path, quote_lines=False)
    assert "line 2" in str(info.value)
    assert "secret" not in str(info.value)


def test_only_regular_files_are_read_and_long_lines_refused(tmp_path: Path) -> None:
    """A FIFO, /dev/zero and a 100 KB line: ValidationError at once, nothing read past that."""
    fifo = tmp_path / "fifo.txt"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.txt"
    zero.symlink_to("/dev/zero")
    long_line = tmp_path / "long.txt"
    long_line.write_text("1 " * 50_000)
    for path, says in ((fifo, "FIFO"), (zero, "character device"), (long_line, "longer than")):
        with pytest.raises(ValidationError, match=says):
            load_graph(path)


@pytest.mark.parametrize("layout", ["csr", "coo", "csc"])
def test_a_scipy_npz_file_loads_as_scipy_reads_it_and_its_header_says_so(
    tmp_path: Path, rng: np.random.Generator, layout: str
) -> None:
    """kind='scipy_npz': the graph SciPy's own load_npz gives, and the header's counts."""
    src, dst, weights = distinct_edges(rng, 70, 300)
    matrix = scipy.sparse.coo_array((weights, (src, dst)), shape=(70, 70)).asformat(layout)
    path = tmp_path / "m.npz"
    scipy.sparse.save_npz(path, matrix)
    graph = load_graph(path, "scipy_npz")
    assert_matches(graph, scipy.sparse.load_npz(path), weighted=True)
    header = read_graph_header(path, "scipy_npz")
    assert (header.num_vertices, header.num_edges) == (70, 300)
    assert header.nbytes is not None
    assert header.nbytes >= graph.nbytes
    with pytest.raises(ValidationError, match=r"needs about .* more than the 0 MiB.*Fix:"):
        load_graph(path, "scipy_npz", memory_limit=10)
