"""The device a benchmark ran on, for its JSON summary, and the summary's writing:
imported by the scripts beside it (``python bench/<name>.py`` puts this folder first
on ``sys.path``)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import vyre_async as va


def environment(backend: va.Backend) -> dict[str, Any]:
    """``{"device": {name, compute_capability, driver_version}, "nvidia_smi": line}`` of
    the backend in use (the CPU backend: its name, and no ``nvidia-smi`` line)."""
    info = getattr(backend, "device_info", None)
    smi = (
        subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if backend.kind == "cuda"
        else ""
    )
    device: dict[str, Any] = {"name": backend.device_name}
    if info is not None:
        device |= {
            "name": info.name,
            "compute_capability": list(info.compute_capability),
            "driver_version": info.driver_version,
        }
    return {"device": device, "nvidia_smi": smi}


def write_summary(summary: dict[str, Any], out: str) -> None:
    """Print the summary's ratios and targets met, write it all to ``out`` as JSON, and
    say on standard error when a target was not met (or none was measured)."""
    met = summary["targets_met"]
    print(json.dumps({"ratios": summary["ratios"], "targets_met": met}, indent=2))
    with open(out, "w") as fh:
        json.dump(summary, fh, indent=2)
    if not met or not all(met.values()):
        print("some targets were not met or not measured (see targets_met)", file=sys.stderr)
