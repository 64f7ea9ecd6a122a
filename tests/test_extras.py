"""The extras of pyproject.toml: what the README tells users to install exists."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def test_every_extra_the_readme_installs_exists() -> None:
    """Each `pip install "vyre-async[a,b]"` of the README names extras pyproject.toml has,
    trio's among them."""
    named = {
        extra
        for group in re.findall(
            r'pip install "vyre-async\[([^\]]+)\]"', (ROOT / "README.md").read_text()
        )
        for extra in group.split(",")
    }
    assert "trio" in named
    assert named <= set(_extras())


def test_the_trio_extra_installs_the_trio_the_tests_run_on() -> None:
    """The trio extra asks for trio at the version the test extra does."""
    assert _extras()["trio"] == [r for r in _extras()["test"] if r.startswith("trio")]
