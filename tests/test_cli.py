"""The vyre-async command line."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from graph_references import scipy_levels
from job_files import write_job

import vyre_async as va
from vyre_async.cli import main
from vyre_async.jobs import read_records
from vyre_async.testing import gpu_unavailable_reason


def test_info_json_names_the_backend_and_device(capsys: pytest.CaptureFixture[str]) -> None:
    """`vyre-async info --json` exits 0 with the backend, device and NVRTC version."""
    assert main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["backend"] in ("cpu", "cuda")
    assert report["device"]
    assert "nvrtc" in report


def test_unknown_command_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown subcommand exits with code 2 and a usage message, no traceback."""
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2
    assert "usage:" in capsys.readouterr().err


#: The job files under configs/ (serve configs are not jobs: tests/test_serve_config.py
#: checks those).
CONFIGS = sorted(
    p
    for p in (Path(__file__).resolve().parents[1] / "configs").glob("*.toml")
    if not p.name.startswith("serve")
)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_validates(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each job file under configs/ is valid as shipped."""
    assert main(["validate", str(config)]) == 0
    assert "valid job" in capsys.readouterr().out


def test_run_quickstart_commits_2000_counts_equal_to_scipy(
    tmp_path: Path, rng: np.random.Generator, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's main job on the CPU backend: exit 0, every item once, SciPy's counts."""
    quickstart = next(p for p in CONFIGS if p.name == "quickstart.toml")
    out = tmp_path / "quick"
    assert main(["run", str(quickstart), "--out", str(out), "--backend", "cpu"]) == 0
    assert "complete" in capsys.readouterr().out
    records = list(read_records(out))
    assert sorted(r.id for r in records) == list(range(2000))
    graph = va.graphs.rmat(16, 16, 7)
    for record in rng.choice(np.array(records, dtype=object), 25, replace=False):
        assert record.source is not None
        assert record.reached == int((scipy_levels(graph, record.source) >= 0).sum())


def test_run_refuses_a_used_folder_without_resume_and_resumes_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second run into the same folder exits 2 naming --resume; --resume exits 0."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1, 2]}])
    assert main(["run", str(job)]) == 0
    capsys.readouterr()
    assert main(["run", str(job)]) == 2
    err = capsys.readouterr().err
    assert "--resume" in err
    assert "Traceback" not in err
    assert main(["run", str(job), "--resume", "--log-format", "json"]) == 0
    assert "0 items this run (3 committed before)" in capsys.readouterr().out


def test_run_ends_by_saying_how_to_read_its_folder_and_each_way_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After a run: `show`, `export` and `read_records(..., as_="pandas")` lines naming the
    folder; the commands exit 0 as printed, and the Python line reads every record."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1, 2]}])
    assert main(["run", str(job)]) == 0
    out = capsys.readouterr().out
    folder = str((tmp_path / "out").resolve())
    lines = [line.strip().removeprefix("read it:").strip() for line in out.splitlines()]
    show = next(line for line in lines if line.startswith("vyre-async show "))
    export = next(line for line in lines if line.startswith("vyre-async export "))
    python = next(line for line in lines if line.startswith("vyre_async.jobs.read_records("))
    assert shlex.split(show) == ["vyre-async", "show", folder]
    assert shlex.split(export) == ["vyre-async", "export", folder, "--to", folder + ".csv"]
    assert main(shlex.split(show)[1:]) == 0
    assert "items:       3 of 3 committed" in capsys.readouterr().out
    assert main(shlex.split(export)[1:]) == 0
    assert len((tmp_path / "out.csv").read_text().splitlines()) == 4
    assert python == f'vyre_async.jobs.read_records({folder!r}, as_="pandas")'
    pytest.importorskip("pandas", reason="pandas is in the test extra; CI runs this")
    frame = eval(python, {"vyre_async": va})  # noqa: S307 - the line the CLI printed
    assert sorted(frame["source"].tolist()) == [0, 1, 2]


def test_run_with_a_bad_file_exits_2_naming_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wrong field exits 2 with the file and $.path in one message, no traceback."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": "all"}])
    assert main(["run", str(job)]) == 2
    err = capsys.readouterr().err
    assert "$.workload[0].sources" in err
    assert "Fix:" in err
    assert "Traceback" not in err


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="a GPU answers on this machine")
def test_run_on_cuda_without_a_gpu_exits_1_with_a_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--backend cuda where no GPU answers: exit 1 and a message ending in a fix."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}])
    assert main(["run", str(job), "--backend", "cuda"]) == 1
    assert "Fix:" in capsys.readouterr().err


def _edit(job: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads(job.read_text())
    change(data)
    job.write_text(json.dumps(data))
    return job


def _edge_list_graph(data: dict[str, Any]) -> None:
    data["graph"] = {"kind": "edges", "path": "g.txt"}


REFUSED_BY_VALIDATE: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "a graph file that does not exist": (
        lambda d: d.update(graph={"kind": "edges", "path": "none.txt"}),
        "$.graph.path",
    ),
    "a source beyond R-MAT's vertices": (
        lambda d: d["workload"][0].update(sources=[0, 256]),
        "$.workload[0].sources[1]: vertex 256 is out of range for a graph of 256 vertices",
    ),
    "a source beyond an edge list's vertices": (
        lambda d: (_edge_list_graph(d), d["workload"][0].update(sources=[3])),
        "$.workload[0].sources[0]: vertex 3 is out of range for a graph of 3 vertices",
    ),
    "an output folder outside the job's": (
        lambda d: d["output"].update(dir="../elsewhere"),
        "$.output.dir",
    ),
}


@pytest.mark.parametrize(("change", "says"), REFUSED_BY_VALIDATE.values(), ids=REFUSED_BY_VALIDATE)
def test_validate_refuses_what_run_would_refuse_before_starting(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: Callable[[dict[str, Any]], None],
    says: str,
) -> None:
    """validate exits 2 with the message run gives, and neither creates an output folder."""
    job = _edit(write_job(tmp_path, [{"kind": "reach", "sources": [0]}]), change)
    (tmp_path / "g.txt").write_text("0 1\n1 2\n")
    assert main(["validate", str(job)]) == 2
    validate_err = capsys.readouterr().err
    assert says in validate_err
    assert "Fix:" in validate_err
    assert main(["run", str(job)]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert not (tmp_path.parent / "elsewhere").exists()


def test_validate_of_a_file_without_output_says_run_needs_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No [output]: valid, and the line says to run it with --out DIR."""
    job = _edit(write_job(tmp_path, [{"kind": "reach", "sources": [0]}]), lambda d: d.pop("output"))
    assert main(["validate", str(job)]) == 0
    assert "run it with --out DIR" in capsys.readouterr().out
