"""The hostile-input corpus (tests/hostile/): each case through validate and run in a child
process under an address-space and a CPU-time limit: exit 2, the problem and a fix in a
short message, never a traceback, and no output folder made."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hostile.corpus import CASES, Case

CHILD = Path(__file__).with_name("cli_child.py")
#: Address space each child may map: far below what any of these inputs would take.
ADDRESS_SPACE = 3 << 30
#: CPU seconds each child may spend on both commands (start-up included); a load on
#: the machine slows the wall clock, not this.
CPU_SECONDS = 10
#: Wall-clock seconds before a child is given up on (a hang, not a slow machine).
TIMEOUT_S = 120


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_hostile_input_is_refused_with_exit_2_and_a_fix_in_bounded_time_and_memory(
    tmp_path: Path, case: Case
) -> None:
    """validate (where the input is the job's) and run: exit 2 with the problem and a Fix."""
    folder = tmp_path / "job"
    folder.mkdir()
    job = case.make(folder)
    out = tmp_path / "o"
    run = ["run", str(job), "--out", str(out)]
    run += [arg.format(folder=folder) for arg in case.run_args]
    child = subprocess.run(  # noqa: S603 - this repository's own child script
        [sys.executable, str(CHILD), json.dumps([["validate", str(job)], run])],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        preexec_fn=_limit,  # only sets rlimits
        check=False,
    )
    err = child.stderr
    assert child.returncode == 0, err[-3000:]
    assert json.loads(child.stdout.splitlines()[-1]) == [2 if case.validate_refuses else 0, 2]
    validated, refused = err.split("--- exit")[:2]
    messages = [validated, refused] if case.validate_refuses else [refused]
    for message in messages:
        assert case.says in message, message
        assert "Fix:" in message
        assert "Traceback" not in message
        assert len(message) < 1500, "an error quotes at most a short excerpt"
    assert not out.exists(), "a refused run made its output folder"
