"""Chunks written at once and listed in order: the store's two commit phases and the
committer that drives them."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import anyio
import numpy as np
import pytest
from job_files import committed, expected_reach, job_file, random_sources, rmat_graph

from vyre_async.errors import ConfigurationError
from vyre_async.jobs import JobRunner, load_job, read_records
from vyre_async.jobs.output import CHUNKS_WRITTEN_AT_ONCE, ColumnRecords, ResultStore, record_layout
from vyre_async.jobs.runner._committer import Committer

LAYOUT = record_layout(["reach"])


def _block(first: int, count: int) -> ColumnRecords:
    ids = np.arange(first, first + count, dtype=np.int64)
    return ColumnRecords(
        LAYOUT.record_type,
        ids,
        ids % 7,
        {"reached": ids % 5 + 1},
        workload=0,
        kind="reach",
        attempts=1,
        run_ms=0.5,
    )


def test_chunks_written_out_of_order_are_listed_only_in_order(tmp_path: Path) -> None:
    """A chunk written before the one ahead of it waits: listing it first is refused,
    its items cannot be written again meanwhile, and after both are listed every item
    reads back once."""
    store = ResultStore.open(
        tmp_path / "o", layout=LAYOUT, job="j", fingerprint="f", total_items=8, resume=False
    )
    try:
        second = store.write_chunk(1, [_block(4, 4)], 0)
        with pytest.raises(ValueError, match="cannot be listed after 0 chunks"):
            store.list_chunk(second)
        with pytest.raises(ValueError, match="repeats an item"):
            store.write_chunk(2, [_block(6, 2)], 0)
        first = store.write_chunk(0, [_block(0, 4)], 0)
        store.list_chunk(first)
        store.list_chunk(second)
        store.finish()
    finally:
        store.close()
    got = sorted((r.id, r.reached) for r in read_records(tmp_path / "o"))
    assert got == [(i, i % 5 + 1) for i in range(8)]


def test_written_chunks_never_listed_are_removed_by_the_resume(tmp_path: Path) -> None:
    """A run that ends while chunks are written and not listed leaves at most
    CHUNKS_WRITTEN_AT_ONCE of its own files, numbered from the manifest's count; the
    resume removes them and the items are written again, once. A file of the same
    writer numbered beyond them is no run's leftover: it is refused."""
    out = tmp_path / "o"
    store = ResultStore.open(
        out, layout=LAYOUT, job="j", fingerprint="f", total_items=12, resume=False
    )
    store.list_chunk(store.write_chunk(0, [_block(0, 4)], 0))
    store.write_chunk(1, [_block(4, 4)], 0)
    store.write_chunk(2, [_block(8, 4)], 0)  # and the run ends
    writer = store.manifest.writer
    store.close()
    assert len(list((out / "chunks").iterdir())) == 3
    store = ResultStore.open(
        out, layout=LAYOUT, job="j", fingerprint="f", total_items=12, resume=True
    )
    try:
        assert [p.name for p in (out / "chunks").iterdir()] == [f"000000-{writer}.jsonl"]
        assert store.committed.tolist() == [True] * 4 + [False] * 8
        store.list_chunk(store.write_chunk(1, [_block(4, 8)], 0))
        store.finish()
    finally:
        store.close()
    assert sorted(r.id for r in read_records(out)) == list(range(12))

    beyond = tmp_path / "p"
    store = ResultStore.open(
        beyond, layout=LAYOUT, job="j", fingerprint="f", total_items=12, resume=False
    )
    store.list_chunk(store.write_chunk(0, [_block(0, 4)], 0))
    store.write_chunk(3, [_block(4, 4)], 0)
    store.close()
    with pytest.raises(ConfigurationError, match=r"000003-.*the last run did not write.*Fix:"):
        ResultStore.open(
            beyond, layout=LAYOUT, job="j", fingerprint="f", total_items=12, resume=True
        )


