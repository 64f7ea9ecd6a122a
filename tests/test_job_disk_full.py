"""A disk that fills up while a job writes its chunks or array files: exit 2 with the
--resume fix, no traceback and no noise from half-written archives; what was committed
stays intact and the resume completes the job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from graph_references import scipy_levels
from job_files import random_sources, rmat_graph, write_job

from vyre_async.jobs import open_item_arrays, read_records

CHILD = Path(__file__).parent / "hostile" / "disk_full_child.py"
ITEMS = 160


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(  # noqa: S603 - this repository's own child script
        [sys.executable, "-W", "always::ResourceWarning", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _check_levels(out: Path, want: int | None = None) -> list[int]:
    """Every committed item once, its levels (read through the manifest) SciPy's."""
    graph = rmat_graph()
    records = list(read_records(out))
    ids = [r.id for r in records]
    assert len(set(ids)) == len(ids)
    sources = random_sources(ITEMS, 2, graph.num_vertices)
    with open_item_arrays(out) as arrays:
        for record in records:
            assert record.source == sources[record.id]
            levels = arrays.read(record.array, record.id)
            assert (levels == scipy_levels(graph, record.source)).all()
    if want is not None:
        assert len(ids) == want
    return ids


@pytest.mark.parametrize("suffix", [".npz", ".jsonl"], ids=["array file", "chunk"])
def test_a_full_disk_exits_2_with_the_resume_fix_and_the_resume_completes(
    tmp_path: Path, suffix: str
) -> None:
    """ENOSPC on the fourth array file (or chunk): exit 2 naming the disk and --resume,
    committed chunks intact, no traceback; then --resume commits every item once."""
    job = write_job(
        tmp_path,
        [{"kind": "bfs", "readback": "levels", "sources": {"random": ITEMS, "seed": 2}}],
        output={"commit_items": 8, "commit_interval_s": 60.0},
        batching={"max_batch": 8},
    )
    out = tmp_path / "out"
    full = _cli(str(CHILD), suffix, "3", "run", str(job), "--out", str(out))
    assert full.returncode == 2, full.stderr[-3000:]
    assert "No space left on device" in full.stderr
    assert "Fix: make room on the disk" in full.stderr
    assert "--resume" in full.stderr
    for noise in ("Traceback", "Exception ignored", "ResourceWarning"):
        assert noise not in full.stderr, full.stderr[-3000:]
    committed = _check_levels(out)
    assert 0 < len(committed) < ITEMS
    resumed = _cli("-m", "vyre_async", "run", str(job), "--out", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert sorted(_check_levels(out, ITEMS)) == list(range(ITEMS))
