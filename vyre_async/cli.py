"""The ``vyre-async`` command line.

``vyre-async info`` prints what this machine offers: the backend ``auto`` picks, the
GPU (name, compute capability, memory, driver version), NVRTC's version and the
kernel cache directory. ``vyre-async validate FILE`` checks a job file (exit 0, or 2
with the file, the path inside it and a fix). Errors print their message (with its
``Fix:``) and exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import anyio
import msgspec

from . import __version__
from .backends import open_backend
from .errors import VyreError
from .jobs import RandomSources, WorkloadSection, load_job
from .kernels._cache import cache_root
from .kernels._nvrtc import nvrtc_version
from .logging import configure_logging


async def _info() -> dict[str, object]:
    report: dict[str, object] = {"vyre_async": __version__}
    try:
        report["nvrtc"] = "{}.{}".format(*nvrtc_version())
    except VyreError as exc:
        report["nvrtc"] = f"unavailable: {exc.what}"
    report["kernel_cache"] = str(cache_root())
    async with open_backend("auto") as backend:
        report["backend"] = backend.kind
        report["device"] = backend.device_name
        info = getattr(backend, "device_info", None)
        if info is not None:
            report["device_info"] = msgspec.to_builtins(info)
            driver = int(info.driver_version)
            report["driver_version"] = f"{driver // 1000}.{driver % 1000 // 10}"
    return report


def _item_count(workload: WorkloadSection) -> int:
    if workload.sources is None:
        return 1
    if isinstance(workload.sources, RandomSources):
        return workload.sources.random
    return len(workload.sources)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``vyre-async``; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="vyre-async", description=__doc__.splitlines()[0])
    parser.add_argument("--log-format", choices=["console", "json"], default="console")
    parser.add_argument("--log-level", default="warning")
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="devices, capabilities, versions")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    validate = commands.add_parser("validate", help="check a job file without running it")
    validate.add_argument("file", help="a .toml, .json, .yaml or .yml job file")
    args = parser.parse_args(argv)
    configure_logging(args.log_format, level=args.log_level)
    if args.command == "validate":
        try:
            spec = load_job(args.file)
        except VyreError as exc:
            print(f"vyre-async: {exc}", file=sys.stderr)
            return 2
        items = sum(_item_count(w) for w in spec.workload)
        print(
            f"{args.file}: valid job {spec.job.name!r}, {len(spec.workload)} workload(s), "
            f"{items} item(s)"
        )
        return 0
    try:
        report = anyio.run(_info)
    except VyreError as exc:
        print(f"vyre-async: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(msgspec.json.encode(report).decode())
    else:
        for key, value in report.items():
            if isinstance(value, dict):
                for sub, item in value.items():
                    print(f"{key}.{sub}: {item}")
            else:
                print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
