"""The vyre-async command line."""

from __future__ import annotations

import json

import pytest

from vyre_async.cli import main


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
