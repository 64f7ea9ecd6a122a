"""The batch runner: a job's items through a resident-graph session, committed once.

Three kinds of task share one task group::

    producer --(bounded stream of blocks)--> workers --(bounded stream)--> committer
                                             target.run: bfs_many / pagerank

The producer cuts the job's items into blocks (skipping committed ones); each
worker runs a block with a timeout and bounded retries (:mod:`._attempts`) on the
job's target (a local session's dynamic batcher, or Ray actors; see :mod:`._targets`); the
committer gathers records into chunks and commits them through the
:class:`ResultStore`. Both streams are bounded, so a job holds a few blocks of items
and one chunk of records however many items it has.

A lost device ends the current *generation* (target: backend + session): the blocks
it had taken are queued again, the backend is reopened and the graph uploaded
again, at most ``limits.max_reopens`` times. The committer lives across generations.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NoReturn, TextIO

import anyio
import msgspec
import numpy as np
from anyio.abc import ObjectReceiveStream, ObjectSendStream

from ..._groups import sole_vyre_error
from ..._lifecycle import Lifecycle
from ..._version import __version__
from ...backends import BackendKind, DeviceSelector
from ...errors import (
    ConfigurationError,
    DeviceLostError,
    UnsupportedFeatureError,
    VyreError,
)
from ...graphs import CsrGraph
from ...logging import JsonLogFile, get_logger
from ...telemetry import (
    MetricFamily,
    StartupStage,
    StartupTimeline,
    recording_startup,
    startup_stage,
)
from ..graph import graph_fingerprint, job_fingerprint
from ..output import LOG_FILE, Manifest, ManifestKey, ResultStore, record_layout
from ..spec import JobSpec, resolve_sources
from ._attempts import BlockAttempts
from ._committer import Committer, Outcomes
from ._execute import BlockExecutor, execute_block
from ._executors import Executor, LocalExecutor, executor_for
from ._graph_start import GraphStart
from ._items import (
    ItemBlock,
    check_sources,
    check_workloads,
    iter_blocks,
    listed_source_arrays,
    sources_out_degree,
    total_items,
)
from ._local_devices import missing_device_reason
from ._metrics import JobMetrics, job_families, refresh_periodically
from ._preflight import backend_unavailable_reason, check_job
from ._progress import Progress
from ._signals import exit_code, exiting_at_once_on_signals, next_signal, noting_signals
from ._summary import EXIT_OK, JobSummary, Status, how_it_ended
from ._targets import BlockTarget, LocalTarget
from ._warmup import ContextWarmup

_log = get_logger("vyre_async.jobs")

#: Blocks of records that may wait for the committer.
RECORD_QUEUE_BLOCKS = 4
#: Seconds past ``drain_timeout_s`` before a drain stuck in threads is cut short.
DRAIN_GRACE_S = 0.5


class JobRunner(Lifecycle):
    """Runs one job once.

    Args:
        spec: The job.
        job_file: The file it came from (relative paths start at its folder).
        out: Output folder overriding ``[output] dir`` (any folder).
        backend: Backend kind overriding ``[job] backend``.
        devices: Devices overriding ``[job] devices`` (an ordinal, ``"all"``, a list).
        resume: Continue the job committed in the output folder.
        execute: Runs a block (default :func:`execute_block`); tests inject faults here.
        handle_signals: Drain on the first SIGINT/SIGTERM and exit at once on the
            second; past ``drain_timeout_s`` commit what is done and end the process;
            before and after the drain a signal ends the process at once (the CLI
            turns this on; it needs the main thread).
        progress_stream: Where the progress bar goes; ``None`` logs progress lines.
        retry_rng: Draws the jitter of retry waits (a fresh generator by default;
            tests pass a seeded one).
        metrics: Refreshed with the job's figures about once a second while it runs
            (for Prometheus; see :class:`JobMetrics`).
        report: Called with the summary when the runner ends the process itself
            (past the drain deadline), where :meth:`run` cannot return it.
        on_exit_at_once: Called when a second signal ends the process at once, with a
            summary of what is committed so far (``summary.json`` is not written then);
            the CLI prints how to resume.
        manifest_key: Seal the output folder's manifests with this key, and check a
            resumed folder's with it (:func:`load_manifest_key` reads one from a file
            or the environment); ``None`` writes manifests without a MAC.
        startup: The start-up timeline the run marks its stages on, up to its first
            commit, each logged as a ``startup`` event (the CLI passes one from the
            process's start); ``None``: one from the runner's making.
        backend_refused: Makes the error a CUDA job raises where no GPU answers (or
            an ordinal is beyond the driver's count) from the driver's reason: the
            CLI's words and fix; ``None``: an ``UnsupportedFeatureError`` with the
            Python API's fix.
    """

    _noun = "job runner"
    _open_verb = "run"
    _make_fix = "make a new JobRunner per run."

    def __init__(
        self,
        spec: JobSpec,
        *,
        job_file: str | os.PathLike[str],
        out: str | os.PathLike[str] | None = None,
        backend: BackendKind | None = None,
        devices: DeviceSelector | None = None,
        resume: bool = False,
        execute: BlockExecutor = execute_block,
        handle_signals: bool = False,
        progress_stream: TextIO | None = None,
        retry_rng: np.random.Generator | None = None,
        metrics: JobMetrics | None = None,
        report: Callable[[JobSummary], None] | None = None,
        on_exit_at_once: Callable[[JobSummary], None] | None = None,
        manifest_key: ManifestKey | None = None,
        startup: StartupTimeline | None = None,
        backend_refused: Callable[[str], VyreError] | None = None,
    ) -> None:
        self._job_file = Path(job_file)
        # A spec made in code may still name sources files; load_job's are read already.
        self._spec = spec = resolve_sources(spec, self._job_file)
        self._out = out
        self._folder = Path()
        self._backend_kind: BackendKind = backend or spec.job.backend
        self._devices: DeviceSelector = spec.job.devices if devices is None else devices
        self._resume = resume
        self._execute = execute
        self._handle_signals = handle_signals
        self._progress_stream = progress_stream
        self._metrics = metrics
        self._live_target: LocalTarget | None = None
        self._live_families: list[MetricFamily] = []
        self._report = report
        self._on_exit_at_once = on_exit_at_once
        self._manifest_key = manifest_key
        self._log_file: JsonLogFile | None = None
        self._started = 0.0
        self._started_at = ""
        self._job_file_path = str(self._job_file)
        self._total = total_items(spec)
        # Blocks taken from the item sequence and not yet handed to the committer.
        self._pending: dict[int, ItemBlock] = {}
        self._redo: deque[ItemBlock] = deque()
        self._keys = itertools.count()
        self._stopping = False
        self._stop_status: Literal["interrupted", "failed"] | None = None
        self._stop_message = ""
        self._signal: int | None = None
        self._drain_deadline = float("inf")
        self._generation_scope: anyio.CancelScope | None = None
        self._lost: BaseException | None = None
        self._reopens = 0
        self._backend_name = ("", "")
        self._telemetry: dict[str, Any] | None = None
        self._batches: dict[str, Any] | None = None
        self._executor: Executor = LocalExecutor()
        self._connection: Any = None  # what the executor connected (Ray: the cluster)
        self._warmup: ContextWarmup | None = None
        self._startup = startup if startup is not None else StartupTimeline(time.monotonic())
        self._backend_refused = backend_refused
        self._attempts = BlockAttempts(
            spec,
            retry_rng if retry_rng is not None else np.random.default_rng(),
            lambda: self._lost is not None,
        )

    async def run(self) -> JobSummary:
        """Run the job to completion, a stop (signal, failures) or a fatal error.

        Returns:
            The summary, also written to ``<out>/summary.json``.

        Raises:
            ConfigurationError: The output folder or graph cannot be used.
            LifecycleError: This runner ran before.
        """
        self._enter_open()
        try:
            with (
                exiting_at_once_on_signals(self._handle_signals),
                recording_startup(self._startup),
            ):
                return await self._run()
        except BaseExceptionGroup as group:
            # A stage that fails (the committer on a full disk) breaks the streams of
            # the stages feeding it: their BrokenResourceErrors follow from its error.
            _, rest = group.split(anyio.BrokenResourceError)
            error = sole_vyre_error(rest) if rest is not None else None
            if error is None:
                raise
            raise error from None
        finally:
            self._startup.close()
            await self._end_warmup()
            self._enter_closed()

    async def _run(self) -> JobSummary:
        spec = self._spec
        # When it started, for the summary; durations come from the monotonic clock.
        self._started_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        self._started = time.monotonic()
        # The driver's check and the device contexts' warm-up start together (whichever
        # thread loads the driver first initialises it; the other finds it loaded), and
        # the graph is read meanwhile, once the job file passed its checks.
        self._warmup = ContextWarmup.start(self._backend_kind, self._devices, spec.job.executor)
        checked = anyio.Event()  # the devices' check ended
        passed = anyio.Event()  # and passed: a graph may be generated
        refusal: list[VyreError] = []

        async def check_backend() -> None:
            try:
                await self._check_backend()
                passed.set()
            except VyreError as exc:
                refusal.append(exc)
            finally:
                checked.set()

        async def backend_checked() -> None:
            await checked.wait()
            if refusal:
                raise refusal[0]

        graph = GraphStart(spec, self._job_file, self._backend_kind, self._devices, passed)
        failure: BaseException | None = None
        async with anyio.create_task_group() as start:
            start.start_soon(check_backend)
            try:
                # Everything refused before the folder is touched (validate checks the same).
                try:
                    check = await anyio.to_thread.run_sync(
                        check_job, spec, self._job_file, self._out
                    )
                    if check.folder is None:
                        raise ConfigurationError(
                            f"{self._job_file}: $.output.dir: no output folder is set",
                            fix="set dir in [output], or pass --out DIR.",
                        )
                    # The graph's events come before the folder may be made: held.
                    log_file = JsonLogFile(check.folder / LOG_FILE, level=spec.logging.level)
                    log_file.hold()
                    self._log_file = log_file
                except VyreError:
                    await backend_checked()  # a refused backend is reported first
                    raise
                start.start_soon(graph.run)
                await backend_checked()  # a refusal cancels the graph's preparation
                startup_stage("devices_checked")
                summary = await self._run_checked(check.folder, log_file, graph)
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:  # raised as it is, not in the task group's group
                failure = exc
                start.cancel_scope.cancel()
        if failure is not None:
            if self._log_file is not None:
                self._log_file.close()  # no folder made yet: the events held are dropped
            raise failure
        return summary

    async def _run_checked(
        self, folder: Path, log_file: JsonLogFile, graph: GraphStart
    ) -> JobSummary:
        """Open the output folder and its log file (the events held so far first), and
        run the job (its graph being prepared)."""
        spec = self._spec
        self._folder = folder
        self._job_file_path = str(await anyio.to_thread.run_sync(self._job_file.resolve))
        fingerprint = await anyio.to_thread.run_sync(job_fingerprint, spec, self._job_file)
        store = await anyio.to_thread.run_sync(
            lambda: ResultStore.open(
                self._folder,
                job=spec.job.name,
                fingerprint=fingerprint,
                total_items=self._total,
                resume=self._resume,
                layout=record_layout(w.kind for w in spec.workload),
                chunk_format=spec.output.format,
                manifest_key=self._manifest_key,
            )
        )
        startup_stage("job_checked")
        try:
            await anyio.to_thread.run_sync(log_file.open)
            # The stages so far are logged now, the later ones as they end.
            self._startup.listen(self._log_startup)
            try:
                if self._resume and store.manifest.complete:
                    graph.cancel()
                    return await self._already_complete(store)
                return await self._run_logged(store, graph)
            finally:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(log_file.close)
        except BaseException:
            # A run refused before its first commit leaves no stub behind.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(store.discard_if_unused)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(store.close)

    def _log_startup(self, stage: StartupStage) -> None:
        """Log a stage of the start-up; the first commit ends it."""
        extra: dict[str, Any] = {"took_s": stage.took_s} if stage.took_s is not None else {}
        if stage.device is not None:
            extra["device"] = stage.device
        _log.info("startup", stage=stage.stage, at_s=stage.at_s, **extra, **stage.fields)
        if stage.stage == "first_chunk_committed":
            self._startup.close()

    async def _end_warmup(self) -> None:
        """Let go of the warm-up's contexts (the job's devices hold their own)."""
        warmup, self._warmup = self._warmup, None
        if warmup is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(warmup.release)

    async def _check_backend(self) -> None:
        """Refuse a CUDA job where no GPU answers, and devices that do not exist here,
        before loading or creating anything."""
        reason = await anyio.to_thread.run_sync(
            backend_unavailable_reason, self._backend_kind, self._devices, self._spec.job.executor
        )
        if reason is not None:
            if self._backend_refused is not None:
                raise self._backend_refused(reason)
            raise UnsupportedFeatureError(
                f"job {self._spec.job.name!r} runs on the CUDA backend, and {reason}",
                fix="run it where a GPU answers, or on the CPU backend: "
                "JobRunner(spec, job_file=..., backend='cpu'), or [job] backend = \"auto\" "
                "in the job file.",
            )
        missing = await anyio.to_thread.run_sync(
            missing_device_reason, self._backend_kind, self._devices, self._spec.job.executor
        )
        if missing is not None:
            raise ConfigurationError(
                f"job {self._spec.job.name!r}: {missing}",
                fix="ask for devices that exist ([job] devices, --devices on the command "
                'line, devices= for JobRunner): 0, or "all", or on the CPU backend a list '
                "of the ordinals 0 to n-1.",
            )

    async def _run_logged(self, store: ResultStore, start: GraphStart) -> JobSummary:
        spec = self._spec
        _log.info(
            "job_started",
            job=spec.job.name,
            output=str(self._folder),
            items=self._total,
            resume=self._resume,
        )
        # Ray (when used) starts while the graph is prepared; the graph cache is written
        # in the background while the job runs.
        async with self._connect_executor():
            graph = await start.take()
            out_degree = sources_out_degree(spec, graph)
            # Converting and checking 10^6 listed sources takes milliseconds: in a thread.
            listed = await anyio.to_thread.run_sync(listed_source_arrays, spec)
            await anyio.to_thread.run_sync(
                check_sources, spec, graph.num_vertices, str(self._job_file), out_degree, listed
            )
            check_workloads(
                spec,
                str(self._job_file),
                num_vertices=graph.num_vertices,
                weighted=graph.weights is not None,
            )
            progress = Progress(
                self._total,
                store.manifest.committed,
                self._progress_stream,
                spec.logging.progress_interval_s,
            )
            # The producer skips committed items; commits mark theirs in the same flags.
            blocks = iter_blocks(spec, graph.num_vertices, store.committed, out_degree, listed)
            await self._run_generations(store, graph, blocks, progress)
            progress.close()
            if self._metrics is not None:
                self._metrics.publish(self._metric_families(progress))
        summary = await self._finish(store, progress)
        _log_finished(summary)
        return summary

    async def _already_complete(self, store: ResultStore) -> JobSummary:
        """A resume of a complete job: nothing runs, and summary.json keeps its summary
        (this one names the backend and device the items ran on, from it)."""
        manifest = store.manifest
        seconds = time.monotonic() - self._started
        written = await anyio.to_thread.run_sync(store.read_summary)
        earlier = _decoded_summary(written)
        if earlier is not None:
            self._backend_name = (earlier.backend, earlier.device)
        where = f" on {earlier.backend} ({earlier.device})" if earlier and earlier.backend else ""
        summary = self._summary(
            status="complete",
            code=EXIT_OK,
            message=(
                f"already complete: all {manifest.committed} items ({manifest.failed} failed) "
                f"were committed to {self._folder / 'chunks'} by an earlier run{where}; "
                "nothing ran, and summary.json keeps that run's summary"
            ),
            manifest=manifest,
            done=0,
            skipped=manifest.committed,
            seconds=seconds,
        )
        if written is None:
            await anyio.to_thread.run_sync(store.write_summary, summary)
        _log.info("job_already_complete", job=self._spec.job.name, output=str(self._folder))
        return summary

    # ------------------------------------------------------------- the pipeline
    async def _run_generations(
        self, store: ResultStore, graph: CsrGraph, blocks: Iterator[ItemBlock], progress: Progress
    ) -> None:
        send, receive = anyio.create_memory_object_stream[Outcomes](RECORD_QUEUE_BLOCKS)
        committer = Committer(store, self._spec.output, progress, self._check_failures)

        async def finish_past_deadline() -> None:
            await self._finish_past_deadline(store, progress, committer)

        async def exit_at_once(signum: int) -> None:
            await self._exit_at_once(signum, store, progress)

        async with anyio.create_task_group() as tg:
            if self._handle_signals:
                tg.start_soon(self._watch_signals, finish_past_deadline, exit_at_once)
            if self._metrics is not None:
                tg.start_soon(
                    refresh_periodically, self._metrics, lambda: self._metric_families(progress)
                )
            tg.start_soon(committer.run, receive)
            async with send:
                while True:
                    await self._generation(graph, blocks, send, store, committer.cut_soon)
                    if self._lost is None or not self._reopen():
                        break
            # The committer commits what is left, then the signal task (which never
            # ends by itself) is cancelled.
            await committer.done.wait()
            tg.cancel_scope.cancel()

    def _reopen(self) -> bool:
        lost, self._lost = self._lost, None
        self._redo.extend(sorted(self._pending.values(), key=lambda b: int(b.ids[0])))
        self._pending.clear()
        if self._stopping:
            return False
        if self._reopens >= self._spec.limits.max_reopens:
            self._stop(
                "failed",
                f"the device was lost {self._reopens + 1} times (limits.max_reopens="
                f"{self._spec.limits.max_reopens}): {lost}",
            )
            return False
        self._reopens += 1
        _log.warning("device_lost_reopening", reopen=self._reopens, error=str(lost))
        return True

    async def _generation(
        self,
        graph: CsrGraph,
        blocks: Iterator[ItemBlock],
        records: ObjectSendStream[Outcomes],
        store: ResultStore,
        workers_done: Callable[[], None],
    ) -> None:
        try:
            async with self._open_target(graph) as target:
                await self._end_warmup()
                self._backend_name = (target.backend, target.device)
                if isinstance(target, LocalTarget):
                    self._live_target = target
                with anyio.CancelScope(deadline=self._drain_deadline) as scope:
                    self._generation_scope = scope
                    workers = target.concurrency
                    send, receive = anyio.create_memory_object_stream[tuple[int, ItemBlock]](
                        workers
                    )
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._produce, blocks, send)
                        async with receive:
                            for _ in range(workers):
                                tg.start_soon(self._work, target, receive.clone(), records, store)
                self._generation_scope = None
                workers_done()  # their last records are committed while the target closes
                self._telemetry, self._batches = await target.report()
                self._metric_families_of_target()  # the last ones, before it closes
        except VyreError as exc:
            if self._lost is None and not isinstance(exc, DeviceLostError):
                raise
            # Closing (or reopening) a lost device fails too; the next try decides.
            self._lost = self._lost or exc
        finally:
            self._live_target = None

    def _metric_families_of_target(self) -> list[MetricFamily]:
        """The open target's figures now, else the last ones it gave."""
        if self._live_target is not None and self._metrics is not None:
            with contextlib.suppress(VyreError):  # a lost device: keep the last figures
                self._live_families = self._live_target.metric_families(self._metrics.prefix)
        return self._live_families

    def _metric_families(self, progress: Progress) -> list[MetricFamily]:
        prefix = self._metrics.prefix if self._metrics is not None else "vyre_async"
        return [
            *job_families(
                prefix,
                self._spec.job.name,
                items_total=self._total,
                items_committed=progress.skipped + progress.done,
                items_done=progress.done,
                items_failed=progress.failed,
                retries=self._attempts.retries,
                reopens=self._reopens,
            ),
            *self._metric_families_of_target(),
        ]

    @asynccontextmanager
    async def _connect_executor(self) -> AsyncIterator[None]:
        """Connect the job's executor for the run (Ray: joined in the background; local
        devices: opened in the background)."""
        spec = self._spec
        self._executor = executor_for(spec.job.executor)
        job = msgspec.structs.replace(spec.job, backend=self._backend_kind, devices=self._devices)
        # The graph file's digest is in the graph cache by now (the job's fingerprint).
        graph_key = await anyio.to_thread.run_sync(graph_fingerprint, spec, self._job_file)
        async with self._executor.connect(
            msgspec.structs.replace(spec, job=job), graph_key=graph_key
        ) as connection:
            self._connection = connection
            try:
                yield
            finally:
                self._connection = None

    def _open_target(self, graph: CsrGraph) -> AbstractAsyncContextManager[BlockTarget]:
        return self._executor.target(
            self._connection,
            self._spec,
            backend=self._backend_kind,
            devices=self._devices,
            graph=graph,
            execute=self._execute,
        )

    async def _produce(
        self, blocks: Iterator[ItemBlock], send: ObjectSendStream[tuple[int, ItemBlock]]
    ) -> None:
        async with send:
            while not self._stopping:
                block = self._redo.popleft() if self._redo else next(blocks, None)
                if block is None:
                    return
                key = next(self._keys)
                self._pending[key] = block
                await send.send((key, block))

    async def _work(
        self,
        target: BlockTarget,
        receive: ObjectReceiveStream[tuple[int, ItemBlock]],
        records: ObjectSendStream[Outcomes],
        store: ResultStore,
    ) -> None:
        async with receive:
            async for key, block in receive:
                if self._stopping:
                    continue  # stays pending: not committed, so a resume runs it
                began = time.monotonic()
                startup_stage("first_block_started", items=len(block))
                try:
                    done = await self._attempts.run(target, block, store)
                except DeviceLostError as exc:
                    self._lose(exc)
                    return
                except VyreError as exc:
                    if self._lost is None:
                        raise
                    _log.debug("block_abandoned_with_lost_device", error=str(exc))
                    return
                startup_stage("first_block_done", began=began, items=len(block))
                await records.send(done)
                del self._pending[key]

    def _lose(self, exc: BaseException) -> None:
        if self._lost is None:
            self._lost = exc
        if self._generation_scope is not None:
            self._generation_scope.cancel()

    def _check_failures(self, failed: int) -> None:
        limit = self._spec.limits.max_failed_items
        if failed > limit:
            self._stop(
                "failed", f"{failed} items failed, more than limits.max_failed_items={limit}"
            )

    # ----------------------------------------------------------------- stopping
    def _stop(self, status: Literal["interrupted", "failed"], message: str) -> None:
        """Stop admitting blocks; in-flight ones get ``drain_timeout_s`` to finish."""
        if self._stopping:
            return
        self._stopping, self._stop_status, self._stop_message = True, status, message
        self._drain_deadline = anyio.current_time() + self._spec.limits.drain_timeout_s
        if self._generation_scope is not None:
            self._generation_scope.deadline = self._drain_deadline
        _log.warning("job_stopping", reason=message, drain_s=self._spec.limits.drain_timeout_s)

    async def _watch_signals(
        self,
        finish_past_deadline: Callable[[], Awaitable[None]],
        exit_at_once: Callable[[int], Awaitable[None]],
    ) -> None:
        """First signal: drain. A second one: exit now. Past the drain deadline (workers
        still waiting on threads, which cannot be cancelled): commit what is done, exit.

        The handler only notes the signal and this task looks every
        :data:`~._signals.SIGNAL_POLL_S`: a handler swapped in for the end-at-once one and back,
        with no moment under the default action (asyncio's own signal handling puts
        the defaults back when it stops), and nothing done inside a signal handler
        that an event loop does not allow there.
        """
        received: deque[int] = deque()
        with noting_signals(received.append):
            signum = await next_signal(received)
            self._signal = signum
            name = signal.Signals(signum).name
            _log.warning(
                "job_signal",
                signal=name,
                action=f"finishing in-flight work (at most "
                f"{self._spec.limits.drain_timeout_s:g} s); send it again to exit now",
            )
            self._stop("interrupted", f"interrupted by {name}")
            with anyio.move_on_after(self._spec.limits.drain_timeout_s + DRAIN_GRACE_S):
                signum = await next_signal(received)
                # Everything committed is already durable; whatever is half written
                # is a temp file or the last run's uncommitted file that resume removes.
                _log.error(
                    "job_signal",
                    signal=signal.Signals(signum).name,
                    action="exiting now; committed results are intact",
                )
                await exit_at_once(signum)
            await finish_past_deadline()

    async def _finish_past_deadline(
        self, store: ResultStore, progress: Progress, committer: Committer
    ) -> None:
        with anyio.CancelScope(shield=True):
            _log.warning(
                "job_drain_deadline_passed",
                drain_s=self._spec.limits.drain_timeout_s,
                action="committing what is done and exiting; unfinished items run on --resume",
            )
            await committer.flush()
            progress.close()
            summary = await self._finish(store, progress)
            _log_finished(summary)
            await self._end_process(summary.exit_code, summary, self._report)

    async def _exit_at_once(self, signum: int, store: ResultStore, progress: Progress) -> NoReturn:
        """End the process now after a second signal; what is committed stays (no summary
        is written: a commit may be under way in a thread)."""
        manifest = store.manifest
        summary = self._summary(
            status="interrupted",
            code=exit_code(signum),
            message=f"exited at once on a second {signal.Signals(signum).name}: "
            f"{manifest.committed} of {self._total} items committed (summary.json not "
            "updated); resume with --resume",
            manifest=manifest,
            done=progress.done,
            skipped=progress.skipped,
            seconds=time.monotonic() - self._started,
        )
        await self._end_process(summary.exit_code, summary, self._on_exit_at_once)

    async def _end_process(
        self, code: int, summary: JobSummary, report: Callable[[JobSummary], None] | None
    ) -> NoReturn:
        """End the process now (workers may still wait on threads): report, flush, exit."""
        with anyio.CancelScope(shield=True):
            if self._log_file is not None:
                await anyio.to_thread.run_sync(self._log_file.close)
        if report is not None:
            report(summary)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)

    async def _finish(self, store: ResultStore, progress: Progress) -> JobSummary:
        manifest = store.manifest
        complete = manifest.committed == self._total
        if complete and not manifest.complete:
            await anyio.to_thread.run_sync(store.finish)
            manifest = store.manifest
        status, code, message = how_it_ended(
            committed=manifest.committed,
            total=self._total,
            failed=manifest.failed,
            stopped=self._stop_status,
            stop_message=self._stop_message,
            signum=self._signal,
            chunks=self._folder / "chunks",
        )
        summary = self._summary(
            status=status,
            code=code,
            message=message,
            manifest=manifest,
            done=progress.done,
            skipped=progress.skipped,
            seconds=time.monotonic() - self._started,
        )
        await anyio.to_thread.run_sync(store.write_summary, summary)
        return summary

    def _summary(
        self,
        *,
        status: Status,
        code: int,
        message: str,
        manifest: Manifest,
        done: int,
        skipped: int,
        seconds: float,
    ) -> JobSummary:
        return JobSummary(
            job=self._spec.job.name,
            status=status,
            exit_code=code,
            message=message,
            output=str(self._folder),
            job_file=self._job_file_path,
            version=__version__,
            started_at=self._started_at,
            backend=self._backend_name[0],
            device=self._backend_name[1],
            items_total=self._total,
            items_committed=manifest.committed,
            items_this_run=done,
            items_skipped=skipped,
            items_failed=manifest.failed,
            retries=self._attempts.retries,
            reopens=self._reopens,
            seconds=round(seconds, 3),
            items_per_s=round(done / max(seconds, 1e-9), 1),
            telemetry=self._telemetry,
            batches=self._batches,
        )


def _log_finished(summary: JobSummary) -> None:
    fields = msgspec.to_builtins(summary)
    for bulky in ("telemetry", "batches"):  # in summary.json; too long for a line
        fields.pop(bulky)
    _log.info("job_finished", **fields)


def _decoded_summary(data: bytes | None) -> JobSummary | None:
    """An earlier run's ``summary.json``, or ``None`` when there is none or it does not
    decode (written by another version)."""
    if data is None:
        return None
    try:
        return msgspec.json.decode(data, type=JobSummary)
    except msgspec.DecodeError:  # ValidationError is a DecodeError
        return None
