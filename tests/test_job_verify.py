"""`vyre-async verify RUN`: each check proven by a tampered folder it catches, every
problem listed (not only the first), leftovers as notes, and the manifest key."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from job_files import write_job

from vyre_async.cli import main
from vyre_async.jobs import ManifestKey, VerifyReport, verify_output

KEY = b"0123456789abcdef0123456789abcdef"
WORKLOAD = [
    {"kind": "bfs", "readback": "levels", "sources": {"random": 24, "seed": 3}},
    {"kind": "reach", "sources": {"random": 16, "seed": 4}},
]


@pytest.fixture(scope="module")
def _folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A complete job's folder, unkeyed and keyed, made once for the module."""
    base = tmp_path_factory.mktemp("verify")
    folders = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VYRE_ASYNC_GRAPH_CACHE_DIR", str(base / "graph-cache"))
        patch.delenv("VYRE_ASYNC_MANIFEST_KEY_FILE", raising=False)
        for name, key in (("plain", None), ("keyed", KEY)):
            if key is None:
                patch.delenv("VYRE_ASYNC_MANIFEST_KEY", raising=False)
            else:
                patch.setenv("VYRE_ASYNC_MANIFEST_KEY", key.decode())
            (base / name).mkdir()
            job = write_job(base / name, WORKLOAD, output={"commit_items": 8})
            assert main(["run", str(job), "--log-level", "error"]) == 0
            folders[name] = base / name / "out"
    return folders


@pytest.fixture
def plain(_folders: dict[str, Path], tmp_path: Path) -> Path:
    """A fresh copy of the complete unkeyed folder."""
    return Path(shutil.copytree(_folders["plain"], tmp_path / "plain"))


@pytest.fixture
def keyed(_folders: dict[str, Path], tmp_path: Path) -> Path:
    """A fresh copy of the complete folder written with KEY."""
    return Path(shutil.copytree(_folders["keyed"], tmp_path / "keyed"))


def _manifest(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "manifest.json").read_text())
    return data


def _write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    (out / "manifest.json").write_text(json.dumps(manifest))


def _chunk_path(out: Path, index: int) -> Path:
    return out / "chunks" / _manifest(out)["chunks"][index]["name"]


def _with_arrays(out: Path) -> int:
    """Index of the first chunk with an array file."""
    return next(i for i, c in enumerate(_manifest(out)["chunks"]) if c["files"])


