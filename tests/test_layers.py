"""The house's rules that import-linter's layers contract does not state.

The contract itself (pyproject's ``[tool.importlinter]``) runs as ``lint-imports`` in
``.ci/run``; these tests check what it cannot: no package reaches into another
package's private module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import vyre_async

ROOT = Path(vyre_async.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every ``from X import ...`` and ``import X`` in a file."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def _package_of(module: str) -> str:
    """The layer a module belongs to: ``vyre_async.<first part>``."""
    return ".".join(module.split(".")[:2])


def _private_part(module: str) -> bool:
    """Whether a module below a package of vyre_async is private (a ``_`` part)."""
    parts = module.split(".")
    return len(parts) > 2 and any(part.startswith("_") for part in parts[2:])


def test_no_package_imports_another_packages_private_module() -> None:
    """Across packages, imports name a package's public face, never one of its _modules."""
    offences = []
    for path in sorted(ROOT.rglob("*.py")):
        importer = _module_name(path)
        for line, target in _imported(path):
            if not target.startswith("vyre_async."):
                continue
            if _private_part(target) and _package_of(target) != _package_of(importer):
                offences.append(f"{path.relative_to(ROOT.parent)}:{line} imports {target}")
    assert not offences, "\n".join(offences)


def test_the_private_import_check_sees_relative_imports() -> None:
    """The resolver maps a relative import to the module it names (the check is not blind)."""
    path = ROOT / "backends" / "cuda" / "_base.py"
    targets = {target for _, target in _imported(path)}
    assert "vyre_async.backends._core" in targets
    assert "vyre_async.streams" in targets
    assert _private_part("vyre_async.backends._core")
    assert not _private_part("vyre_async.algorithms.bfs")
