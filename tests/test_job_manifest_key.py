"""A keyed manifest: every manifest written carries an HMAC that a resume checks, so a
manifest rewritten without the key is refused; where the key comes from."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import numpy as np
import pytest
from job_files import write_job

from vyre_async.cli import main
from vyre_async.errors import ConfigurationError
from vyre_async.jobs import ManifestKey, load_manifest_key, read_records
from vyre_async.jobs.output import ColumnRecords, ResultStore, record_layout

LAYOUT = record_layout(["reach"])

KEY = b"0123456789abcdef0123456789abcdef"
OTHER_KEY = b"fedcba9876543210fedcba9876543210"
WORKLOAD = [{"kind": "reach", "sources": list(range(24))}]


@pytest.fixture(autouse=True)
def _no_key_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the key sources it means to use."""
    monkeypatch.delenv("VYRE_ASYNC_MANIFEST_KEY", raising=False)
    monkeypatch.delenv("VYRE_ASYNC_MANIFEST_KEY_FILE", raising=False)


def _expected_mac(key: bytes, manifest: dict[str, object]) -> str:
    """The documented MAC, computed without vyre_async: HMAC-SHA256 over a label and the
    manifest's compact JSON (fields in file order) with ``mac`` null."""
    body = json.dumps({**manifest, "mac": None}, separators=(",", ":")).encode()
    label = b"vyre-async manifest hmac-sha256\n"
    return hmac.new(key, label + body, hashlib.sha256).hexdigest()


def _manifest(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / "manifest.json").read_text())
    return data


def _key_file(tmp_path: Path, key: bytes = KEY, name: str = "manifest.key") -> Path:
    path = tmp_path / name
    path.write_bytes(key + b"\n")
    return path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["run", *args])
    out, err = capsys.readouterr()
    return code, out + err


def _keyed_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, Path]:
    """A complete job written with a key file: (job file, folder, key file)."""
    job = write_job(tmp_path, WORKLOAD, output={"commit_items": 8})
    key = _key_file(tmp_path)
    code, said = _run(capsys, str(job), "--manifest-key-file", str(key))
    assert code == 0, said
    return job, tmp_path / "out", key


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


def test_every_manifest_a_keyed_store_writes_carries_the_documented_mac(tmp_path: Path) -> None:
    """Claimed, after each commit, after a resume and once complete: the MAC is HMAC-SHA256
    of the manifest's JSON without it, under the key, and names the key's id."""
    out, key = tmp_path / "o", ManifestKey(KEY)
    macs = []

    def check() -> None:
        manifest = _manifest(out)
        mac = manifest["mac"]
        assert isinstance(mac, dict)
        assert mac["key_id"] == key.key_id
        assert mac["hmac_sha256"] == _expected_mac(KEY, manifest)
        macs.append(mac["hmac_sha256"])

    store = ResultStore.open(
        out, layout=LAYOUT, job="j", fingerprint="f", total_items=8, resume=False, manifest_key=key
    )
    check()
    store.list_chunk(store.write_chunk(0, [_block(0, 4)], 0))
    check()
    store.close()
    store = ResultStore.open(
        out, layout=LAYOUT, job="j", fingerprint="f", total_items=8, resume=True, manifest_key=key
    )
    check()
    store.list_chunk(store.write_chunk(1, [_block(4, 4)], 0))
    store.finish()
    check()
    store.close()
    assert len(set(macs)) == len(macs)
    assert sorted(r.id for r in read_records(out)) == list(range(8))