def test_a_committed_chunk_whose_entry_was_removed_is_refused_not_deleted(tmp_path: Path) -> None:
    """The manifest's last entry taken out of an unfinished job: resume refuses the folder,
    naming the missing chunk, and the committed chunk file stays (it used to be removed as
    the writer's uncommitted leftover)."""
    out = tmp_path / "o"
    store = ResultStore.open(
        out, layout=LAYOUT, job="j", fingerprint="f", total_items=12, resume=False
    )
    store.list_chunk(store.write_chunk(0, [_block(0, 4)], 0))
    store.list_chunk(store.write_chunk(1, [_block(4, 4)], 0))
    store.close()
    manifest = json.loads((out / "manifest.json").read_text())
    removed = manifest["chunks"].pop()["name"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ConfigurationError, match=r"chunk 000001's entry is missing.*Fix:"):
        ResultStore.open(out, layout=LAYOUT, job="j", fingerprint="f", total_items=12, resume=True)
    assert (out / "chunks" / removed).exists()


def test_an_older_manifest_restored_is_a_rollback_the_resume_cannot_tell(tmp_path: Path) -> None:
    """As the guide says: the manifest as it was two commits ago makes a resume remove the
    two chunks committed since (they are what it names as being written); three commits
    ago, the third is foreign and the folder is refused, nothing removed."""
    for back, removed in ((2, True), (3, False)):
        out = tmp_path / f"back{back}"
        store = ResultStore.open(
            out, layout=LAYOUT, job="j", fingerprint="f", total_items=20, resume=False
        )
        older = []
        for seq in range(5):
            older.append((out / "manifest.json").read_bytes())
            store.list_chunk(store.write_chunk(seq, [_block(4 * seq, 4)], 0))
        store.close()
        (out / "manifest.json").write_bytes(older[5 - back])
        files = sorted(p.name for p in (out / "chunks").iterdir())
        if removed:
            store = ResultStore.open(
                out, layout=LAYOUT, job="j", fingerprint="f", total_items=20, resume=True
            )
            store.close()
            assert sorted(p.name for p in (out / "chunks").iterdir()) == files[:3]
        else:
            with pytest.raises(ConfigurationError, match="the last run did not write"):
                ResultStore.open(
                    out, layout=LAYOUT, job="j", fingerprint="f", total_items=20, resume=True
                )
            assert sorted(p.name for p in (out / "chunks").iterdir()) == files


async def test_the_committer_writes_chunks_at_once_and_lists_them_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With slow chunk writes, CHUNKS_WRITTEN_AT_ONCE chunks are written at the same time (no
    more), the manifest lists them in order, and every record equals SciPy's."""
    writing = 0
    most = 0
    lock = threading.Lock()
    listed: list[int] = []
    write, list_chunk = ResultStore.write_chunk, ResultStore.list_chunk

    def slow_write(self: ResultStore, seq: int, *args: object) -> object:
        nonlocal writing, most
        with lock:
            writing += 1
            most = max(most, writing)
        time.sleep(0.05 if seq % 2 == 0 else 0.01)  # even chunks finish last
        try:
            return write(self, seq, *args)  # type: ignore[arg-type]
        finally:
            with lock:
                writing -= 1

    def record_listing(self: ResultStore, written: object) -> object:
        listed.append(written.seq)  # type: ignore[attr-defined]
        return list_chunk(self, written)  # type: ignore[arg-type]

    monkeypatch.setattr(ResultStore, "write_chunk", slow_write)
    monkeypatch.setattr(ResultStore, "list_chunk", record_listing)
    graph = rmat_graph()
    sources = random_sources(160, 3, graph.num_vertices)
    path = await job_file(tmp_path, [{"kind": "reach", "sources": sources}])
    spec = await anyio.to_thread.run_sync(load_job, path)
    summary = await JobRunner(spec, job_file=path).run()
    assert summary.status == "complete"
    assert most == CHUNKS_WRITTEN_AT_ONCE
    assert listed == sorted(listed) == list(range(len(listed)))
    assert len(listed) >= 4
    records = sorted(await committed(tmp_path / "out"), key=lambda r: r.id)
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in sources]