def _rewrite_chunk(out: Path, index: int, change: Callable[[list[dict[str, Any]]], None]) -> str:
    """Change a chunk's records and fix its size and checksum in the manifest: what a
    careful forger (or a careless tool) does; returns the chunk's name."""
    path = _chunk_path(out, index)
    records = [json.loads(line) for line in path.read_bytes().splitlines()]
    change(records)
    data = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)
    path.write_bytes(data)
    manifest = _manifest(out)
    entry = manifest["chunks"][index]
    entry["bytes"], entry["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    _write_manifest(out, manifest)
    return path.name


def _flip_a_byte(out: Path) -> str:
    path = _chunk_path(out, 0)
    data = bytearray(path.read_bytes())
    at = data.index(b'"reached":') + len(b'"reached":')
    data[at] = ord("1") if data[at] != ord("1") else ord("2")
    path.write_bytes(bytes(data))
    return path.name


def _delete_chunk(out: Path) -> str:
    path = _chunk_path(out, 1)
    path.unlink()
    return f"{path.name} is missing"


def _chunk_as_a_symlink(out: Path) -> str:
    path = _chunk_path(out, 1)
    moved = out.parent / "elsewhere.jsonl"
    path.rename(moved)
    path.symlink_to(moved)
    return f"{path.name} is a symlink"


def _count_changed_in_the_manifest(out: Path) -> str:
    manifest = _manifest(out)
    manifest["chunks"][1]["records"] -= 1
    _write_manifest(out, manifest)
    return "where the manifest lists"


def _failed_count_changed_in_the_manifest(out: Path) -> str:
    manifest = _manifest(out)
    manifest["chunks"][1]["failed"] += 1
    _write_manifest(out, manifest)
    return "(0 failed) where the manifest lists"


def _more_failed_than_records_in_the_manifest(out: Path) -> str:
    manifest = _manifest(out)
    entry = manifest["chunks"][1]
    entry["failed"] = entry["records"] + 1
    _write_manifest(out, manifest)
    return f"lists {entry['failed']} failed of {entry['records']} records"


def _chunks_folder_removed(out: Path) -> str:
    shutil.rmtree(out / "chunks")
    return "chunks is missing or not a folder"


def _repeat_an_id_inside_a_chunk(out: Path) -> str:
    def repeat(records: list[dict[str, Any]]) -> None:
        records[1]["id"] = records[0]["id"]

    return f"{_rewrite_chunk(out, 0, repeat)} repeats item"


def _repeat_an_id_of_another_chunk(out: Path) -> str:
    first = json.loads(_chunk_path(out, 0).read_bytes().splitlines()[0])["id"]
    index = len(_manifest(out)["chunks"]) - 1

    def repeat(records: list[dict[str, Any]]) -> None:
        records[0]["id"] = first

    return f"{_rewrite_chunk(out, index, repeat)} repeats item {first}"


def _an_id_outside_the_job(out: Path) -> str:
    def outside(records: list[dict[str, Any]]) -> None:
        records[0]["id"] = 10**6

    return f"{_rewrite_chunk(out, 0, outside)} names item {10**6}, outside 0..39"


def _a_record_that_does_not_decode(out: Path) -> str:
    def broken(records: list[dict[str, Any]]) -> None:
        records[0]["kind"] = "teleport"

    return f"{_rewrite_chunk(out, 0, broken)} does not hold valid records"


def _a_record_naming_another_array_file(out: Path) -> str:
    chunks = _manifest(out)["chunks"]
    index = _with_arrays(out)
    other = next(c["files"][0][0] for i, c in enumerate(chunks) if c["files"] and i != index)

    def rename(records: list[dict[str, Any]]) -> None:
        next(r for r in records if r["array"])["array"] = other

    return f"{_rewrite_chunk(out, index, rename)} names other array files"


def _array_path(out: Path) -> Path:
    return out / _manifest(out)["chunks"][_with_arrays(out)]["files"][0][0]


def _change_an_array(out: Path) -> str:
    path = _array_path(out)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    return f"{path.name} does not match the size and checksum"


def _delete_an_array(out: Path) -> str:
    path = _array_path(out)
    path.unlink()
    return f"{path.name} is missing"


def _drop_an_array_member_and_fix_the_checksum(out: Path) -> str:
    path = _array_path(out)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    dropped = sorted(members)[0]
    del members[dropped]
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    data = sink.getvalue()
    path.write_bytes(data)
    manifest = _manifest(out)
    entry = manifest["chunks"][_with_arrays(out)]["files"][0]
    entry[1], entry[2] = len(data), hashlib.sha256(data).hexdigest()
    _write_manifest(out, manifest)
    return f"missing ['{dropped}']"


def _list_a_chunk_twice(out: Path) -> str:
    manifest = _manifest(out)
    manifest["chunks"].append(manifest["chunks"][0])
    _write_manifest(out, manifest)
    return f"lists chunk {manifest['chunks'][0]['name']} more than once"


def _say_incomplete(out: Path) -> str:
    manifest = _manifest(out)
    manifest["complete"] = False
    _write_manifest(out, manifest)
    return "says complete=False with 40 of 40 items committed"


def _remove_the_last_entry_of_an_unfinished_manifest(out: Path) -> str:
    manifest = _manifest(out)
    listed = len(manifest["chunks"])
    manifest["chunks"].pop()
    manifest["complete"] = False
    writer = manifest["writer"]
    manifest["writing"] = [f"{s:06d}-{writer}.jsonl" for s in (listed, listed + 1)]
    _write_manifest(out, manifest)
    return f"chunk {listed - 1:06d}'s entry is missing"


def _a_chunk_name_leading_out(out: Path) -> str:
    manifest = _manifest(out)
    manifest["chunks"][0]["name"] = "../../x.jsonl"
    _write_manifest(out, manifest)
    return "lists a chunk named '../../x.jsonl'"


def _fewer_items_in_the_manifest(out: Path) -> str:
    manifest = _manifest(out)
    manifest["total_items"] = 10
    _write_manifest(out, manifest)
    return "for a job of 10 items"


def _a_foreign_file_in_chunks(out: Path) -> str:
    (out / "chunks" / "notes.txt").write_text("mine")
    return "holds notes.txt (file), which the manifest does not commit"


def _a_foreign_file_in_the_folder(out: Path) -> str:
    (out / "results.csv").write_text("mine")
    return "holds results.csv (file), which vyre-async did not write"


#: Tamperings of a complete job's folder, each with what its problem says.
TAMPERING: dict[str, Callable[[Path], str]] = {
    "a chunk byte changed": _flip_a_byte,
    "a chunk deleted": _delete_chunk,
    "a chunk replaced by a symlink": _chunk_as_a_symlink,
    "a record count changed in the manifest": _count_changed_in_the_manifest,
    "a failed count changed in the manifest": _failed_count_changed_in_the_manifest,
    "more failed than records in the manifest": _more_failed_than_records_in_the_manifest,
    "chunks/ removed": _chunks_folder_removed,
    "an id repeated inside a chunk, checksum fixed": _repeat_an_id_inside_a_chunk,
    "an id of another chunk repeated, checksum fixed": _repeat_an_id_of_another_chunk,
    "an id outside the job, checksum fixed": _an_id_outside_the_job,
    "a record that does not decode, checksum fixed": _a_record_that_does_not_decode,
    "a record naming another array file, checksum fixed": _a_record_naming_another_array_file,
    "an array file byte changed": _change_an_array,
    "an array file deleted": _delete_an_array,
    "an array member dropped, checksum fixed": _drop_an_array_member_and_fix_the_checksum,
    "a chunk listed twice in the manifest": _list_a_chunk_twice,
    "complete set to false": _say_incomplete,
    "the last entry removed from an unfinished manifest": (
        _remove_the_last_entry_of_an_unfinished_manifest
    ),
    "a chunk name leading out of the folder": _a_chunk_name_leading_out,
    "total_items lowered in the manifest": _fewer_items_in_the_manifest,
    "a foreign file in chunks/": _a_foreign_file_in_chunks,
    "a foreign file in the folder": _a_foreign_file_in_the_folder,
}


def test_a_complete_folder_verifies_with_its_figures(plain: Path) -> None:
    """Nothing changed: no problem, no note, and the figures are the manifest's."""
    report = verify_output(plain)
    manifest = _manifest(plain)
    assert report.ok, report.problems
    assert report.notes == ()
    assert report.job == "test-job"
    assert report.items_total == report.items_committed == report.records_read == 40
    assert report.chunks == report.chunks_read == len(manifest["chunks"]) > 2
    assert report.array_files == sum(len(c["files"]) for c in manifest["chunks"]) > 1
    assert report.key_id is None
    digest = hashlib.sha256((plain / "manifest.json").read_bytes()).hexdigest()
    assert report.manifest_sha256 == digest


@pytest.mark.parametrize("tamper", list(TAMPERING.values()), ids=list(TAMPERING))
def test_each_tampering_is_reported_as_a_problem_with_a_fix(
    plain: Path, tamper: Callable[[Path], str]
) -> None:
    """Each change is a problem saying what is wrong (the file, the numbers) and a fix."""
    said = tamper(plain)
    report = verify_output(plain)
    assert not report.ok
    matching = [p for p in report.problems if said in p.what]
    assert matching, [p.what for p in report.problems]
    assert all(p.fix for p in report.problems)


def test_every_problem_is_listed_not_only_the_first(plain: Path) -> None:
    """Three chunks changed in three ways: three problems, one per chunk, in order."""
    chunks = _manifest(plain)["chunks"]
    assert len(chunks) == 3
    names = [chunk["name"] for chunk in chunks]
    _flip_a_byte(plain)  # chunk 0
    (plain / "chunks" / names[1]).unlink()
    manifest = _manifest(plain)
    manifest["chunks"][2]["failed"] += 1
    _write_manifest(plain, manifest)
    report = verify_output(plain)
    assert len(report.problems) == 3, [p.what for p in report.problems]
    for problem, name in zip(report.problems, names, strict=True):
        assert name in problem.what


def test_what_the_last_run_left_uncommitted_is_a_note_not_a_problem(plain: Path) -> None:
    """An unfinished job's next chunk and array (the writer's token): notes; exit code 0."""
    manifest = _manifest(plain)
    last = manifest["chunks"].pop()
    manifest["complete"] = False
    listed, writer = len(manifest["chunks"]), manifest["writer"]
    manifest["writing"] = [f"{s:06d}-{writer}.jsonl" for s in (listed, listed + 1)]
    _write_manifest(plain, manifest)
    temp = plain / "arrays" / f".tmp-77-{listed + 1:06d}-{writer}.npz"
    temp.write_bytes(b"half")
    report = verify_output(plain)
    assert report.ok, [p.what for p in report.problems]
    assert any(last["name"] in note for note in report.notes)
    assert any(temp.name in note for note in report.notes)


def test_a_keyed_folder_verifies_with_its_key_and_not_without(keyed: Path) -> None:
    """With its key: no problem, the MAC checked. Without: a problem naming the key's id."""
    report = verify_output(keyed, manifest_key=ManifestKey(KEY))
    assert report.ok, report.problems
    assert report.key_checked
    assert report.key_id == ManifestKey(KEY).key_id
    unchecked = verify_output(keyed)
    assert not unchecked.ok
    assert f"sealed with a manifest key (id {report.key_id})" in unchecked.problems[0].what
    assert "--manifest-key-file" in unchecked.problems[0].fix


def test_a_rewritten_manifest_passes_the_checksums_but_not_the_key(keyed: Path) -> None:
    """A chunk changed and its checksum rewritten: without the key every checksum holds
    (the limit of checksums); with it, the MAC does not."""
    _rewrite_chunk(keyed, 0, lambda records: records[0].update(reached=records[0]["reached"] + 1))
    manifest = _manifest(keyed)
    manifest["mac"] = None
    stripped = keyed.parent / "stripped"
    shutil.copytree(keyed, stripped)
    _write_manifest(stripped, manifest)
    assert verify_output(stripped).ok  # the forgery an unkeyed folder cannot show
    report = verify_output(keyed, manifest_key=ManifestKey(KEY))
    assert [p.what for p in report.problems if "does not match its HMAC" in p.what]
    report = verify_output(stripped, manifest_key=ManifestKey(KEY))
    assert [p.what for p in report.problems if "carries no MAC" in p.what]


def test_an_unkeyed_folder_verified_with_a_key_is_a_problem(plain: Path) -> None:
    """Given a key, a manifest without a MAC is refused (its MAC could have been stripped)."""
    report = verify_output(plain, manifest_key=ManifestKey(KEY))
    assert [p.what for p in report.problems] == [
        f"{plain / 'manifest.json'} carries no MAC, and a manifest key "
        f"({ManifestKey(KEY).key_id} from the key given) was given: it was written without "
        "a key, or its MAC was removed."
    ]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"{not json", "is not a vyre-async manifest"),
        (json.dumps({"format": 99}).encode(), "is of format 99"),
    ],
    ids=["not JSON", "another format"],
)
def test_an_unreadable_manifest_is_one_problem(plain: Path, content: bytes, said: str) -> None:
    """A manifest that cannot be decoded: one problem, nothing else read."""
    (plain / "manifest.json").write_bytes(content)
    report = verify_output(plain)
    assert len(report.problems) == 1
    assert said in report.problems[0].what
    assert report.job is None


