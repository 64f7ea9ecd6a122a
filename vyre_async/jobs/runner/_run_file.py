"""Running a job file from plain Python in one call: :func:`run`."""

from __future__ import annotations

import os
import sys

import anyio

from ...backends import BackendKind, DeviceSelector
from ...errors import LifecycleError
from ..spec import load_job
from ._runner import JobRunner
from ._summary import JobSummary


def run(
    path: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    backend: BackendKind | None = None,
    devices: DeviceSelector | None = None,
    progress: bool = False,
) -> JobSummary:
    """Run a job file to its end and return its summary, as ``vyre-async run`` does.

    The synchronous face of :class:`JobRunner`: it loads the file, starts an event
    loop (asyncio), runs every item and returns the summary also written to
    ``<out>/summary.json``. The options are the command line's, with its defaults:
    the job file's output folder, backend and devices unless given. Unlike the
    command line it draws no progress bar unless ``progress`` (progress is then
    logged every ``[logging] progress_interval_s``, at info level), configures no
    logging (your ``logging`` setup decides what is shown; ``<out>/log.jsonl`` gets
    the run's events regardless) and installs no signal handlers: Ctrl-C raises
    ``KeyboardInterrupt`` as usual, and what was committed stays for
    ``resume=True``.

    Example::

        summary = vyre_async.jobs.run("configs/quickstart.toml", out="runs/quick")
        print(summary.status, summary.items_committed, summary.items_per_s)

    Args:
        path: The job file (``.toml``, ``.json``, ``.yaml``, ``.yml``).
        out: Output folder overriding ``[output] dir``.
        resume: Continue the job committed in the output folder.
        backend: ``"auto"``, ``"cuda"`` or ``"cpu"``, overriding ``[job] backend``.
        devices: An ordinal, ``"all"`` or a list, overriding ``[job] devices``.
        progress: Draw a progress bar on standard error.

    Returns:
        The run's summary: ``status`` (``"complete"``, ``"failed"`` or
        ``"interrupted"``), ``exit_code``, ``items_committed``, ``items_failed``,
        ``items_per_s``, ``output`` and the rest of :class:`JobSummary`. A job that
        failed (too many failed items, a device lost too often) returns its summary
        with ``status = "failed"``; it does not raise.

    Raises:
        LifecycleError: An event loop is running in this thread: in async code,
            ``await JobRunner(load_job(path), job_file=path).run()`` instead, or
            call this in a worker thread (``anyio.to_thread.run_sync``).
        ConfigurationError: The job file or output folder cannot be used (the
            message names the file, the ``$.path`` inside it and a fix).
        ValidationError: The job file's values are out of range.
        UnsupportedFeatureError: The job needs a GPU and none answers.
    """
    running = _running_event_loop()
    if running is not None:
        raise LifecycleError(
            f"vyre_async.jobs.run() starts its own event loop, and {running} is running "
            "in this thread",
            fix="in async code, await JobRunner(load_job(path), job_file=path).run() "
            "(vyre_async.jobs), or call run() in a worker thread: "
            "await anyio.to_thread.run_sync(lambda: vyre_async.jobs.run(path)).",
        )
    job_file = os.fspath(path)
    runner = JobRunner(
        load_job(job_file),
        job_file=job_file,
        out=out,
        backend=backend,
        devices=devices,
        resume=resume,
        progress_stream=sys.stderr if progress else None,
    )
    return anyio.run(runner.run)


def _running_event_loop() -> str | None:
    """The event loop running in this thread (``"asyncio"``, ``"trio"``), if any."""
    try:
        import sniffio
    except ImportError:  # anyio does without it and trio needs it: only asyncio can run
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None
        return "asyncio"
    try:
        return str(sniffio.current_async_library())
    except sniffio.AsyncLibraryNotFoundError:
        return None
