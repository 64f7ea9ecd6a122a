"""A job's output folder: no link followed, no foreign file touched, one run at a time,
every tampering detected, resume and summary behaviour (through the CLI, in process)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from job_files import write_job

import vyre_async as va
from vyre_async.cli import main
from vyre_async.jobs import read_records
from vyre_async.jobs.output import RecordLayout, ResultStore, record_layout
from vyre_async.jobs.output._atomic import Folder

LAYOUT = record_layout(["reach"])

LEVELS = [
    {"kind": "bfs", "readback": "levels", "sources": {"random": 24, "seed": 3}},
    {"kind": "reach", "sources": {"random": 40, "seed": 4}},
    {"kind": "pagerank"},
]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["run", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links as their target) with a hash of its bytes."""
    found = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            found[name] = f"-> {os.readlink(path)}"
        elif path.is_file() and path.name != ".lock":  # a run records its pid there
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _completed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], chunk_format: str = "jsonl"
) -> tuple[Path, Path]:
    """A complete job with several chunks and array files: (job file, output folder)."""
    formats = {"format": chunk_format} if chunk_format != "jsonl" else {}
    job = write_job(tmp_path, LEVELS, output={"commit_items": 8} | formats)
    code, _, err = _run(capsys, str(job))
    assert code == 0, err
    return job, tmp_path / "out"


def _manifest(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / "manifest.json").read_text())
    return data


def _chunks(out: Path) -> list[dict[str, object]]:
    chunks: list[dict[str, object]] = _manifest(out)["chunks"]  # type: ignore[assignment]
    return chunks


def _write_manifest(out: Path, change: Callable[[dict[str, object]], None]) -> None:
    data = _manifest(out)
    change(data)
    (out / "manifest.json").write_text(json.dumps(data))


def test_a_symlinked_chunks_folder_is_refused_and_nothing_outside_is_touched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """o/chunks -> victim/: exit 2 naming the link; victim/thesis.txt kept, nothing written."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "thesis.txt").write_text("four years of work")
    out = tmp_path / "o"
    out.mkdir()
    (out / "chunks").symlink_to(victim)
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1]}])
    code, _, err = _run(capsys, str(job), "--out", str(out))
    assert code == 2, err
    assert "chunks (a symlink)" in err
    assert "Fix:" in err
    assert "Traceback" not in err
    assert sorted(p.name for p in victim.iterdir()) == ["thesis.txt"]
    assert (victim / "thesis.txt").read_text() == "four years of work"
    assert sorted(p.name for p in out.iterdir()) == ["chunks"]


@pytest.mark.parametrize("where", ["chunks/important.txt", "arrays/7.npy", "log.jsonl"])
def test_a_new_folder_holding_files_it_did_not_write_is_refused_and_they_are_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """Files in a folder without a manifest (even with a job's names): exit 2, kept, no lock."""
    out = tmp_path / "o"
    (out / where).parent.mkdir(parents=True, exist_ok=True)
    (out / where).write_text("keep me")
    before = _snapshot(out)
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}])
    code, _, err = _run(capsys, str(job), "--out", str(out))
    assert code == 2, err
    assert "Fix:" in err
    assert _snapshot(out) == before
    assert not (out / ".lock").exists(), "a refused folder gets nothing written into it"


@pytest.mark.parametrize(
    "attack",
    [
        "unknown file in chunks",
        "log is a symlink",
        "chunks is a symlink",
        "array is a symlink",
        "an array file of a committed chunk without arrays",
    ],
)
def test_a_job_folder_with_something_foreign_is_refused_on_resume_and_left_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], attack: str
) -> None:
    """A file, or a link, that the manifest does not explain: exit 2, nothing deleted or written."""
    job, out = _completed(tmp_path, capsys)
    victim = tmp_path / "victim.txt"
    victim.write_text("outside")
    if attack == "unknown file in chunks":
        (out / "chunks" / "important.txt").write_text("keep me")
    elif attack == "log is a symlink":
        (out / "log.jsonl").unlink()
        (out / "log.jsonl").symlink_to(victim)
    elif attack == "chunks is a symlink":
        (out / "chunks").rename(tmp_path / "moved")
        (out / "chunks").symlink_to(tmp_path / "moved")
    elif attack == "array is a symlink":
        (out / "arrays" / "999-0badc0de.npy").symlink_to(victim)
    else:  # the last writer's token and a committed number: no run leaves such a file
        seq = next(i for i, c in enumerate(_chunks(out)) if not c["files"])
        (out / "arrays" / f"{seq:06d}-{_manifest(out)['writer']}.npz").write_bytes(b"x")
    before = _snapshot(out)
    code, _, err = _run(capsys, str(job), "--resume")
    assert code == 2, err
    assert "Fix:" in err
    assert "Traceback" not in err
    assert _snapshot(out) == before
    assert victim.read_text() == "outside"


