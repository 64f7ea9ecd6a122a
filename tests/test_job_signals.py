"""The runner in child processes: kill -9 at random moments, signals at any moment, resumes.

The kill and signal tests run in two variants: reach counts as JSON lines, and full BFS
levels as Parquet chunks with one stacked array file per chunk.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from graph_references import scipy_levels
from job_files import expected_reach, random_sources, rmat_graph, write_job

from vyre_async.jobs import open_item_arrays, read_records

CHILD = Path(__file__).with_name("job_child.py")
CLI_CHILD = Path(__file__).with_name("cli_slow_child.py")
ITEMS = 1200
#: What the kill and signal tests run: a workload and the chunk format.
VARIANTS: dict[str, tuple[dict[str, object], str]] = {
    "jsonl-counts": ({"kind": "reach"}, "jsonl"),
    "parquet-levels": ({"kind": "bfs", "readback": "levels"}, "parquet"),
    # Shortest-path counts without a bound: every reachable vertex, as reach counts.
    "jsonl-sssp-counts": ({"kind": "sssp"}, "jsonl"),
}
variants = pytest.mark.parametrize("variant", VARIANTS)


def _job(folder: Path, variant: str = "jsonl-counts", **limits: float) -> Path:
    workload, chunk_format = VARIANTS[variant]
    if chunk_format == "parquet":
        pytest.importorskip("pyarrow", reason="pyarrow is in the test extra; CI runs this")
    return write_job(
        folder,
        [{**workload, "sources": {"random": ITEMS, "seed": 2}}],
        graph={"weights": "uniform"} if workload["kind"] == "sssp" else {},
        batching={"max_batch": 8},
        # Chunks of 8, 16, then 24 records: kills land in growing chunks too.
        output={"commit_items": 24, "first_commit_items": 8, "commit_interval_s": 0.02}
        | ({"format": chunk_format} if chunk_format != "jsonl" else {}),
        limits=limits,
    )


def _start(
    job: Path, out: Path, *, resume: bool, delay: float, **hooks: float
) -> subprocess.Popen[str]:
    """job_child.py on ``job``; ``hooks`` set its other VYRE_TEST_* variables."""
    env = {**os.environ, "VYRE_TEST_BLOCK_DELAY": str(delay), "PYTHONPATH": _pythonpath()}
    env.update({f"VYRE_TEST_{name.upper()}": str(value) for name, value in hooks.items()})
    args = [sys.executable, str(CHILD), str(job), str(out)] + (["--resume"] if resume else [])
    return subprocess.Popen(  # noqa: S603 - this repository's own child script
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _pythonpath() -> str:
    root = str(Path(__file__).resolve().parents[1])
    return os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])


def _finish(job: Path, out: Path) -> dict[str, object]:
    child = _start(job, out, resume=(out / "manifest.json").exists(), delay=0.0)
    stdout, stderr = child.communicate(timeout=120)
    assert child.returncode == 0, stderr
    summary: dict[str, object] = json.loads(stdout.splitlines()[-1])  # after any log lines
    return summary


def _wait_for_a_commit(out: Path, child: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        manifest = out / "manifest.json"
        if manifest.exists() and json.loads(manifest.read_text())["chunks"]:
            return
        time.sleep(0.01)
    raise AssertionError("the child committed nothing within 60 s")


def _check_exactly_once(out: Path) -> None:
    """Every item once, each equal to SciPy's reach count from its seeded source; every
    file in chunks/ and arrays/ committed; sampled levels equal SciPy's."""
    records = list(read_records(out))
    ids = [r.id for r in records]
    assert len(ids) == len(set(ids)), "a record was committed twice"
    assert sorted(ids) == list(range(ITEMS))
    graph = rmat_graph()
    sources = random_sources(ITEMS, 2, graph.num_vertices)
    reach = {s: expected_reach(graph, s) for s in set(sources)}
    for record in records:
        assert record.ok
        assert record.source == sources[record.id]
        assert record.reached == reach[sources[record.id]]
    chunks = json.loads((out / "manifest.json").read_text())["chunks"]
    assert sorted(p.name for p in (out / "chunks").iterdir()) == sorted(c["name"] for c in chunks)
    committed_arrays = sorted(f[0] for c in chunks for f in c["files"])
    assert sorted(f"arrays/{p.name}" for p in (out / "arrays").iterdir()) == committed_arrays
    with_arrays = [r for r in records if r.array is not None]
    if with_arrays:
        assert len(with_arrays) == ITEMS
        assert len(committed_arrays) == len(chunks) < ITEMS // 2  # not one file per item
        with open_item_arrays(out) as arrays:
            for record in with_arrays[:: ITEMS // 40]:
                levels = arrays.read(str(record.array), record.id)
                np.testing.assert_array_equal(levels, scipy_levels(graph, sources[record.id]))


def _chunk_ids(out: Path) -> list[int]:
    """The ids in every chunk file under chunks/, read without vyre_async."""
    ids: list[int] = []
    for path in sorted((out / "chunks").iterdir()):
        if path.suffix == ".parquet":
            pq = pytest.importorskip("pyarrow.parquet")
            ids += pq.read_table(path, columns=["id"]).column("id").to_pylist()
        else:
            ids += [json.loads(line)["id"] for line in path.read_text().splitlines()]
    return ids


@variants
def test_kill_9_at_random_moments_then_resume_commits_every_item_exactly_once(
    tmp_path: Path, rng: np.random.Generator, variant: str
) -> None:
    """SIGKILL four times at random points (any phase), resume: the uninterrupted result set."""
    job = _job(tmp_path, variant)
    reference = tmp_path / "reference"
    child = _start(job, reference, resume=False, delay=0.005)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 0, stderr
    want = sorted(read_records(reference), key=lambda r: r.id)
    _check_exactly_once(reference)

    out = tmp_path / "killed"
    for _ in range(4):
        # A kill before the first manifest leaves no job to resume: start it again then.
        child = _start(job, out, resume=(out / "manifest.json").exists(), delay=0.005)
        time.sleep(float(rng.uniform(0.2, 1.5)))  # a random kill point, not a timing check
        child.kill()
        child.communicate(timeout=60)
        records = list(read_records(out)) if (out / "manifest.json").exists() else []
        assert len({r.id for r in records}) == len(records), "duplicates after a kill"
    summary = _finish(job, out)
    assert summary["status"] == "complete"
    got = sorted(read_records(out), key=lambda r: r.id)
    assert [(r.id, r.source, r.reached) for r in got] == [(r.id, r.source, r.reached) for r in want]
    _check_exactly_once(out)
    assert sorted(_chunk_ids(out)) == list(range(ITEMS))


@variants
def test_sigterm_drains_commits_and_exits_143_with_how_to_resume(
    tmp_path: Path, variant: str
) -> None:
    """First SIGTERM: in-flight work finishes and is committed, exit 143; resume completes."""
    job = _job(tmp_path, variant)
    out = tmp_path / "out"
    child = _start(job, out, resume=False, delay=0.02)
    _wait_for_a_commit(out, child)
    child.send_signal(signal.SIGTERM)
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == 143, stderr
    assert "SIGTERM" in stderr
    assert "finishing in-flight work" in stderr
    summary = json.loads(stdout.splitlines()[-1])
    assert summary["status"] == "interrupted"
    assert "--resume" in summary["message"]
    first = list(read_records(out))
    assert 0 < len(first) < ITEMS
    assert summary["items_committed"] == len(first)
    resumed = _finish(job, out)
    assert resumed["items_skipped"] == len(first)
    _check_exactly_once(out)


@variants
def test_a_second_signal_exits_at_once_and_leaves_committed_output_intact(
    tmp_path: Path, variant: str
) -> None:
    """SIGINT twice: exit 130 without waiting for the drain; what was committed reads back."""
    job = _job(tmp_path, variant)
    out = tmp_path / "out"
    child = _start(job, out, resume=False, delay=2.0)  # blocks far slower than the test
    _wait_for_a_commit(out, child)
    child.send_signal(signal.SIGINT)
    time.sleep(0.2)  # let the first signal be handled; not a timing check
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=20)
    assert child.returncode == 130, stderr
    assert "exiting now" in stderr
    first = list(read_records(out))
    assert len({r.id for r in first}) == len(first)
    _finish(job, out)
    _check_exactly_once(out)


