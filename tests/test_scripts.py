"""scripts/run and scripts/test: what they install, and where run's paths start.

The virtual environment is a stand-in (VYRE_ASYNC_VENV) whose ``python`` and
``vyre-async`` only record how they were called, so the scripts' own logic (which
extras, when to install again, which folder) is what is tested, in milliseconds and
without a network; pip itself is not run.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDER = """#!/usr/bin/env bash
echo "$(basename "$0") cwd=$PWD args=$*" >> "$FAKE_LOG"
"""


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A stand-in environment whose python and vyre-async record their calls."""
    folder = tmp_path / "venv"
    (folder / "bin").mkdir(parents=True)
    for name in ("python", "vyre-async"):
        tool = folder / "bin" / name
        tool.write_text(RECORDER)
        tool.chmod(0o755)
    return folder


def _script(name: str, args: list[str], venv: Path, cwd: Path, **env: str) -> tuple[str, list[str]]:
    """Run scripts/NAME from ``cwd``; return its standard error and the calls it made."""
    log = venv / "calls.log"
    log.write_text("")
    done = subprocess.run(  # noqa: S603 - this repository's own script
        [str(ROOT / "scripts" / name), *args],
        cwd=cwd,
        env={**os.environ, "VYRE_ASYNC_VENV": str(venv), "FAKE_LOG": str(log), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr, log.read_text().splitlines()


def _installs(calls: list[str]) -> list[str]:
    """What the recorded pip calls installed (the targets of ``pip install -e``)."""
    return [
        call.rpartition(" -e ")[2] for call in calls if "pip install " in call and " -e " in call
    ]


def test_run_installs_what_a_run_needs_and_says_so(venv: Path, tmp_path: Path) -> None:
    """First ./scripts/run: one line naming vyre-async[cu13] and why; pip installs that,
    without the test and lint extras."""
    err, calls = _script("run", ["--version"], venv, tmp_path)
    (said,) = [line for line in err.splitlines() if line.startswith("installing")]
    assert said.startswith(f"installing vyre-async[cu13] into {venv}: what a run needs")
    assert _installs(calls) == [f"{ROOT}[cu13]"]


def test_run_resolves_its_arguments_from_where_it_was_called(venv: Path, tmp_path: Path) -> None:
    """./scripts/run validate job.toml from another folder: vyre-async runs in that folder."""
    user = tmp_path / "elsewhere"
    user.mkdir()
    _, calls = _script("run", ["validate", "job.toml"], venv, user)
    assert calls[-1] == f"vyre-async cwd={user} args=validate job.toml"


def test_test_after_run_installs_what_it_lacks_and_then_neither_installs_again(
    venv: Path, tmp_path: Path
) -> None:
    """run, test, run, test: test adds lint and test once; nothing is installed after."""
    _script("run", ["--version"], venv, tmp_path)
    err, calls = _script("test", ["-q"], venv, tmp_path)
    assert "installing vyre-async[lint,test,cu13]" in err
    assert _installs(calls) == [f"{ROOT}[lint,test,cu13]"]
    assert calls[-1] == f"python cwd={ROOT} args=-m pytest -q"
    for name in ("run", "test"):
        err, calls = _script(name, ["--version"], venv, tmp_path)
        assert "installing" not in err, name
        assert _installs(calls) == [], name


def test_switching_the_cuda_extra_installs_again(venv: Path, tmp_path: Path) -> None:
    """After run with cu13, run with VYRE_ASYNC_CUDA=cu12 installs vyre-async[cu12]."""
    _script("run", ["--version"], venv, tmp_path)
    err, calls = _script("run", ["--version"], venv, tmp_path, VYRE_ASYNC_CUDA="cu12")
    assert "installing vyre-async[cu12]" in err
    assert _installs(calls) == [f"{ROOT}[cu12]"]