def _chunk_with(out: Path, wanted: Callable[[dict[str, object], bytes], bool]) -> int:
    """Index in the manifest of the first chunk for which ``wanted(entry, bytes)`` holds."""
    for index, entry in enumerate(_chunks(out)):
        if wanted(entry, (out / "chunks" / str(entry["name"])).read_bytes()):
            return index
    raise AssertionError("no such chunk")


def _flip_a_digit(out: Path) -> str:
    index = _chunk_with(out, lambda _, data: b'"reached":' in data)
    path = out / "chunks" / str(_chunks(out)[index]["name"])
    data = bytearray(path.read_bytes())
    at = data.index(b'"reached":') + len(b'"reached":')
    data[at] = ord("1") if data[at] != ord("1") else ord("2")
    path.write_bytes(bytes(data))
    return str(path)


def _break_json(out: Path) -> str:
    path = out / "chunks" / str(_chunks(out)[0]["name"])
    path.write_bytes(b"[" + path.read_bytes()[1:])
    return str(path)


def _rename_id(out: Path) -> str:
    path = out / "chunks" / str(_chunks(out)[0]["name"])
    path.write_bytes(path.read_bytes().replace(b'"id"', b'"ix"', 1))
    return str(path)


def _drop_middle_entry(out: Path) -> str:
    name = str(_chunks(out)[1]["name"])
    _write_manifest(out, lambda m: m["chunks"].pop(1))  # type: ignore[attr-defined]
    return name


def _repeat_an_id_and_fix_the_checksum(out: Path) -> str:
    index = _chunk_with(out, lambda entry, _: int(entry["records"]) >= 2)  # type: ignore[call-overload]
    entry = _chunks(out)[index]
    path = out / "chunks" / str(entry["name"])
    lines = path.read_bytes().splitlines(keepends=True)
    first, second = json.loads(lines[0]), json.loads(lines[1])
    second["id"] = first["id"]
    lines[1] = json.dumps(second, separators=(",", ":")).encode() + b"\n"
    data = b"".join(lines)
    path.write_bytes(data)

    def fix(manifest: dict[str, object]) -> None:
        chunk = manifest["chunks"][index]  # type: ignore[index]
        chunk["bytes"], chunk["sha256"] = len(data), hashlib.sha256(data).hexdigest()

    _write_manifest(out, fix)
    return str(path)


def _an_array(out: Path) -> Path:
    index = _chunk_with(out, lambda entry, _: bool(entry["files"]))
    return out / str(_chunks(out)[index]["files"][0][0])  # type: ignore[index]


def _delete_array(out: Path) -> str:
    _an_array(out).unlink()
    return str(_an_array(out))


def _truncate_array(out: Path) -> str:
    path = _an_array(out)
    path.write_bytes(path.read_bytes()[:-4])
    return str(path)


def _replace_array(out: Path) -> str:
    path = _an_array(out)
    with np.load(path) as npz:
        members = {name: npz[name].copy() for name in npz.files}
    first = next(iter(members))
    members[first].flat[0] += 1
    np.savez(path, **members)  # type: ignore[arg-type]
    return str(path)


def _swap_array_files(out: Path) -> str:
    files = [out / str(c["files"][0][0]) for c in _chunks(out) if c["files"]]  # type: ignore[index]
    files[1].write_bytes(files[0].read_bytes())
    return str(files[1])


