"""SIGINT or SIGTERM while the command line is still importing vyre_async: the signal's
exit code and a line saying nothing was started, never a KeyboardInterrupt traceback."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from job_files import write_job

ROOT = Path(__file__).resolve().parents[1]
PAUSE = Path(__file__).parent / "hostile" / "pause_import"
#: How the command line is started: ``python -m vyre_async``, and the console script.
ENTRIES = {"python -m vyre_async": "vyre_async", "vyre-async": "_vyre_async_entry"}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("module", ENTRIES.values(), ids=ENTRIES.keys())
def test_a_signal_while_vyre_async_is_imported_exits_with_its_code_and_starts_nothing(
    tmp_path: Path, module: str, signum: signal.Signals
) -> None:
    """The child is held inside `import vyre_async` (at vyre_async.errors), signalled:
    exit 130/143, 'nothing was started', no traceback, no output folder."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}])
    out = tmp_path / "out"
    ready_r, ready_w = os.pipe()
    wait_r, wait_w = os.pipe()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(PAUSE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "VYRE_TEST_PAUSE_AT": "vyre_async.errors",
        "VYRE_TEST_READY_FD": str(ready_w),
        "VYRE_TEST_WAIT_FD": str(wait_r),
    }
    child = subprocess.Popen(  # noqa: S603 - this repository's own command line
        [sys.executable, "-m", module, "run", str(job), "--out", str(out)],
        env=env,
        pass_fds=(ready_w, wait_r),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(ready_w)
    os.close(wait_r)
    try:
        held, _, _ = select.select([ready_r], [], [], 60)
        assert held, "the child never reached the import"
        assert os.read(ready_r, 1) == b"!"
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
        os.close(ready_r)
        os.close(wait_w)
    assert child.returncode == 128 + signum, stderr
    assert f"vyre-async: {signum.name} while starting; nothing was started" in stderr
    assert "Traceback" not in stderr
    assert "KeyboardInterrupt" not in stderr
    assert not out.exists()
