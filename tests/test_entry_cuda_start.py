"""``vyre-async run`` starts the CUDA driver's initialisation before it imports the
package, so the two overlap; other commands, and ``--backend cpu``, start nothing."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _vyre_async_entry as entry


@pytest.fixture
def fake_driver(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``cuda.bindings.driver`` replaced by a module whose ``cuInit`` records its flags."""
    calls: list[int] = []
    driver = types.ModuleType("cuda.bindings.driver")
    driver.cuInit = lambda flags: calls.append(flags) or (0,)  # type: ignore[attr-defined]
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = driver  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", driver)
    return calls


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "job.toml"],
        ["--log-level", "debug", "run", "job.toml", "--out", "o"],
        ["run", "job.toml", "--backend", "cuda"],
    ],
)
def test_run_initialises_the_driver_in_a_thread(fake_driver: list[int], argv: list[str]) -> None:
    """A run that may use CUDA calls cuInit(0) once, in a daemon thread."""
    thread = entry.start_cuda_early(argv)
    assert thread is not None
    assert thread.daemon
    thread.join(timeout=10)
    assert fake_driver == [0]


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "job.toml", "--backend", "cpu"],
        ["run", "job.toml", "--backend=cpu"],
        ["validate", "run"],
        ["--log-level", "run", "validate", "job.toml"],
        ["info"],
        [],
    ],
)
def test_other_commands_and_cpu_runs_start_nothing(fake_driver: list[int], argv: list[str]) -> None:
    """Other commands, or a run on the CPU backend, leave the driver alone."""
    assert entry.start_cuda_early(argv) is None
    assert fake_driver == []


def test_a_failing_driver_is_left_for_the_package_to_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No bindings at all: the thread ends quietly (the package says why later)."""
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", None)
    thread = entry.start_cuda_early(["run", "job.toml"])
    assert thread is not None
    thread.join(timeout=10)
    assert not thread.is_alive()


@pytest.mark.parametrize(
    ("orig_argv", "args"),
    [
        (["python", "-m", "vyre_async", "run", "job.toml"], ["run", "job.toml"]),
        (["python", "-X", "importtime", "-mvyre_async", "run", "j"], ["run", "j"]),
        (["python", "-c", "pass"], []),
    ],
)
def test_python_m_vyre_async_finds_its_command_in_the_interpreters_arguments(
    monkeypatch: pytest.MonkeyPatch, orig_argv: list[str], args: list[str]
) -> None:
    """While the package is imported for ``python -m vyre_async`` only the interpreter's
    arguments say what the command is; they are what the early start reads."""
    from vyre_async import _startup_signals

    monkeypatch.setattr(sys, "orig_argv", orig_argv)
    assert _startup_signals.command_args() == args