async def test_a_chunk_after_one_that_failed_to_write_is_not_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed chunk write ends the run with that error; a later chunk already written
    stays unlisted (no gap in the manifest), and the resume completes every item once."""
    write = ResultStore.write_chunk

    def failing(self: ResultStore, seq: int, *args: object) -> object:
        if seq == 1:
            time.sleep(0.05)  # chunk 2 is written meanwhile
            raise OSError(28, "No space left on device")
        return write(self, seq, *args)  # type: ignore[arg-type]

    graph = rmat_graph()
    sources = random_sources(160, 4, graph.num_vertices)
    path = await job_file(tmp_path, [{"kind": "reach", "sources": sources}])
    monkeypatch.setattr(ResultStore, "write_chunk", failing)
    spec = await anyio.to_thread.run_sync(load_job, path)
    with pytest.raises(ConfigurationError, match=r"chunk 1 .*No space left.*Fix: .*--resume"):
        await JobRunner(spec, job_file=path).run()
    manifest = json.loads(await anyio.Path(tmp_path / "out/manifest.json").read_text())
    assert len(manifest["chunks"]) == 1  # chunk 0 only
    assert len(await committed(tmp_path / "out")) == manifest["chunks"][0]["records"]
    chunk_files = await anyio.to_thread.run_sync(lambda: list((tmp_path / "out/chunks").iterdir()))
    assert len(chunk_files) >= 2  # and chunk 2 (or more), written and not listed
    monkeypatch.setattr(ResultStore, "write_chunk", write)
    summary = await JobRunner(spec, job_file=path, resume=True).run()
    assert summary.status == "complete"
    records = sorted(await committed(tmp_path / "out"), key=lambda r: r.id)
    assert [r.id for r in records] == list(range(160))
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in sources]
    listed = json.loads(await anyio.Path(tmp_path / "out/manifest.json").read_text())["chunks"]
    files = await anyio.to_thread.run_sync(lambda: list((tmp_path / "out/chunks").iterdir()))
    assert sorted(f.name for f in files) == sorted(c["name"] for c in listed)


async def test_the_last_chunk_is_written_before_the_devices_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the workers ran out of blocks the committer cuts its chunk at once (not when
    the record stream ends, after the target closed): here the only chunk (commit size
    and interval far away) is being written while the target is still open."""
    from contextlib import asynccontextmanager

    from vyre_async.jobs.runner import _executors

    written = anyio.Event()
    write = ResultStore.write_chunk
    seen_at_close: list[bool] = []

    def noting_write(self: ResultStore, *args: object) -> object:
        written_now = write(self, *args)  # type: ignore[arg-type]
        anyio.from_thread.run_sync(written.set)
        return written_now

    opened = _executors.local_target

    @asynccontextmanager
    async def watched(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        async with opened(*args, **kwargs) as target:  # type: ignore[arg-type]
            yield target
            with anyio.move_on_after(3):
                await written.wait()
            seen_at_close.append(written.is_set())

    monkeypatch.setattr(ResultStore, "write_chunk", noting_write)
    monkeypatch.setattr(_executors, "local_target", watched)
    graph = rmat_graph()
    sources = random_sources(100, 4, graph.num_vertices)
    path = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": sources}],
        output={"commit_items": 1_000_000, "commit_interval_s": 3600.0},
    )
    spec = await anyio.to_thread.run_sync(load_job, path)
    summary = await JobRunner(spec, job_file=path).run()
    assert summary.status == "complete"
    assert seen_at_close == [True]
    records = sorted(await committed(tmp_path / "out"), key=lambda r: r.id)
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in sources]


#: Chunks of a run over blocks of 4 records: 4 first, then doubling up to 40.
GROWING = {"first_commit_items": 4, "commit_items": 40, "commit_interval_s": 3600.0}


