"""The vyre-async command line as a new user meets it: entry points, options, messages."""

from __future__ import annotations

import json
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from job_files import job_file, write_job

import vyre_async as va
from vyre_async.cli import main
from vyre_async.errors import ConfigurationError
from vyre_async.jobs import JobSpec, load_job
from vyre_async.testing import gpu_unavailable_reason

ROOT = Path(__file__).resolve().parents[1]
NO_GPU = pytest.mark.skipif(gpu_unavailable_reason() is None, reason="a GPU answers here")


def test_python_dash_m_runs_the_same_command_line() -> None:
    """`python -m vyre_async --version` prints the package version and exits 0."""
    done = subprocess.run(
        [sys.executable, "-m", "vyre_async", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"vyre-async {va.__version__}"


def test_version_option_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`vyre-async --version` exits 0 after printing the version."""
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"vyre-async {va.__version__}"


@pytest.mark.parametrize("command", [[], ["run"], ["validate"], ["info"]])
def test_help_has_no_raw_rest_markup(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--help` of the program and of each command shows no ``double backticks``."""
    with pytest.raises(SystemExit) as info:
        main([*command, "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    assert "usage: vyre-async" in text
    assert "``" not in text


@pytest.mark.parametrize(
    "place", ["before", "after"], ids=["before the command", "after the command"]
)
def test_log_options_work_before_and_after_each_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], place: str
) -> None:
    """--log-level and --log-format are accepted on either side of run/validate/info."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1]}])
    options = ["--log-level", "debug", "--log-format", "json"]
    for command in (["validate", str(job)], ["info"], ["run", str(job)]):
        argv = [*options, *command] if place == "before" else [*command, *options]
        assert main(argv) == 0, argv
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    events = {json.loads(line)["event"] for line in lines}
    assert "job_finished" in events  # JSON lines: --log-format json took effect on run
    assert "debug" in {json.loads(line)["level"] for line in lines}  # and --log-level debug


def test_an_option_after_the_command_overrides_the_one_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--log-format json run FILE --log-format console` logs console lines."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}])
    assert main(["--log-format", "json", "run", str(job), "--log-format", "console"]) == 0
    err = capsys.readouterr().err
    assert "job_finished" in err
    assert not [line for line in err.splitlines() if line.startswith("{")]


def test_validate_takes_several_files_and_reports_each_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two good files and two bad ones: exit 2, both good ones confirmed, both bad named."""
    good = [ROOT / "configs" / "quickstart.toml", ROOT / "configs" / "pagerank.toml"]
    bad_kind = tmp_path / "a" / "job.json"
    bad_kind.parent.mkdir()
    bad_kind.write_text(json.dumps({"job": {"name": "x"}}))
    missing = tmp_path / "absent.toml"
    argv = ["validate", str(good[0]), str(bad_kind), str(good[1]), str(missing)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    for path in good:
        assert f"{path}: valid job" in out
    assert f"{bad_kind}: $" in err
    assert f"{missing}: cannot be read" in err
    assert "2 of 4 job files are not valid" in err
    assert main(["validate", *map(str, good)]) == 0


def test_validate_does_not_tell_the_user_to_run_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad field's Fix says what to correct; it does not suggest `vyre-async validate`."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}], job={"backend": "gpu"})
    assert main(["validate", str(job)]) == 2
    err = capsys.readouterr().err
    assert "Fix:" in err
    assert "vyre-async validate" not in err


def test_an_enum_error_lists_the_allowed_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """backend = "gpu" names the field, the value and each allowed value."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}], job={"backend": "gpu"})
    assert main(["validate", str(job)]) == 2
    err = capsys.readouterr().err
    assert "$.job.backend: Invalid enum value 'gpu'" in err
    assert "expected one of 'auto', 'cuda', 'cpu'" in err


def _literal_fields() -> list[tuple[str, tuple[object, ...]]]:
    """Every path of JobSpec whose type holds a Literal, with its values (a workload's
    fields once, as the first kind that has them holds them)."""
    found: dict[str, tuple[object, ...]] = {}

    def walk(tp: object, path: str) -> None:
        union = typing.get_origin(tp) in (typing.Union, types.UnionType)
        for member in typing.get_args(tp) if union else (tp,):
            if typing.get_origin(member) is typing.Annotated:
                walk(typing.get_args(member)[0], path)
            elif typing.get_origin(member) is typing.Literal:
                found.setdefault(path, typing.get_args(member))
            elif typing.get_origin(member) is list:
                walk(typing.get_args(member)[0], f"{path}[0]")
            elif isinstance(member, type) and issubclass(member, msgspec.Struct):
                hints = typing.get_type_hints(member, include_extras=True)
                for name in member.__struct_fields__:
                    walk(hints[name], f"{path}.{name}")

    walk(JobSpec, "$")
    return list(found.items())


@pytest.mark.parametrize(
    ("path", "values"), _literal_fields(), ids=[p for p, _ in _literal_fields()]
)
def test_every_choice_field_lists_its_values_when_given_a_wrong_one(
    tmp_path: Path, path: str, values: tuple[object, ...]
) -> None:
    """Each Literal field of a job file, set to a wrong string, names all its values."""
    # bfs holds every workload choice field the union's first member has.
    data = json.loads(write_job(tmp_path, [{"kind": "bfs", "sources": [0]}]).read_text())
    data.setdefault("logging", {})
    keys = [
        int(k) if k.isdigit() else k for k in path[2:].replace("[", ".").replace("]", "").split(".")
    ]
    target = data
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = "no-such-choice"
    job = tmp_path / "job.json"
    job.write_text(json.dumps(data))
    with pytest.raises(ConfigurationError) as info:
        load_job(job)
    message = str(info.value)
    assert f"{path}: Invalid enum value 'no-such-choice'" in message
    assert "expected one of " + ", ".join(repr(v) for v in values) in message


def _recorder(calls: list[object]) -> Any:
    """A stand-in for the graph's generation that records its calls (it must not be called)."""

    async def prepare(*args: object) -> None:
        calls.append(args)

    return prepare


@NO_GPU
def test_a_cuda_job_without_a_gpu_stops_before_generating_its_graph_with_the_cli_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """[job] backend = "cuda", no GPU: exit 1 at once, Fix names --backend cpu, no folder."""
    loaded: list[object] = []
    monkeypatch.setattr("vyre_async.jobs.graph._graph_prep._generate", _recorder(loaded))
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}], job={"backend": "cuda"})
    assert main(["run", str(job)]) == 1
    err = capsys.readouterr().err
    what, _, fix = err.partition("Fix:")
    assert "CUDA backend" in what
    assert '[job] backend = "cuda"' in what
    assert "--backend cpu" in fix
    assert "kind='cpu'" not in err
    assert loaded == []
    assert not (tmp_path / "out").exists()


@NO_GPU
async def test_a_cuda_job_runner_without_a_gpu_refuses_before_generating_the_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JobRunner(backend='cuda') raises UnsupportedFeatureError with the Python API's fix."""
    loaded: list[object] = []
    monkeypatch.setattr("vyre_async.jobs.graph._graph_prep._generate", _recorder(loaded))
    job = await job_file(tmp_path, [{"kind": "reach", "sources": [0]}])
    spec = await anyio.to_thread.run_sync(load_job, job)
    runner = va.jobs.JobRunner(spec, job_file=job, backend="cuda")
    with pytest.raises(va.UnsupportedFeatureError) as info:
        await runner.run()
    assert "backend='cpu'" in info.value.fix
    assert loaded == []
