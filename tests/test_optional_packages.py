"""The core runs without its optional packages: no CUDA, SciPy, NetworkX, pandas or pyarrow.

Each test runs a child Python in which the named top-level packages cannot be
imported (an import hook refuses them), as on a machine where they were never
installed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import scipy.sparse

from vyre_async.errors import UnsupportedFeatureError
from vyre_async.graphs import CsrGraph

BLOCKER = """
import importlib.abc, sys
BLOCKED = {blocked!r}
# cuda-bindings 12 imports its namespace package at start-up (a .pth file): not ours.
AT_START = {{m for m in sys.modules if m.partition(".")[0] in BLOCKED}}
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)")
        return None
sys.meta_path.insert(0, Blocker())
"""
OPTIONAL = ["cuda", "scipy", "networkx", "pandas", "pyarrow"]


def run_without(blocked: list[str], body: str) -> str:
    """Run ``body`` in a child Python that cannot import ``blocked``; return its stdout."""
    script = BLOCKER.format(blocked=set(blocked)) + textwrap.dedent(body)
    done = subprocess.run(  # noqa: S603 - our own interpreter running our own script
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_cpu_dispatch_and_graphs_run_without_any_optional_package() -> None:
    """With CUDA, SciPy, NetworkX, pandas and pyarrow unimportable, 'auto' falls back to the
    CPU backend, dispatches, builds and renumbers graphs, and imports none of them."""
    out = run_without(
        OPTIONAL,
        """
        import anyio, numpy as np, vyre_async as va
        from vyre_async.graphs import CsrGraph

        async def main():
            x = np.arange(5, dtype=np.float32)
            graph, ids = CsrGraph.from_edges(["a", "b"], ["b", "c"], renumber=True)
            async with va.open_backend("auto") as backend:
                out = await backend.dispatch(va.kernels.axpy, {"x": x, "y": x}, a=2.0)
                async with va.resident_graph(backend, graph) as session:
                    levels = await session.bfs(ids.to_vertex("a"))
            print(backend.kind, out["y"].tolist(), levels.tolist())

        anyio.run(main)
        leaked = sorted({m for m in sys.modules if m.partition(".")[0] in BLOCKED} - AT_START)
        print("imported:", leaked)
        """,
    )
    assert "cpu [0.0, 3.0, 6.0, 9.0, 12.0] [0, 1, 2]" in out
    assert "imported: []" in out


def test_cli_info_reports_the_cpu_backend_without_cuda() -> None:
    """`vyre-async info` works without cuda-bindings and names the extras that add CUDA."""
    out = run_without(
        ["cuda"],
        """
        from vyre_async.cli import main
        raise SystemExit(main(["info"]))
        """,
    )
    assert "backend: cpu" in out
    assert "vyre-async[cu13]" in out
    assert "vyre-async[cu12]" in out


def test_from_scipy_without_scipy_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """from_scipy with SciPy unimportable raises UnsupportedFeatureError naming the package."""
    matrix = scipy.sparse.eye(2)
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)
    with pytest.raises(UnsupportedFeatureError, match=r"needs scipy.*Fix: install it: pip install"):
        CsrGraph.from_scipy(matrix)