async def _chunk_sizes(out: Path) -> list[int]:
    manifest = json.loads(await anyio.Path(out / "manifest.json").read_text())
    return [chunk["records"] for chunk in manifest["chunks"]]


async def test_chunks_start_at_first_commit_items_and_double_up_to_commit_items(
    tmp_path: Path,
) -> None:
    """A run's first chunk holds ``first_commit_items`` records, each next one twice the
    one before, then ``commit_items``; every record equals SciPy's."""
    graph = rmat_graph()
    sources = random_sources(300, 6, graph.num_vertices)
    path = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": sources}],
        output=GROWING,
        batching={"max_batch": 4},
    )
    spec = await anyio.to_thread.run_sync(load_job, path)
    summary = await JobRunner(spec, job_file=path).run()
    assert summary.status == "complete"
    assert await _chunk_sizes(tmp_path / "out") == [4, 8, 16, 32] + [40] * 6
    records = sorted(await committed(tmp_path / "out"), key=lambda r: r.id)
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in sources]


async def test_a_resumed_run_starts_again_from_a_small_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run stopped after its first two chunks (a full disk) resumes with chunks that
    grow again from ``first_commit_items``; every item is committed once."""
    write = ResultStore.write_chunk

    def failing(self: ResultStore, seq: int, *args: object) -> object:
        if seq == 2:
            raise OSError(28, "No space left on device")
        return write(self, seq, *args)  # type: ignore[arg-type]

    graph = rmat_graph()
    sources = random_sources(100, 8, graph.num_vertices)
    path = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": sources}],
        output=GROWING,
        batching={"max_batch": 4},
    )
    spec = await anyio.to_thread.run_sync(load_job, path)
    monkeypatch.setattr(ResultStore, "write_chunk", failing)
    with pytest.raises(ConfigurationError, match="No space left"):
        await JobRunner(spec, job_file=path).run()
    assert await _chunk_sizes(tmp_path / "out") == [4, 8]
    monkeypatch.setattr(ResultStore, "write_chunk", write)
    summary = await JobRunner(spec, job_file=path, resume=True).run()
    assert summary.status == "complete"
    assert await _chunk_sizes(tmp_path / "out") == [4, 8, 4, 8, 16, 32, 28]
    records = sorted(await committed(tmp_path / "out"), key=lambda r: r.id)
    assert [r.id for r in records] == list(range(100))
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in sources]


async def test_a_later_chunk_failing_first_does_not_unlist_an_earlier_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunk 2's write fails while chunk 1 is still being written (two are written at
    once): chunk 1, whose predecessors are all listed, is listed all the same."""
    assert CHUNKS_WRITTEN_AT_ONCE >= 2
    write = ResultStore.write_chunk
    failure_seen = threading.Event()
    report = Committer._write_failed

    def failing(self: ResultStore, seq: int, *args: object) -> object:
        if seq == 1:  # finishes only once chunk 2's failure has been handled
            assert failure_seen.wait(30), "chunk 2 never failed"
        if seq == 2:
            raise OSError(28, "No space left on device")
        return write(self, seq, *args)  # type: ignore[arg-type]

    def reported(self: Committer, what: str, exc: OSError) -> ConfigurationError:
        failure_seen.set()
        return report(self, what, exc)

    graph = rmat_graph()
    sources = random_sources(100, 8, graph.num_vertices)
    path = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": sources}],
        output=GROWING,
        batching={"max_batch": 4},
    )
    spec = await anyio.to_thread.run_sync(load_job, path)
    monkeypatch.setattr(ResultStore, "write_chunk", failing)
    monkeypatch.setattr(Committer, "_write_failed", reported)
    with pytest.raises(ConfigurationError, match=r"committing chunk 2.*No space left"):
        await JobRunner(spec, job_file=path).run()
    assert await _chunk_sizes(tmp_path / "out") == [4, 8]