def _name_another_array_file_and_fix_the_checksum(out: Path) -> str:
    chunks = _chunks(out)
    index = _chunk_with(out, lambda entry, _: bool(entry["files"]))
    other = next(c for i, c in enumerate(chunks) if c["files"] and i != index)
    path = out / "chunks" / str(chunks[index]["name"])
    own = str(chunks[index]["files"][0][0]).encode()  # type: ignore[index]
    data = path.read_bytes().replace(own, str(other["files"][0][0]).encode(), 1)  # type: ignore[index]
    path.write_bytes(data)

    def fix(manifest: dict[str, object]) -> None:
        chunk = manifest["chunks"][index]  # type: ignore[index]
        chunk["bytes"], chunk["sha256"] = len(data), hashlib.sha256(data).hexdigest()

    _write_manifest(out, fix)
    return str(path)


def _parquet_chunk(out: Path) -> tuple[int, Path]:
    index = _chunk_with(out, lambda entry, _: int(entry["records"]) >= 2)  # type: ignore[call-overload]
    return index, out / "chunks" / str(_chunks(out)[index]["name"])


def _flip_a_parquet_byte(out: Path) -> str:
    _, path = _parquet_chunk(out)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    return str(path)


def _rewrite_parquet_and_fix_the_checksum(out: Path, change: Callable[[Any], Any]) -> str:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    index, path = _parquet_chunk(out)
    sink = pa.BufferOutputStream()
    pq.write_table(change(pq.read_table(path)), sink)
    data = sink.getvalue().to_pybytes()
    path.write_bytes(data)

    def fix(manifest: dict[str, object]) -> None:
        chunk = manifest["chunks"][index]  # type: ignore[index]
        chunk["bytes"], chunk["sha256"] = len(data), hashlib.sha256(data).hexdigest()

    _write_manifest(out, fix)
    return str(path)


def _repeat_a_parquet_id(out: Path) -> str:
    def repeat(table: Any) -> Any:
        ids = table.column("id").to_pylist()
        ids[1] = ids[0]
        return table.set_column(0, table.schema.field(0), [ids])

    return _rewrite_parquet_and_fix_the_checksum(out, repeat)


def _drop_a_parquet_column(out: Path) -> str:
    return _rewrite_parquet_and_fix_the_checksum(out, lambda table: table.drop_columns(["ok"]))


def _delete_manifest(out: Path) -> str:
    (out / "manifest.json").unlink()
    return "manifest.json"


def _escape_by_name(out: Path) -> str:
    _write_manifest(out, lambda m: m["chunks"][0].update(name="../../x.jsonl"))  # type: ignore[index]
    return "../../x.jsonl"


def _change_total(out: Path) -> str:
    _write_manifest(out, lambda m: m.update(total_items=10))
    return "of 10 items; this job has 65"


#: Changes to a complete job's folder, each with the chunk formats it applies to.
TAMPERING: dict[str, tuple[tuple[str, ...], Callable[[Path], str]]] = {
    "a digit of a committed chunk, same size": (("jsonl",), _flip_a_digit),
    "a chunk that is no longer JSON, same size": (("jsonl",), _break_json),
    "a record without its id, same size": (("jsonl",), _rename_id),
    "a byte of a Parquet chunk, same size": (("parquet",), _flip_a_parquet_byte),
    "a Parquet chunk without a column, checksum fixed": (("parquet",), _drop_a_parquet_column),
    "an id repeated inside a Parquet chunk, checksum fixed": (("parquet",), _repeat_a_parquet_id),
    "a middle entry removed from the manifest": (("jsonl", "parquet"), _drop_middle_entry),
    "an id repeated inside a chunk, checksum fixed": (
        ("jsonl",),
        _repeat_an_id_and_fix_the_checksum,
    ),
    "a record naming another chunk's array file, checksum fixed": (
        ("jsonl",),
        _name_another_array_file_and_fix_the_checksum,
    ),
    "a committed array file deleted": (("jsonl", "parquet"), _delete_array),
    "a committed array file truncated": (("jsonl", "parquet"), _truncate_array),
    "an item's array replaced in its array file": (("jsonl", "parquet"), _replace_array),
    "an array file copied over another": (("jsonl", "parquet"), _swap_array_files),
    "manifest.json deleted": (("jsonl",), _delete_manifest),
    "a chunk name leading out of the folder": (("jsonl",), _escape_by_name),
    "total_items changed in the manifest": (("jsonl",), _change_total),
}