def _forge_a_chunk_and_its_checksum(out: Path) -> None:
    """Change a record's count and rewrite the chunk's size and checksum in the manifest."""
    manifest = _manifest(out)
    entry = manifest["chunks"][0]  # type: ignore[index]
    path = out / "chunks" / entry["name"]
    lines = path.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[0])
    record["reached"] += 1
    lines[0] = json.dumps(record, separators=(",", ":")).encode() + b"\n"
    data = b"".join(lines)
    path.write_bytes(data)
    entry["bytes"], entry["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    (out / "manifest.json").write_text(json.dumps(manifest))


def test_a_chunk_forged_with_its_checksum_is_refused_by_a_keyed_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The forger rewrote the chunk and its checksum but cannot make the MAC: exit 2, and
    the folder is left as it was."""
    job, out, key = _keyed_job(tmp_path, capsys)
    _forge_a_chunk_and_its_checksum(out)
    before = (out / "manifest.json").read_bytes()
    code, said = _run(capsys, str(job), "--resume", "--manifest-key-file", str(key))
    assert code == 2, said
    assert "does not match its HMAC" in said
    assert "Fix:" in said
    assert (out / "manifest.json").read_bytes() == before


def test_a_keyed_folder_resumed_without_its_key_is_refused_with_the_way_to_give_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No key given for a sealed manifest: exit 2 naming the key's id and how to pass one."""
    job, out, _ = _keyed_job(tmp_path, capsys)
    key_id = _manifest(out)["mac"]["key_id"]  # type: ignore[index]
    code, said = _run(capsys, str(job), "--resume")
    assert code == 2, said
    assert f"sealed with a manifest key (id {key_id})" in said
    assert "--manifest-key-file" in said


def test_a_keyed_folder_resumed_with_another_key_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another key: exit 2 naming both key ids."""
    job, _, _ = _keyed_job(tmp_path, capsys)
    other = _key_file(tmp_path, OTHER_KEY, "other.key")
    code, said = _run(capsys, str(job), "--resume", "--manifest-key-file", str(other))
    assert code == 2, said
    assert "another manifest key" in said
    assert ManifestKey(OTHER_KEY).key_id in said


def test_a_manifest_stripped_of_its_mac_is_refused_when_a_key_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A forger who removes the MAC (and rewrites a chunk) does not get an unkeyed pass."""
    job, out, key = _keyed_job(tmp_path, capsys)
    _forge_a_chunk_and_its_checksum(out)
    manifest = _manifest(out)
    manifest["mac"] = None
    (out / "manifest.json").write_text(json.dumps(manifest))
    code, said = _run(capsys, str(job), "--resume", "--manifest-key-file", str(key))
    assert code == 2, said
    assert "carries no MAC" in said


def test_the_key_comes_from_the_file_option_then_the_file_variable_then_the_key_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--manifest-key-file wins; else $..._KEY_FILE; else $..._KEY; none set: no key."""
    assert load_manifest_key() is None
    monkeypatch.setenv("VYRE_ASYNC_MANIFEST_KEY", KEY.decode())
    assert load_manifest_key().key_id == ManifestKey(KEY).key_id  # type: ignore[union-attr]
    monkeypatch.delenv("VYRE_ASYNC_MANIFEST_KEY")
    monkeypatch.setenv("VYRE_ASYNC_MANIFEST_KEY_FILE", str(_key_file(tmp_path, OTHER_KEY)))
    assert load_manifest_key().key_id == ManifestKey(OTHER_KEY).key_id  # type: ignore[union-attr]
    given = _key_file(tmp_path, KEY, "given.key")
    assert load_manifest_key(given).key_id == ManifestKey(KEY).key_id  # type: ignore[union-attr]


def test_run_seals_with_the_key_in_the_environment_and_resumes_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """$VYRE_ASYNC_MANIFEST_KEY alone keys `run`; `--resume` with it continues the folder."""
    monkeypatch.setenv("VYRE_ASYNC_MANIFEST_KEY", KEY.decode())
    job = write_job(tmp_path, WORKLOAD)
    code, said = _run(capsys, str(job))
    assert code == 0, said
    manifest = _manifest(tmp_path / "out")
    assert manifest["mac"]["key_id"] == ManifestKey(KEY).key_id  # type: ignore[index]
    assert manifest["mac"]["hmac_sha256"] == _expected_mac(KEY, manifest)  # type: ignore[index]
    code, said = _run(capsys, str(job), "--resume")
    assert code == 0, said
    assert "already complete" in said


@pytest.mark.parametrize(
    ("setting", "needle"),
    [
        ({"VYRE_ASYNC_MANIFEST_KEY": "short"}, "holds 5 bytes; a key needs at least 16"),
        (
            {"VYRE_ASYNC_MANIFEST_KEY": KEY.decode(), "VYRE_ASYNC_MANIFEST_KEY_FILE": "k"},
            "both VYRE_ASYNC_MANIFEST_KEY_FILE and VYRE_ASYNC_MANIFEST_KEY are set",
        ),
        ({"VYRE_ASYNC_MANIFEST_KEY_FILE": "."}, "is a directory"),
        ({"VYRE_ASYNC_MANIFEST_KEY_FILE": "missing.key"}, "cannot be read"),
    ],
    ids=["too short", "both variables", "a directory", "a missing file"],
)
def test_an_unusable_key_setting_is_refused_with_a_fix(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setting: dict[str, str],
    needle: str,
) -> None:
    """Each bad key setting: a ConfigurationError with a fix, and `run` exits 2 before
    creating the output folder; the key's bytes never appear in the message."""
    monkeypatch.chdir(tmp_path)
    for name, value in setting.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match="Fix:") as info:
        load_manifest_key()
    assert needle in str(info.value)
    assert KEY.decode() not in str(info.value)
    job = write_job(tmp_path, WORKLOAD)
    code, said = _run(capsys, str(job))
    assert code == 2, said
    assert not (tmp_path / "out").exists()


def test_a_key_never_shows_in_its_repr() -> None:
    """repr(ManifestKey) names its id and source, never the secret."""
    key = ManifestKey(KEY, source="test")
    assert KEY.decode() not in repr(key)
    assert key.key_id in repr(key)
