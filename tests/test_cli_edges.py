"""Edges of the vyre-async command line: resumes, logging levels, info --json, help texts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from job_files import write_job

from vyre_async.cli import main


def test_resume_of_a_complete_job_names_the_device_its_items_ran_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """run, then run --resume: the second says which backend and device ran the items."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1, 2]}])
    assert main(["run", str(job)]) == 0
    first = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert first["device"]
    capsys.readouterr()
    assert main(["run", str(job), "--resume"]) == 0
    out = capsys.readouterr().out
    ran_on = f"{first['backend']} ({first['device']})"
    assert f"by an earlier run on {ran_on}" in out
    assert f"nothing ran this time; the items ran on {ran_on}" in out
    assert "on  ()" not in out


def test_a_quiet_console_still_leaves_a_full_log_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """run --log-level error: no info line on the console, every info event in log.jsonl."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1, 2]}])
    assert main(["run", str(job), "--log-level", "error"]) == 0
    assert "job_started" not in capsys.readouterr().err
    lines = (tmp_path / "out" / "log.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    started = [e for e in events if e["event"] == "job_started"]
    finished = [e for e in events if e["event"] == "job_finished"]
    assert len(started) == len(finished) == 1
    assert started[0]["level"] == finished[0]["level"] == "info"
    assert finished[0]["items_committed"] == 3


def _documented_info_keys() -> list[str]:
    """The keys the info table of docs/guide/dispatch.md lists, in order."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "guide" / "dispatch.md").read_text()
    table = text.partition("### What this machine offers")[2].partition("\n\n##")[0]
    keys: list[str] = []
    for row in table.splitlines():
        if row.startswith("| `"):
            keys += [cell.strip("` ") for cell in row.split("|")[1].split(",")]
    return keys


def test_info_json_has_the_documented_keys_with_plain_values(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """info --json: exactly the documented keys, each a string, number, bool or null,
    the statuses one of their words and an error exactly where the status is not ok."""
    assert main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report) == _documented_info_keys()
    for key, value in report.items():
        assert value is None or isinstance(value, str | int | float | bool), key
    assert report["backend"] in ("cuda", "cpu")
    assert report["cuda_status"] in ("ok", "not_installed", "unusable")
    assert (report["cuda_error"] is None) == (report["cuda_status"] == "ok")
    assert report["nvrtc_status"] in ("ok", "unavailable")
    assert (report["nvrtc_error"] is None) == (report["nvrtc_status"] == "ok")
    assert (report["nvrtc"] is None) == (report["nvrtc_status"] != "ok")
    assert (report["gpu_name"] is None) == (report["backend"] == "cpu")


@pytest.mark.parametrize("command", ["run", "validate"])
def test_the_help_of_a_command_taking_job_files_names_every_suffix_load_job_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """run --help and validate --help name .toml, .json, .yaml and .yml, each one that
    validate accepts."""
    data = json.loads(write_job(tmp_path, [{"kind": "reach", "sources": [0]}]).read_text())
    suffixes = [".toml", ".json", ".yaml", ".yml"]
    for suffix in suffixes:  # JSON is YAML, and this job is also TOML written by hand
        path = tmp_path / f"job{suffix}"
        path.write_text(_as_toml(data) if suffix == ".toml" else json.dumps(data))
        assert main(["validate", str(path)]) == 0, suffix
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    for suffix in suffixes:
        assert f"{suffix} " in text or f"{suffix}," in text, suffix


def _as_toml(data: dict[str, dict[str, object]] | dict[str, object]) -> str:
    """A job dict of tables (and one list of tables) as TOML, values through JSON."""
    lines: list[str] = []
    for name, body in data.items():
        for table in body if isinstance(body, list) else [body]:
            lines.append(f"[[{name}]]" if isinstance(body, list) else f"[{name}]")
            for key, value in table.items():
                lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"