@pytest.mark.parametrize(
    ("chunk_format", "tamper"),
    [
        pytest.param(chunk_format, tamper, id=f"{chunk_format}: {name}")
        for name, (formats, tamper) in TAMPERING.items()
        for chunk_format in formats
    ],
)
def test_each_kind_of_tampering_is_refused_with_exit_2_naming_the_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    chunk_format: str,
    tamper: Callable[[Path], str],
) -> None:
    """--resume after the change: exit 2, the file (or number) named, a fix; nothing touched."""
    job, out = _completed(tmp_path, capsys, chunk_format)
    named = tamper(out)
    before = _snapshot(out)
    code, _, err = _run(capsys, str(job), "--resume")
    assert code == 2, err
    assert named in err
    assert "Fix:" in err
    assert "Traceback" not in err
    assert _snapshot(out) == before, "a refused resume changed the folder"


def test_the_last_writers_uncommitted_files_are_removed_and_the_job_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A chunk and arrays a killed commit left (the writer's token): removed; the rest reruns."""
    job = write_job(tmp_path, LEVELS, output={"commit_items": 8})
    out = tmp_path / "out"
    store = ResultStore.open(
        out, layout=LAYOUT, job="test-job", fingerprint="f", total_items=65, resume=False
    )
    store.close()
    # What a run of the same job left when killed mid-commit: the next chunk, its temp
    # file, arrays (one under a temp name). Writer token from the manifest.
    job_code, _, err = _run(capsys, str(job), "--out", str(tmp_path / "reference"))
    assert job_code == 0, err
    writer = _manifest(out)["writer"]
    leftovers = [
        out / "chunks" / f"000000-{writer}.jsonl",
        out / "chunks" / f".tmp-4242-000000-{writer}.jsonl",
        out / "arrays" / f"000000-{writer}.npz",
        out / "arrays" / f".tmp-4242-000001-{writer}.npz",
    ]
    for path in leftovers:
        path.write_bytes(b"half written")
    code, _, err = _run(capsys, str(job), "--out", str(out), "--resume")
    assert code == 0, err
    assert not any(path.exists() for path in leftovers)
    got = sorted((r.id, r.source, r.reached) for r in read_records(out))
    want = sorted((r.id, r.source, r.reached) for r in read_records(tmp_path / "reference"))
    assert got == want


def test_files_named_like_the_writers_next_chunk_in_a_complete_folder_are_refused_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A complete job's writer is writing nothing: a chunk- or array-shaped file with its
    token is foreign (exit 2, named, kept), not a leftover to delete."""
    job, out = _completed(tmp_path, capsys)
    manifest = _manifest(out)
    after = f"{len(_chunks(out)):06d}-{manifest['writer']}"
    planted = [out / "chunks" / f"{after}.jsonl", out / "arrays" / f"{after}.npz"]
    for path in planted:
        path.write_text("my own notes")
    code, _, err = _run(capsys, str(job), "--resume")
    assert code == 2, err
    assert f"{after}.jsonl" in err
    assert "Fix:" in err
    assert all(path.read_text() == "my own notes" for path in planted)


def test_a_removed_temp_file_of_the_manifest_is_logged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A manifest temp file a killed run left is removed on resume, and the console log
    says so (as it does for chunk leftovers)."""
    job, out = _completed(tmp_path, capsys)
    temp = out / ".tmp-4242-manifest.json"
    temp.write_text("{half")
    code, _, err = _run(capsys, str(job), "--resume")
    assert code == 0, err
    assert not temp.exists()
    removed = [line for line in err.splitlines() if "removing_uncommitted_file" in line]
    assert any(str(temp) in line for line in removed), err


def test_a_folder_of_the_previous_manifest_format_is_read_but_not_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Format 3 (no chunks-being-written list, a fingerprint of the graph file's times):
    its records read back; --resume exits 2 saying which format and what to do."""
    job, out = _completed(tmp_path, capsys)
    before = sorted((r.id, r.reached) for r in read_records(out))

    def to_format_3(manifest: dict[str, object]) -> None:
        manifest["format"] = 3
        del manifest["writing"]

    _write_manifest(out, to_format_3)
    assert sorted((r.id, r.reached) for r in read_records(out)) == before
    code, _, err = _run(capsys, str(job), "--resume")
    assert code == 2, err
    assert "manifest format 3" in err
    assert "Fix:" in err


def test_a_resumed_run_names_its_chunks_apart_from_every_earlier_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Chunks of two runs carry different writer tokens; no chunk file is ever replaced."""
    _, out = _completed(tmp_path, capsys)
    first = {str(c["name"]) for c in _chunks(out)}
    store = ResultStore.open(
        out,
        layout=msgspec.convert(_manifest(out)["records"], RecordLayout),
        job="test-job",
        fingerprint=str(_manifest(out)["fingerprint"]),
        total_items=65,
        resume=True,
    )
    try:
        tokens = {name.split("-")[1] for name in first}
        assert store.manifest.writer not in tokens
        records = list(read_records(out))
        with pytest.raises(ValueError, match="committed already"):
            store.commit(records[:1])
    finally:
        store.close()
    folder = Folder.open(out / "chunks")
    try:
        with pytest.raises(FileExistsError):
            folder.write(sorted(first)[0], b"x", exclusive=True)
    finally:
        folder.close()


def test_a_second_run_of_a_folder_in_use_is_refused_naming_the_holders_pid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """While a store holds the folder's lock: exit 2 with the pid; once released, it resumes."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1, 2]}])
    out = tmp_path / "out"
    code, _, err = _run(capsys, str(job))
    assert code == 0, err
    fingerprint = str(_manifest(out)["fingerprint"])
    holder = ResultStore.open(
        out, layout=LAYOUT, job="test-job", fingerprint=fingerprint, total_items=3, resume=True
    )
    try:
        code, _, err = _run(capsys, str(job), "--resume")
        assert code == 2, err
        assert f"in use by another vyre-async run (pid {os.getpid()})" in err
        assert f"kill -TERM {os.getpid()}" in err
    finally:
        holder.close()
    code, out_text, err = _run(capsys, str(job), "--resume")
    assert code == 0, err
    assert "already complete" in out_text


def test_resume_of_a_folder_that_does_not_exist_or_holds_no_job_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--resume into a missing or empty folder: exit 2 saying so, and nothing is created."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}])
    code, _, err = _run(capsys, str(job), "--resume", "--out", str(tmp_path / "none"))
    assert code == 2
    assert "does not exist" in err
    assert "run without --resume" in err
    assert not (tmp_path / "none").exists()
    (tmp_path / "empty").mkdir()
    code, _, err = _run(capsys, str(job), "--resume", "--out", str(tmp_path / "empty"))
    assert code == 2
    assert "holds no job" in err
    assert list((tmp_path / "empty").iterdir()) == []


def test_resume_of_a_complete_job_keeps_its_summary_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A complete job resumed: exit 0, 'already complete' and no rate of nothing,
    summary.json byte for byte kept."""
    job, out = _completed(tmp_path, capsys)
    before = (out / "summary.json").read_bytes()
    code, text, err = _run(capsys, str(job), "--resume")
    assert code == 0, err
    assert "already complete" in text
    assert "0 items this run (65 committed before)" in text
    assert "nothing ran this time" in text
    assert "items/s" not in text
    assert (out / "summary.json").read_bytes() == before
    assert json.loads(before)["items_this_run"] == 65


def test_summary_records_the_start_time_the_version_and_the_job_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """summary.json: started_at (UTC ISO 8601), version == vyre_async's, the job file's path."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}])
    before = datetime.now().astimezone()
    code, _, err = _run(capsys, str(job))
    assert code == 0, err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    started = datetime.fromisoformat(summary["started_at"])
    assert started.utcoffset() is not None
    assert abs((started - before).total_seconds()) < 600
    assert summary["version"] == va.__version__
    assert summary["job_file"] == str(job.resolve())


def test_output_section_may_be_left_out_when_out_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No [output]: --out runs it; without --out, exit 2 naming $.output.dir."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1]}])
    data = json.loads(job.read_text())
    del data["output"]
    job.write_text(json.dumps(data))
    code, _, err = _run(capsys, str(job))
    assert code == 2
    assert "$.output.dir" in err
    code, _, err = _run(capsys, str(job), "--out", str(tmp_path / "given"))
    assert code == 0, err
    assert len(list(read_records(tmp_path / "given"))) == 2


def test_a_run_refused_after_claiming_a_new_folder_leaves_nothing_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad edge list found while loading: exit 2, and the folder it made is gone again."""
    (tmp_path / "g.txt").write_text("0 1\n1 2\n2 x\n")
    job = write_job(
        tmp_path, [{"kind": "reach", "sources": [0]}], graph={"kind": "edges", "path": "g.txt"}
    )
    data = json.loads(job.read_text())
    for key in ("scale", "edge_factor", "seed"):
        data["graph"].pop(key)
    job.write_text(json.dumps(data))
    code, _, err = _run(capsys, str(job))
    assert code == 2
    assert "line 3" in err
    assert not (tmp_path / "out").exists()
    (tmp_path / "g.txt").write_text("0 1\n1 2\n2 0\n")
    code, _, err = _run(capsys, str(job))
    assert code == 0, err


def test_a_folder_whose_manifest_commits_nothing_is_taken_by_another_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stub (a manifest of 0 items, as a run refused or killed early leaves) is reused."""
    out = tmp_path / "out"
    stub = ResultStore.open(
        out, layout=LAYOUT, job="other", fingerprint="x" * 64, total_items=9, resume=False
    )
    stub.close()
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1, 2]}])
    code, _, err = _run(capsys, str(job))
    assert code == 0, err
    assert _manifest(out)["job"] == "test-job"
    assert sorted(r.id for r in read_records(out)) == [0, 1, 2]


def test_read_records_checks_each_chunk_against_its_checksum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """read_records of a folder whose chunk was edited in place raises ConfigurationError."""
    _, out = _completed(tmp_path, capsys)
    assert len(list(read_records(out))) == 65
    path = _flip_a_digit(out)
    with pytest.raises(va.ConfigurationError, match="checksum") as info:
        list(read_records(out))
    assert path in str(info.value)


def test_a_run_stopped_while_making_its_subfolders_leaves_a_folder_the_next_run_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Death after chunks/ is made (as kill -9 there would leave it): the manifest came
    first, so a plain run afterwards completes instead of refusing chunks/ without one."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1, 2]}])
    subfolder = Folder.subfolder

    def dies_at_arrays(self: Folder, name: str, *, create: bool) -> Folder:
        if name == "arrays":
            raise KeyboardInterrupt  # stands for the process ending here
        return subfolder(self, name, create=create)

    monkeypatch.setattr(Folder, "subfolder", dies_at_arrays)
    with pytest.raises(KeyboardInterrupt):
        main(["run", str(job)])
    monkeypatch.undo()
    out = tmp_path / "out"
    assert (out / "chunks").is_dir()
    assert (out / "manifest.json").exists()
    code, _, err = _run(capsys, str(job))
    assert code == 0, err
    assert sorted(r.id for r in read_records(out)) == [0, 1, 2]


def test_a_resume_of_a_folder_written_with_other_record_columns_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder whose manifest records other kinds' columns (a vyre-async of other kinds
    wrote it) is refused on resume with a fix, and nothing in it changes."""
    job, out = _completed(tmp_path, capsys)
    manifest = _manifest(out)
    records = manifest["records"]
    assert isinstance(records, dict)
    records["columns"] = [*records["columns"], ["depth", "float"]]
    (out / "manifest.json").write_text(json.dumps(manifest))
    before = _snapshot(out)
    code, _, err = _run(capsys, str(job), "--resume")
    assert code == 2
    assert "with columns" in err
    assert "Fix: finish it with the vyre-async that started it" in err
    assert _snapshot(out) == before
