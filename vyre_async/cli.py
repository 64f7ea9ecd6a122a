"""The ``vyre-async`` command line (also ``python -m vyre_async``).

``vyre-async run FILE`` runs a job file: exit 0 when every item is committed, 1 when
the job failed (too many failed items, a device lost too often, no GPU for a CUDA
job), 2 for a bad job file, output folder or device, 130/143 after SIGINT/SIGTERM
(drained and committed; the message says how to resume, also after a second signal).
``vyre-async validate FILE...`` checks job files without running them (exit 0 when
all are valid, else 2 with, for each bad one, every error: the file, the path inside
it, then a fix; a valid job this machine could not run gets a warning). ``vyre-async
info`` prints what this machine offers (``--json``: one object, always the same keys):
the backend ``auto`` picks, the GPU (name, compute capability, memory), the driver's
CUDA version, NVRTC's and cuda-bindings' versions, whether CUDA is usable (with the
extra to install when it is not) and the kernel cache directory. ``vyre-async verify RUN``
checks a job's output folder against its manifest (exit 0 when everything checks,
else 2 with each problem and its fix). ``vyre-async show
RUN`` prints a run's summary and its first records as a table; ``vyre-async export
RUN --to FILE`` writes its records to a ``.csv`` or ``.parquet`` file and its items'
arrays to one ``.npz`` beside it (both exit 2 for a folder that holds no job; export
also for a file that exists, without ``--force``). ``vyre-async serve CONFIG`` serves
queries over HTTP (see ``vyre_async.serve``). ``--log-level`` and
``--log-format`` go before or after the command; ``--log-level`` sets the console's
level, a run's ``log.jsonl`` keeps the job file's. Errors print their message (with
its ``Fix:``), never a traceback.
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
from .backends import DeviceSelector, describe_machine
from .cuda import start_loading_driver
from .errors import ConfigurationError, UnsupportedFeatureError, ValidationError, VyreError
from .jobs import (
    JobMetrics,
    JobRunner,
    JobSummary,
    check_job,
    describe_report,
    describe_run,
    device_warning,
    exiting_at_once_on_signals,
    export_records,
    load_job,
    load_manifest_key,
    serve_metrics,
    verify_output,
)
from .logging import configure_logging
from .serve import serve_command
from .telemetry import StartupTimeline


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
    # The start-up timeline counts from the process's start: the interpreter and the
    # imports are its first stage.
    startup = StartupTimeline()
    startup.mark("imported")
    try:
        spec = load_job(args.file)
        manifest_key = load_manifest_key(args.manifest_key_file)
    except VyreError as exc:
        print(f"vyre-async: {exc}", file=sys.stderr)
        return 2
    startup.mark("job_loaded")
    if (args.backend or spec.job.backend) != "cpu" and spec.job.executor == "local":
        start_loading_driver()  # cuInit while logging is configured and the runner starts
    log_format = args.log_format or spec.logging.format
    configure_logging(log_format, level=args.log_level or spec.logging.level)
    bar = sys.stderr if log_format == "console" and sys.stderr.isatty() else None

    def backend_refused(reason: str) -> VyreError:
        # The runner checks the driver while it reads the graph; the CLI's words.
        asked = "--backend cuda" if args.backend else f'[job] backend = "cuda" in {args.file}'
        command = ["vyre-async", "run", args.file, *(["--out", args.out] if args.out else [])]
        return UnsupportedFeatureError(
            f"job {spec.job.name!r} runs on the CUDA backend ({asked}), and {reason}",
            fix="run it where a GPU answers (`vyre-async info` says what this machine has), "
            f"or on the CPU backend: {shlex.join([*command, '--backend', 'cpu'])}",
        )

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
            on_exit_at_once=lambda summary: _print_exit_at_once(summary, args),
            manifest_key=manifest_key,
            startup=startup,
            backend_refused=backend_refused,
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
        warning = device_warning(spec, file)  # valid, but this machine cannot run it
        if warning is not None:
            print(f"vyre-async: warning: {file}: {warning}", file=sys.stderr)
    if failed and len(files) > 1:
        print(f"vyre-async: {failed} of {len(files)} job files are not valid", file=sys.stderr)
    return 2 if failed else 0


def _verify(args: argparse.Namespace) -> int:
    """Check an output folder: exit 0 when everything checks, 2 with each problem listed."""
    try:
        key = load_manifest_key(args.manifest_key_file)
        report = verify_output(args.folder, manifest_key=key)
    except VyreError as exc:
        print(f"vyre-async: {exc}", file=sys.stderr)
        return 2
    print(msgspec.json.encode(report).decode() if args.json else describe_report(report))
    return 0 if report.ok else 2


def _print_summary(summary: JobSummary, args: argparse.Namespace) -> None:
    print(f"job {summary.job!r}: {summary.status}: {summary.message}")
    where = f" on {summary.backend} ({summary.device})" if summary.backend else ""
    rate = f"{summary.items_per_s:,.0f} items/s{where}"
    if not summary.items_this_run:
        rate = f"nothing ran this time; the items ran{where}" if where else "nothing ran"
    print(
        f"  {summary.items_this_run} items this run ({summary.items_skipped} committed "
        f"before), {summary.items_failed} failed in all, {summary.seconds:.2f} s, {rate}"
    )
    print(f"  summary: {summary.output}/summary.json")
    folder = shlex.quote(summary.output)
    print(f"  read it: vyre-async show {folder}")
    print(f"           vyre-async export {folder} --to {shlex.quote(summary.output + '.csv')}")
    print(f'           vyre_async.jobs.read_records({summary.output!r}, as_="pandas")')
    if summary.status == "interrupted":
        _print_resume_command(args)


def _print_exit_at_once(summary: JobSummary, args: argparse.Namespace) -> None:
    """A second signal ended the run at once: what is committed, and how to resume."""
    print(f"job {summary.job!r}: {summary.status}: {summary.message}")
    _print_resume_command(args)


def _print_resume_command(args: argparse.Namespace) -> None:
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


#: What load_job reads, for the help of every command that takes a job file.
_JOB_FILE = "a .toml, .json, .yaml or .yml job file"


def _show(args: argparse.Namespace) -> int:
    try:
        print(describe_run(args.folder, limit=args.limit), end="")
    except VyreError as exc:
        print(f"vyre-async: {exc}", file=sys.stderr)
        return 2
    return 0


def _export(args: argparse.Namespace) -> int:
    try:
        done = export_records(args.folder, args.to, force=args.force)
    except VyreError as exc:
        print(f"vyre-async: {exc}", file=sys.stderr)
        return 2
    print(f"{done.records:,} records written to {done.path}")
    if done.arrays_path is not None:
        print(f"{done.arrays:,} item arrays written to {done.arrays_path}")
    return 0


def _limit(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"not a count of records (0 or more): {text!r}")
    return int(text)


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
        help="the console's level (default: the job file's for run, warning otherwise); "
        "a run's log.jsonl keeps the job file's level",
    )


def _add_manifest_key_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--manifest-key-file",
        metavar="PATH",
        help="a file holding the key that seals the manifest with an HMAC (default: "
        "$VYRE_ASYNC_MANIFEST_KEY_FILE, else the key in $VYRE_ASYNC_MANIFEST_KEY)",
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
    run.add_argument("file", help=_JOB_FILE)
    run.add_argument("--out", help="output folder (default: [output] dir beside the file)")
    run.add_argument("--backend", choices=["auto", "cuda", "cpu"], help="override [job] backend")
    run.add_argument(
        "--devices", type=_devices, help="override [job] devices: an ordinal, 'all' or '0,1'"
    )
    run.add_argument("--resume", action="store_true", help="continue the job in the folder")
    _add_manifest_key_option(run)
    run.add_argument(
        "--metrics-port",
        type=_port,
        metavar="N",
        help="serve Prometheus metrics at http://HOST:N/metrics while the job runs "
        "(needs the metrics extra: pip install 'vyre-async[metrics]')",
    )
    run.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        metavar="HOST",
        help="address the metrics server listens on (default: 127.0.0.1, this machine "
        "only; 0.0.0.0 for every interface: it has no authentication)",
    )
    info = commands.add_parser(
        "info", help="devices, capabilities, versions", parents=[logging_options]
    )
    info.add_argument("--json", action="store_true", help="print one JSON object")
    validate = commands.add_parser(
        "validate", help="check job files without running them", parents=[logging_options]
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help=_JOB_FILE)
    show = commands.add_parser(
        "show", help="a run's summary and its first records", parents=[logging_options]
    )
    show.add_argument("folder", metavar="RUN", help="a job's output folder")
    show.add_argument(
        "--limit", type=_limit, default=20, metavar="N", help="records to list (default: 20)"
    )
    export = commands.add_parser(
        "export", help="write a run's records to CSV or Parquet", parents=[logging_options]
    )
    export.add_argument("folder", metavar="RUN", help="a job's output folder")
    export.add_argument(
        "--to",
        required=True,
        metavar="FILE",
        help="a .csv or .parquet file (by the extension); item arrays go to one "
        "<stem>.arrays.npz beside it",
    )
    export.add_argument("--force", action="store_true", help="replace FILE if it exists")
    verify = commands.add_parser(
        "verify",
        help="check a job's output folder against its manifest (exit 0, or 2 listing each problem)",
        parents=[logging_options],
    )
    verify.add_argument("folder", metavar="RUN", help="the output folder of a job")
    _add_manifest_key_option(verify)
    verify.add_argument("--json", action="store_true", help="print the report as JSON")
    serve = commands.add_parser(
        "serve",
        help="serve queries over HTTP from a serve config (needs the serve extra)",
        parents=[logging_options],
    )
    serve.add_argument("config", metavar="CONFIG", help="a .toml, .json, .yaml or .yml config")
    serve.add_argument("--host", metavar="HOST", help="override [server] host")
    serve.add_argument("--port", type=_port, metavar="N", help="override [server] port (0: free)")
    args = parser.parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "serve":
        return serve_command(
            args.config,
            host=args.host,
            port=args.port,
            log_format=args.log_format,
            log_level=args.log_level,
        )
    configure_logging(args.log_format or "console", level=args.log_level or "warning")
    if args.command == "validate":
        return _validate(args.files)
    if args.command == "show":
        return _show(args)
    if args.command == "export":
        return _export(args)
    if args.command == "verify":
        return _verify(args)
    try:
        report = anyio.run(describe_machine)
    except VyreError as exc:
        print(f"vyre-async: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(msgspec.json.encode(report).decode())
    else:
        for key, value in msgspec.structs.asdict(report).items():
            print(f"{key}: {'-' if value is None else value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
