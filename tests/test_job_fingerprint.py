"""A job's fingerprint covers its graph file's content, not its times: a touched file
resumes, other bytes are refused, and the file is hashed once per change."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from job_files import write_job

from vyre_async.cli import main
from vyre_async.jobs import load_job
from vyre_async.jobs.graph import _graph_digest as graph_digest
from vyre_async.jobs.graph import job_fingerprint

WORKLOAD = [{"kind": "reach", "sources": [0, 1, 2, 3]}]


def _edge_list(path: Path, rng: np.random.Generator) -> None:
    """A random edge list over 64 vertices (every vertex named, so the count is fixed)."""
    pairs = rng.integers(0, 64, size=(300, 2))
    lines = [f"{v} {(v + 1) % 64}" for v in range(64)] + [f"{a} {b}" for a, b in pairs]
    path.write_text("\n".join(lines) + "\n")


def _job(tmp_path: Path, rng: np.random.Generator) -> tuple[Path, Path]:
    """A job over an edge-list file: (job file, graph file)."""
    graph = tmp_path / "g.txt"
    _edge_list(graph, rng)
    return write_job(tmp_path, WORKLOAD, graph={"kind": "edges", "path": "g.txt"}), graph


def _resume(capsys: pytest.CaptureFixture[str], job: Path) -> tuple[int, str]:
    code = main(["run", str(job), "--resume"])
    out, err = capsys.readouterr()
    return code, out + err


def test_a_touched_graph_file_resumes_its_job(
    tmp_path: Path, rng: np.random.Generator, capsys: pytest.CaptureFixture[str]
) -> None:
    """New modification time, same bytes (`touch g.txt`): --resume accepts the folder."""
    job, graph = _job(tmp_path, rng)
    assert main(["run", str(job)]) == 0
    capsys.readouterr()
    st = graph.stat()
    os.utime(graph, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    code, said = _resume(capsys, job)
    assert code == 0, said
    assert "already complete" in said


def test_a_graph_file_with_other_bytes_is_refused_even_with_its_old_times(
    tmp_path: Path, rng: np.random.Generator, capsys: pytest.CaptureFixture[str]
) -> None:
    """Same size and modification time, one edge changed: --resume refuses another graph."""
    job, graph = _job(tmp_path, rng)
    assert main(["run", str(job)]) == 0
    capsys.readouterr()
    st = graph.stat()
    data = graph.read_bytes()
    first = data.index(b"\n")
    changed = data[:first].replace(b"0 1", b"0 2") + data[first:]
    assert changed != data
    assert len(changed) == len(data)
    graph.write_bytes(changed)
    os.utime(graph, ns=(st.st_atime_ns, st.st_mtime_ns))
    code, said = _resume(capsys, job)
    assert code == 2, said
    assert "another graph" in said
    assert "Fix:" in said


def test_the_graph_file_is_read_for_its_digest_once_per_change(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fingerprints of an unchanged file reuse the cached digest; a touch costs one read."""
    job, graph = _job(tmp_path, rng)
    spec = load_job(job)
    reads = 0
    digest = graph_digest.file_digest

    def counted(file: object) -> tuple[int, str]:
        nonlocal reads
        reads += 1
        return digest(file)  # type: ignore[arg-type]

    monkeypatch.setattr(graph_digest, "file_digest", counted)
    first = job_fingerprint(spec, job)
    assert job_fingerprint(spec, job) == first
    assert reads == 1
    st = graph.stat()
    os.utime(graph, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert job_fingerprint(spec, job) == first
    assert job_fingerprint(spec, job) == first
    assert reads == 2


def test_a_damaged_digest_entry_is_hashed_again_and_replaced(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry that is not JSON costs a hash, not the job, and is written anew."""
    monkeypatch.setenv("VYRE_ASYNC_GRAPH_CACHE_DIR", str(tmp_path / "cache"))
    job, _ = _job(tmp_path, rng)
    spec = load_job(job)
    first = job_fingerprint(spec, job)
    [entry] = (tmp_path / "cache" / "digests").glob("*.json")
    good = entry.read_bytes()
    entry.write_bytes(b"{not json")
    assert job_fingerprint(spec, job) == first
    assert entry.read_bytes() == good
