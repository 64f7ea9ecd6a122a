"""A query kind is a folder: nothing outside ``algorithms/<kind>/`` names a kind.

Sessions, the batcher, jobs and the Ray executor look kinds up in the registry; only
the registry's import lines (``algorithms/__init__.py``) and the session's typed
methods (``sessions/_graph_session.py``) may name one, and the NetworkX backend
(``networkx/``), which maps NetworkX's functions onto those typed methods as user
code does: a new kind works without it and is added there only to serve NetworkX.
Prose (docstrings, comments) may mention kinds; code (names, attributes, imports,
arguments, strings) may not.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import vyre_async as va

PACKAGE = Path(va.__file__).resolve().parent
#: Where a kind may be named besides its own folder.
ALLOWED = {"algorithms/__init__.py", "sessions/_graph_session.py"}
#: Packages that adapt another library's API onto the session's typed methods.
ADAPTERS = {"networkx"}
#: Folders of algorithms/ that are not query kinds and have their own names in code
#: elsewhere: the e-graph has its own session, R-MAT is a job's graph generator.
NOT_KINDS = {"egraph", "rmat"}


def _kind_tokens() -> set[str]:
    """Each registered kind's name, the folders of algorithms/ that hold kinds or their
    engines, and PageRank's short form ``pr`` used in this code base."""
    folders = {
        p.name
        for p in (PACKAGE / "algorithms").iterdir()
        if p.is_dir() and (p / "__init__.py").exists() and p.name not in NOT_KINDS
    }
    return {*va.algorithms.kind_names(), *folders, "pr"}


def _docstrings(tree: ast.Module) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _names(node: ast.AST, docstrings: set[int]) -> list[str]:
    """The words a node holds in code: identifiers split at '_' and '.', and string
    constants (not docstrings) taken as whole values."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [] if id(node) in docstrings else [node.value.lower()]
    if isinstance(node, ast.Name):
        text = node.id
    elif isinstance(node, ast.Attribute):
        text = node.attr
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        text = node.name
    elif isinstance(node, ast.alias):
        text = f"{node.name}.{node.asname or ''}"
    elif isinstance(node, ast.ImportFrom):
        text = node.module or ""
    elif isinstance(node, ast.arg):
        text = node.arg
    elif isinstance(node, ast.keyword):
        text = node.arg or ""
    else:
        return []
    return [part for part in re.split(r"[_.]", text.lower()) if part]


def kind_names_outside_units(package: Path) -> list[str]:
    """``path:line: word`` for every kind named in code outside its unit."""
    tokens = _kind_tokens()
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        parts = rel.split("/")
        if rel in ALLOWED or parts[0] in ADAPTERS or (parts[0] == "algorithms" and len(parts) > 2):
            continue
        tree = ast.parse(path.read_text())
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            for word in _names(node, docstrings):
                if word in tokens:
                    found.append(f"{rel}:{getattr(node, 'lineno', '?')}: {word}")
    return found


def test_no_module_outside_a_kind_folder_names_a_kind() -> None:
    """Only a kind's folder, the registry imports and the typed session methods name it."""
    assert kind_names_outside_units(PACKAGE) == []


def test_the_check_finds_a_kind_named_in_code(tmp_path: Path) -> None:
    """The check is not blind: a module naming kinds in code, not prose, is reported."""
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "_x.py").write_text(
        '"""Mentions pagerank in prose only."""\n'
        "import vyre_async.algorithms.bfs as traversal\n"
        "def run(kind):\n"
        "    free_pr = []  # the old per-kind free lists\n"
        "    return kind == 'khop', free_pr, traversal\n"
    )
    found = kind_names_outside_units(tmp_path)
    assert sorted({line.rsplit(": ", 1)[1] for line in found}) == ["bfs", "khop", "pr"]
    assert all(line.startswith("jobs/_x.py:") for line in found)


@pytest.mark.parametrize("name", va.algorithms.kind_names())
def test_every_kind_is_a_unit_of_its_own_folder(name: str) -> None:
    """Each registered kind's class lives in a folder of algorithms/ and names its params."""
    kind = va.algorithms.lookup(name)
    module = type(kind).__module__.split(".")
    assert module[:2] == ["vyre_async", "algorithms"]
    assert len(module) >= 4
    assert kind.params.__module__.split(".")[2] == module[2]
