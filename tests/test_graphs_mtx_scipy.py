"""Matrix Market through scipy.io.mmread: the same graphs as the careful parser, or None."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from test_graphs_io import MTX_ERRORS

from vyre_async.errors import ValidationError
from vyre_async.graphs import CsrGraph, load_matrix_market
from vyre_async.graphs._mtx_scipy import load_matrix_market_scipy

pytest.importorskip("scipy.io", reason="scipy is not installed")


def write_random_mtx(
    rng: np.random.Generator,
    path: Path,
    field: str,
    symmetry: str,
    *,
    inner_comments: bool = False,
) -> None:
    """A random coordinate file: repeated entries, header comments, tabs and leading spaces;
    with ``inner_comments``, comment lines between entries too (which SciPy refuses)."""
    n = int(rng.integers(1, 40))
    m = int(rng.integers(4 if inner_comments else 0, 3 * n + 5))
    rows, cols = rng.integers(1, n + 1, m), rng.integers(1, n + 1, m)
    if symmetry == "symmetric":
        rows, cols = np.maximum(rows, cols), np.minimum(rows, cols)  # the lower triangle
    lines = [f"%%MatrixMarket matrix coordinate {field} {symmetry}", "% a comment", f"{n} {n} {m}"]
    for k in range(m):
        value = {"pattern": "", "integer": f" {int(rng.integers(-9, 10))}"}.get(
            field, f" {rng.standard_normal():.6g}"
        )
        lines.append(f"{rows[k]} {cols[k]}{value}" if k % 5 else f"  {rows[k]}\t{cols[k]}{value}")
        if inner_comments and k % 11 == 3:
            lines.append("% between entries")
    path.write_text("\n".join(lines) + "\n")


def assert_same_graph(a: CsrGraph, b: CsrGraph) -> None:
    """Equal arrays, weights and symmetry flag."""
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert (a.weights is None) == (b.weights is None)
    if a.weights is not None:
        np.testing.assert_array_equal(a.weights, b.weights)
    assert a.symmetric == b.symmetric


@pytest.mark.parametrize("symmetric_flag", [False, True])
@pytest.mark.parametrize("symmetry", ["general", "symmetric"])
@pytest.mark.parametrize("field", ["real", "integer", "pattern"])
def test_scipy_path_gives_the_careful_parsers_graph(
    rng: np.random.Generator, tmp_path: Path, field: str, symmetry: str, symmetric_flag: bool
) -> None:
    """mmread's graph equals the careful parser's (duplicates keep their first value)."""
    path = tmp_path / "g.mtx"
    for _ in range(3):
        write_random_mtx(rng, path, field, symmetry)
        fast = load_matrix_market_scipy(path, symmetric=symmetric_flag)
        assert fast is not None
        assert_same_graph(fast, load_matrix_market(path, symmetric=symmetric_flag))


@pytest.mark.parametrize(("content", "line", "problem"), MTX_ERRORS)
def test_malformed_files_are_left_to_the_careful_parser(
    tmp_path: Path, content: str, line: int, problem: str
) -> None:
    """For every malformed file the SciPy path returns None, so the file-and-line error stays."""
    path = tmp_path / "bad.mtx"
    path.write_text(content)
    assert load_matrix_market_scipy(path) is None
    with pytest.raises(ValidationError, match=rf"line {line}: "):
        load_matrix_market(path)


def test_comments_between_entries_are_left_to_the_careful_parser(
    rng: np.random.Generator, tmp_path: Path
) -> None:
    """SciPy refuses a comment line between entries: None, and the careful parser reads it."""
    path = tmp_path / "g.mtx"
    write_random_mtx(rng, path, "real", "general", inner_comments=True)
    assert load_matrix_market_scipy(path) is None
    assert load_matrix_market(path).num_vertices > 0


def test_missing_file_is_left_to_the_careful_parser(tmp_path: Path) -> None:
    """An unreadable path gives None (the careful parser names it)."""
    assert load_matrix_market_scipy(tmp_path / "absent.mtx") is None


def test_without_scipy_the_path_returns_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With scipy.io unimportable, the SciPy path steps aside."""
    path = tmp_path / "g.mtx"
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n")
    monkeypatch.setitem(sys.modules, "scipy.io", None)
    assert load_matrix_market_scipy(path) is None
