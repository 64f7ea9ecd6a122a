"""The ``vyre-async`` command line (also ``python -m vyre_async``).

``vyre-async run FILE`` runs a job file: exit 0 when every item is committed, 1 when
the job failed (too many failed items, a device lost too often, no GPU for a CUDA
job), 2 for a bad job file or output folder, 130/143 after SIGINT/SIGTERM (drained
and committed; the message says how to resume). ``vyre-async validate FILE...``
checks job files without running them (exit 0 when all are valid, else 2 with, for
each bad one, the file, the path inside it and a fix). ``vyre-async info`` prints
what this machine offers: the backend ``auto`` picks, the GPU (name, compute
capability, memory, driver version), NVRTC's and cuda-bindings' versions, whether
the driver supports their CUDA major (with the extra to install when it does not)
and the kernel cache directory. ``--log-level`` and ``--log-format`` go before or
after the command. Errors print their message (with its ``Fix:``), never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from collections.abc import Sequence

import anyio
import msgspec

from . import __version__
from .backends import DeviceSelector, describe_cuda_toolchain, open_backend
from .errors import ConfigurationError, UnsupportedFeatureError, ValidationError, VyreError
from .jobs import (
    JobMetrics,
    JobRunner,
    JobSummary,
    backend_unavailable_reason,
    check_job,
    exiting_at_once_on_signals,
    load_job,
    serve_metrics,
)
from .kernels import cache_root, nvrtc_version
from .logging import configure_logging


async def _info() -> dict[str, object]:
    report: dict[str, object] = {"vyre_async": __version__}
    try:
        report["nvrtc"] = "{}.{}".format(*nvrtc_version())
    except VyreError as exc:
        report["nvrtc"] = f"unavailable: {exc.what}"
    # cuda-bindings and driver versions, and whether the driver runs what NVRTC builds.
    report.update(await anyio.to_thread.run_sync(describe_cuda_toolchain))
    report["kernel_cache"] = str(cache_root())
    async with open_backend("auto") as backend:
        report["backend"] = backend.kind
        report["device"] = backend.device_name
        info = getattr(backend, "device_info", None)
        if info is not None:
            report["device_info"] = msgspec.to_builtins(info)
            driver = int(info.driver_version)
            report["driver_version"] = f"{driver // 1000}.{driver % 1000 // 10}"
        launcher = getattr(backend, "launcher", None)
        if launcher is not None:
            report["launcher"] = launcher
    return report


def _devices(text: str) -> DeviceSelector:
    if text == "all":
        return "all"
    try:
        ordinals = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not 'all' or ordinals like 0,1: {text!r}") from None
    return ordinals[0] if len(ordinals) == 1 else ordinals


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text} is not a TCP port. Fix: pick one from 1024 to 65535, or 0 for any free one."
        )
    return port


def _run(args: argparse.Namespace) -> int:
    try:
        spec = load_job(args.file)
    except VyreError as exc:
        print(f"vyre-async: {exc}", file=sys.stderr)
        return 2
    log_format = args.log_format or spec.logging.format
    configure_logging(log_format, level=args.log_level or spec.logging.level)
    bar = sys.stderr if log_format == "console" and sys.stderr.isatty() else None
    backend = args.backend or spec.job.backend
    devices = spec.job.devices if args.devices is None else args.devices
    reason = backend_unavailable_reason(backend, devices, spec.job.executor)
    if reason is not None:
        asked = "--backend cuda" if args.backend else f'[job] backend = "cuda" in {args.file}'
        command = ["vyre-async", "run", args.file, *(["--out", args.out] if args.out else [])]
        error = UnsupportedFeatureError(
            f"job {spec.job.name!r} runs on the CUDA backend ({asked}), and {reason}",
            fix="run it where a GPU answers (`vyre-async info` says what this machine has), "
            f"or on the CPU backend: {shlex.join([*command, '--backend', 'cpu'])}",
        )
        print(f"vyre-async: {error}", file=sys.stderr)
        return 1
    metrics = JobMetrics() if args.metrics_port is not None else None
    try:
        runner = JobRunner(
            spec,
            job_file=args.file,
            out=args.out,
            backend=args.backend,
            devices=args.devices,
            resume=args.resume,
            handle_signals=True,
            progress_stream=bar,
            metrics=metrics,
            report=lambda summary: _print_summary(summary, args),
        )
        with (
            serve_metrics(metrics, args.metrics_port, args.metrics_host)
            if metrics is not None
            else contextlib.nullcontext()
        ):
            summary = anyio.run(runner.run)
    except VyreError as exc:
        print(f"vyre-async: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ConfigurationError | ValidationError) else 1
    _print_summary(summary, args)
    return summary.exit_code


def _validate(files: list[str]) -> int:
    """Check each file as a run would before it starts work; report every failure and
    exit 0 only when all pass."""
    failed = 0
    for file in files:
        try:
            spec = load_job(file)
            check = check_job(spec, file, scan_edge_list=True)
        except VyreError as exc:
            print(f"vyre-async: {exc}", file=sys.stderr)
            failed += 1
            continue
        notes = "; no [output] dir: run it with --out DIR" if check.folder is None else ""
        print(
            f"{file}: valid job {spec.job.name!r}, {len(spec.workload)} workload(s), "
            f"{check.items} item(s){notes}"
        )
    if failed and len(files) > 1:
        print(f"vyre-async: {failed} of {len(files)} job files are not valid", file=sys.stderr)
    return 2 if failed else 0


def _print_summary(summary: JobSummary, args: argparse.Namespace) -> None:
    print(f"job {summary.job!r}: {summary.status}: {summary.message}")
    rate = f"{summary.items_per_s:,.0f} items/s" if summary.items_this_run else "nothing ran"
    print(
        f"  {summary.items_this_run} items this run ({summary.items_skipped} committed "
        f"before), {summary.items_failed} failed in all, {summary.seconds:.2f} s, "
        f"{rate} on {summary.backend} ({summary.device})"
    )
    print(f"  summary: {summary.output}/summary.json")
    if summary.status == "interrupted":
        command = ["vyre-async", "run", args.file, "--resume"]
        if args.out is not None:
            command += ["--out", args.out]
        if args.backend is not None:
            command += ["--backend", args.backend]
        if args.devices is not None:
            devices = args.devices
            command += [
                "--devices",
                ",".join(map(str, devices)) if isinstance(devices, list) else str(devices),
            ]
        print(f"  to finish it: {shlex.join(command)}", file=sys.stderr)


def _help_text(text: str) -> str:
    """reST literals (````x````) as plain text, for ``--help``."""
    return text.replace("``", "")


def _add_logging_options(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "--log-format",
        choices=["console", "json"],
        default=default,
        help="console lines or JSON lines (default: the job file's for run, console otherwise)",
    )
    parser.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        default=default,
        help="default: the job file's level for run, warning otherwise",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``vyre-async``; returns the process exit code.

    SIGINT and SIGTERM end it at once with a message and exit code 130/143, except
    while a job's items run (then the first one drains them; see :class:`JobRunner`).
    """
    with exiting_at_once_on_signals():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    summary, _, details = _help_text(__doc__).partition("\n\n")
    parser = argparse.ArgumentParser(
        prog="vyre-async",
        description=summary,
        epilog=details,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"vyre-async {__version__}")
    _add_logging_options(parser, None)
    # After the command the same options override; SUPPRESS keeps a value given
    # before the command when none is given after it.
    logging_options = argparse.ArgumentParser(add_help=False)
    _add_logging_options(logging_options, argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a job file", parents=[logging_options])
    run.add_argument("file", help="a .toml, .json, .yaml or .yml job file")
    run.add_argument("--out", help="output folder (default: [output] dir beside the file)")
    run.add_argument("--backend", choices=["auto", "cuda", "cpu"], help="override [job] backend")
    run.add_argument(
        "--devices", type=_devices, help="override [job] devices: an ordinal, 'all' or '0,1'"
    )
    run.add_argument("--resume", action="store_true", help="continue the job in the folder")
    run.add_argument(
        "--metrics-port",
        type=_port,
        metavar="N",
        help="serve Prometheus metrics at http://HOST:N/metrics while the job runs "
        "(needs the metrics extra: pip install 'vyre-async[metrics]')",
    )
    run.add_argument(
        "--metrics-host",
        default="0.0.0.0",  # noqa: S104 - Prometheus scrapes exporters from other hosts
        metavar="HOST",
        help="address the metrics server listens on (default: 0.0.0.0, every interface)",
    )
    info = commands.add_parser(
        "info", help="devices, capabilities, versions", parents=[logging_options]
    )
    info.add_argument("--json", action="store_true", help="print one JSON object")
    validate = commands.add_parser(
        "validate", help="check job files without running them", parents=[logging_options]
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="a .toml, .json or .yaml file")
    args = parser.parse_args(argv)
    if args.command == "run":
        return _run(args)
    configure_logging(args.log_format or "console", level=args.log_level or "warning")
    if args.command == "validate":
        return _validate(args.files)
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