def test_a_second_sigint_on_the_command_line_still_prints_how_to_resume(tmp_path: Path) -> None:
    """vyre-async run, SIGINT twice: exit 130 with what is committed and the --resume command."""
    job = _job(tmp_path)
    out = tmp_path / "out"
    env = {**os.environ, "VYRE_TEST_BLOCK_DELAY": "2.0", "PYTHONPATH": _pythonpath()}
    child = subprocess.Popen(  # noqa: S603 - this repository's own child script
        [sys.executable, str(CLI_CHILD), "run", str(job), "--out", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_a_commit(out, child)
    child.send_signal(signal.SIGINT)
    time.sleep(0.2)  # let the first signal be handled; not a timing check
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=20)
    assert child.returncode == 130, stderr
    committed = len(list(read_records(out)))
    assert f"exited at once on a second SIGINT: {committed} of {ITEMS} items committed" in stdout
    assert f"to finish it: vyre-async run {job} --resume --out {out}" in stderr


def _lines(stream: object) -> queue.SimpleQueue[str]:
    """The lines of a child's pipe, as they come (read by a thread)."""
    lines: queue.SimpleQueue[str] = queue.SimpleQueue()

    def read() -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.put(line)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    return lines


def _close(child: subprocess.Popen[str], lines: queue.SimpleQueue[str]) -> str:
    """Wait for the child, read its standard error to the end, close its pipes."""
    child.wait(timeout=60)
    seen: list[str] = []
    _wait_for_line(lines, "", seen)  # the end of the stream
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()
    return "".join(seen)


def _wait_for_line(lines: queue.SimpleQueue[str], wanted: str, seen: list[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        seen.append(line)
        if wanted in line:
            return
        if not line:
            break
    raise AssertionError(f"the child never printed {wanted!r}: {''.join(seen)[-2000:]}")


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


@variants
def test_past_the_drain_deadline_what_is_done_is_committed_without_waiting_for_threads(
    tmp_path: Path, variant: str
) -> None:
    """SIGTERM while blocks wait 60 s in threads, drain_timeout_s = 1: exit 143 long before."""
    job = _job(tmp_path, variant, drain_timeout_s=1.0)
    out = tmp_path / "out"
    child = _start(job, out, resume=False, delay=0.01, stall_after=6, stall_s=60.0)
    _wait_for_a_commit(out, child)
    time.sleep(0.3)  # let the workers reach the stalled blocks; not a timing check
    child.send_signal(signal.SIGTERM)
    try:
        stdout, stderr = child.communicate(timeout=30)  # the stalled threads would take 60 s
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise
    assert child.returncode == 143, stderr
    assert "job_drain_deadline_passed" in stderr
    assert "Traceback" not in stderr
    summary = json.loads(stdout.splitlines()[-1])
    assert summary["status"] == "interrupted"
    first = list(read_records(out))
    assert summary["items_committed"] == len(first) > 0
    assert len({r.id for r in first}) == len(first)
    _finish(job, out)
    _check_exactly_once(out)


def _sigterm_caught(pid: int) -> bool:
    """Whether the process has a handler for SIGTERM (its /proc status says so)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


@variants
def test_a_signal_at_any_moment_from_the_start_ends_cleanly_and_leaves_a_resumable_folder(
    tmp_path: Path, rng: np.random.Generator, variant: str
) -> None:
    """The console script, signalled during import, graph load, verification or the run:
    exit 130/143 (or 0 if it finished), never a traceback; then the job completes exactly once."""
    job = _job(tmp_path, variant)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": _pythonpath()}
    for round_ in range(6):
        signum = (signal.SIGINT, signal.SIGTERM)[round_ % 2]
        args = [sys.executable, "-m", "_vyre_async_entry", "run", str(job), "--out", str(out)]
        if (out / "manifest.json").exists():
            args.append("--resume")
        child = subprocess.Popen(  # noqa: S603 - this repository's own console script
            args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        # From the moment the first handler is in place (before vyre_async is imported):
        # what comes before is the interpreter's own start-up.
        deadline = time.monotonic() + 30
        while not _sigterm_caught(child.pid) and time.monotonic() < deadline:
            time.sleep(0.001)
        # First while vyre_async is being imported, then at random moments.
        time.sleep(0.0 if round_ == 0 else float(rng.uniform(0.0, 0.8)))
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=60)
        assert child.returncode in (0, 128 + signum), stderr
        assert "Traceback" not in stderr
        assert "KeyboardInterrupt" not in stderr
        if (out / "manifest.json").exists():
            records = list(read_records(out))
            assert len({r.id for r in records}) == len(records)
    _finish(job, out)
    _check_exactly_once(out)


def test_a_signal_while_the_summary_is_written_after_a_drain_ends_the_run_cleanly(
    tmp_path: Path,
) -> None:
    """SIGTERM drains; another SIGTERM as the summary is written: exit 143 with a message."""
    job = _job(tmp_path)
    out = tmp_path / "out"
    child = _start(job, out, resume=False, delay=0.02, summary_delay=5.0)
    lines = _lines(child.stderr)
    _wait_for_a_commit(out, child)
    child.send_signal(signal.SIGTERM)
    seen: list[str] = []
    _wait_for_line(lines, "writing summary", seen)
    child.send_signal(signal.SIGTERM)
    child.wait(timeout=30)  # the summary's 5 s would run out first without the handler
    stderr = "".join(seen) + _close(child, lines)
    assert child.returncode == 143, stderr
    assert "exiting now" in stderr
    assert "Traceback" not in stderr
    first = list(read_records(out))
    assert len({r.id for r in first}) == len(first)
    _finish(job, out)
    _check_exactly_once(out)


@pytest.mark.parametrize("chunk_format", ["jsonl", "parquet"])
def test_kill_9_during_the_checksum_verification_of_a_resume_loses_and_changes_nothing(
    tmp_path: Path, rng: np.random.Generator, chunk_format: str
) -> None:
    """A levels job stopped part way; its resume killed while verifying array files: the
    folder is byte for byte as before, and the next resume completes with every item once."""
    if chunk_format == "parquet":
        pytest.importorskip("pyarrow", reason="pyarrow is in the test extra; CI runs this")
    job = write_job(
        tmp_path,
        [{"kind": "bfs", "readback": "levels", "sources": {"random": 300, "seed": 2}}],
        batching={"max_batch": 8},
        output={"commit_items": 16, "commit_interval_s": 0.02}
        | ({"format": chunk_format} if chunk_format != "jsonl" else {}),
    )
    out = tmp_path / "out"
    child = _start(job, out, resume=False, delay=0.1)
    _wait_for_a_commit(out, child)
    time.sleep(0.3)  # some more commits; not a timing check
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 143, stderr
    before = _snapshot(out)
    assert any(name.startswith("arrays/") for name in before)
    # One array file per chunk: the checks of all of them take 2 s, the kill comes in the
    # first second of them.
    files = sum(name.startswith("arrays/") for name in before)
    child = _start(job, out, resume=True, delay=0.0, verify_delay=2.0 / files)
    lines = _lines(child.stderr)
    _wait_for_line(lines, "verifying", [])
    time.sleep(float(rng.uniform(0.0, 1.0)))  # a random point of the verification
    child.kill()
    _close(child, lines)
    assert _snapshot(out) == before
    child = _start(job, out, resume=True, delay=0.0)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 0, stderr
    records = list(read_records(out))
    assert sorted(r.id for r in records) == list(range(300))
    graph = rmat_graph()
    sources = random_sources(300, 2, graph.num_vertices)
    with open_item_arrays(out) as arrays:
        for record in rng.choice(np.array(records, dtype=object), 20, replace=False):
            assert record.array is not None
            levels = arrays.read(record.array, record.id)
            assert np.array_equal(levels, scipy_levels(graph, sources[record.id]))
