"""Devices a job asks for that this machine lacks: an error before anything starts,
and a warning from validate."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from job_files import job_file, write_job

import vyre_async as va
from vyre_async.cli import main
from vyre_async.jobs import JobRunner, load_job
from vyre_async.testing import gpu_unavailable_reason

NO_GPU = pytest.mark.skipif(gpu_unavailable_reason() is None, reason="a GPU answers here")
#: An ordinal no machine has a device for.
ABSENT = 999


def test_run_with_an_absent_device_and_auto_exits_2_naming_the_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """backend auto, --devices 999: exit 2 naming device 999, no output folder, no run."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}], job={"backend": "auto"})
    assert main(["run", str(job), "--devices", str(ABSENT)]) == 2
    err = capsys.readouterr().err
    assert f"device {ABSENT} was asked for" in err
    assert "Fix:" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


@NO_GPU
def test_an_absent_device_on_a_machine_without_gpu_says_the_cpu_has_device_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No GPU, backend auto, [job] devices = 5: the error says the CPU fallback has device 0."""
    job = write_job(
        tmp_path, [{"kind": "reach", "sources": [0]}], job={"backend": "auto", "devices": 5}
    )
    assert main(["run", str(job)]) == 2
    err = capsys.readouterr().err
    assert "device 5 was asked for, and no GPU answers here" in err
    assert "CPU backend, which has device 0 only" in err


@pytest.mark.parametrize(
    ("devices", "says"),
    [
        (5, "device 5 was asked for, and the CPU backend has device 0 only"),
        ([0, 2], "device 2 was asked for, and the CPU backend opens the logical devices 0 to 1"),
    ],
)
async def test_a_cpu_job_refuses_ordinals_beyond_its_logical_devices(
    tmp_path: Path, devices: int | list[int], says: str
) -> None:
    """JobRunner(backend='cpu', devices=5 or [0, 2]): ConfigurationError, no folder made."""
    job = await job_file(tmp_path, [{"kind": "reach", "sources": [0]}])
    spec = await anyio.to_thread.run_sync(load_job, job)
    runner = JobRunner(spec, job_file=job, backend="cpu", devices=devices)
    with pytest.raises(va.ConfigurationError, match="Fix:") as info:
        await runner.run()
    assert says in str(info.value)
    assert not await anyio.Path(tmp_path / "out").exists()


@NO_GPU
def test_validate_warns_that_a_cuda_job_needs_a_gpu_and_names_backend_cpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A valid job on backend = "cuda", no GPU: exit 0, a warning whose fix is --backend cpu."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}], job={"backend": "cuda"})
    assert main(["validate", str(job)]) == 0
    out, err = capsys.readouterr()
    assert f"{job}: valid job" in out
    assert f"vyre-async: warning: {job}: job 'test-job' runs on the CUDA backend" in err
    assert f"vyre-async run {job} --backend cpu" in err.partition("Fix:")[2]


def test_validate_warns_about_an_absent_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A valid job on devices = [0, 999]: exit 0, a warning naming device 999 and a fix."""
    job = write_job(
        tmp_path,
        [{"kind": "reach", "sources": [0]}],
        job={"backend": "auto", "devices": [0, ABSENT]},
    )
    assert main(["validate", str(job)]) == 0
    err = capsys.readouterr().err
    assert f"vyre-async: warning: {job}: job 'test-job': device {ABSENT} was asked for" in err
    assert f"vyre-async run {job} --devices 0" in err


def test_validate_of_a_job_this_machine_runs_warns_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """backend cpu on devices [1, 0]: two logical CPU devices, valid, no warning."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}], job={"devices": [1, 0]})
    assert main(["validate", str(job)]) == 0
    assert "warning" not in capsys.readouterr().err
