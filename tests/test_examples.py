"""The README's tour and examples/ as a new user runs them: they print what they compute,
and a missing GPU is one line and an exit code, never a traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from graph_references import scipy_levels

import vyre_async as va
from vyre_async.testing import gpu_unavailable_reason

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _python(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - this interpreter on the project's own files
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _tour() -> str:
    """The README's first Python block under "A short tour"."""
    text = (ROOT / "README.md").read_text()
    after = text[text.index("## A short tour") :]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def test_readme_tour_prints_what_it_computes() -> None:
    """The tour runs (CUDA or CPU, as auto picks) and prints a line per result; its BFS
    and 2-hop counts from the hub equal SciPy's, its sum float64 NumPy's."""
    done = _python(["-c", _tour()])
    assert done.returncode == 0, done.stderr
    out = done.stdout
    graph = va.graphs.rmat(scale=16, edge_factor=16, seed=1)
    hub = int(np.argmax(graph.out_degree()))
    levels = scipy_levels(graph, hub)
    x = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    assert re.search(r"^backend: (cpu|cuda) \(.+\)$", out, re.M)
    assert "2x + y, first 3: [" in out
    assert "y + 0.75x, first 4: [" in out
    total = re.search(r"^sum of x: (-?[\d.]+), NumPy in float64", out, re.M)
    assert total is not None
    assert abs(float(total[1]) - x.sum(dtype=np.float64)) < 0.1
    assert f"BFS from {hub}: {int((levels >= 0).sum()):,} reached, deepest level" in out
    within = int(((levels >= 0) & (levels <= 2)).sum())
    assert f"within 2 hops of {hub}: {within:,} vertices" in out
    assert re.search(r"^PageRank: vertex \d+ ranks highest", out, re.M)
    assert "reached from the first 4 of 64 sources: [" in out
    assert re.search(r"^100 concurrent reach counts in \d+ batched traversal", out, re.M)
    assert re.search(r"^\d+ dispatches, \d+ kernel launches$", out, re.M)


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="a GPU answers on this machine")
@pytest.mark.parametrize("example", ["quickstart.py", "custom_kernel.py"])
def test_an_example_without_a_gpu_says_so_in_one_line_and_exits_1(example: str) -> None:
    """--backend cuda where no GPU answers: exit 1, one line on standard error with the
    fix and the flag to use, no traceback."""
    done = _python([str(EXAMPLES / example), "--backend", "cuda"])
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{example.removesuffix('.py')}: ")
    assert "Fix:" in lines[0]
    assert lines[0].endswith("Here: --backend cpu.")


def test_quickstart_prints_prometheus_text_only_when_asked() -> None:
    """On the CPU backend: a one-line telemetry summary; the Prometheus exposition
    (# TYPE lines, vyre_async_ series) only with --prometheus."""
    plain = _python([str(EXAMPLES / "quickstart.py"), "--backend", "cpu"])
    assert plain.returncode == 0, plain.stderr
    assert re.search(r"^telemetry: \d+ dispatches, \d+ kernel launches", plain.stdout, re.M)
    assert "# TYPE" not in plain.stdout
    assert "vyre_async_" not in plain.stdout
    asked = _python([str(EXAMPLES / "quickstart.py"), "--backend", "cpu", "--prometheus"])
    assert asked.returncode == 0, asked.stderr
    assert "# TYPE vyre_async_dispatches_total counter" in asked.stdout