def _verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["verify", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_exits_0_for_a_folder_that_checks(
    plain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`vyre-async verify RUN`: exit 0, the figures and a last line saying all passed."""
    code, out, _ = _verify(capsys, str(plain))
    assert code == 0
    assert "40 of 40 items committed" in out
    assert out.rstrip().endswith("verified: every check passed")


def test_the_command_exits_2_listing_each_problem_with_its_fix(
    plain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two problems: exit 2, one `problem:` line each with `Fix:`, and the count."""
    _flip_a_byte(plain)
    _a_foreign_file_in_the_folder(plain)
    code, out, _ = _verify(capsys, str(plain))
    assert code == 2
    problems = [line for line in out.splitlines() if line.strip().startswith("problem:")]
    assert len(problems) == 2
    assert all("Fix:" in line for line in problems)
    assert out.rstrip().endswith("2 problems found")


def test_the_command_reads_the_key_file_and_prints_json(
    keyed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--manifest-key-file checks the MAC; --json prints the report as one object."""
    key = tmp_path / "k"
    key.write_bytes(KEY)
    code, out, _ = _verify(capsys, str(keyed), "--manifest-key-file", str(key), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["key_checked"] is True
    assert report["problems"] == []


def test_the_command_refuses_a_path_that_is_no_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing folder: exit 2 with a fix, no traceback."""
    code, _, err = _verify(capsys, str(tmp_path / "none"))
    assert code == 2
    assert "Fix:" in err
    assert "Traceback" not in err


def test_verify_changes_nothing_in_the_folder(plain: Path) -> None:
    """The folder's files and times are the same after verify (it reads only)."""

    def state() -> dict[str, tuple[bytes, int]]:
        return {
            str(p): (p.read_bytes(), os.stat(p).st_mtime_ns)
            for p in sorted(plain.rglob("*"))
            if p.is_file()
        }

    _flip_a_byte(plain)
    before = state()
    report: VerifyReport = verify_output(plain)
    assert not report.ok
    assert state() == before
