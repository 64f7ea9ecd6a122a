"""Gathering records into chunks and committing them, one chunk at a time.

The committer takes the workers' records from a bounded stream and cuts them into
chunks, or whatever arrived within ``commit_interval_s``. A run's first chunk is cut
at ``first_commit_items`` records, so its first results (and something a resume keeps)
come within a block or two of the start; each next chunk may hold twice as many as
the one before, up to ``commit_items``, the size that keeps commits cheap.
A writer task hands each chunk to a worker thread that encodes and writes it
(:meth:`ResultStore.write_chunk`), up to :data:`CHUNKS_WRITTEN_AT_ONCE` at once, and
lists the written chunks in the manifest strictly in order
(:meth:`ResultStore.list_chunk`), while the committer already gathers the next one:
writing never holds up the workers unless that many chunks are being written and
another is waiting (the stream between the two holds one). A chunk whose
predecessor failed to commit is written but never listed: a resume removes it.

Full-result arrays travel with their records: as each block arrives, its arrays are
appended to the array file of the chunk being gathered (in a worker thread), and
where the chunk is cut its array file goes to the writer with it.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from anyio.streams.memory import MemoryObjectReceiveStream

from ...errors import ConfigurationError
from ...telemetry import startup_stage
from ..output import (
    CHUNKS_WRITTEN_AT_ONCE,
    ArrayFileWriter,
    ArrayRecords,
    RecordPart,
    ResultStore,
    item_count,
)
from ..spec import OutputSection
from ._progress import Progress

#: A block's records and how many of them are failures.
Outcomes = tuple[list[RecordPart], int]
#: A chunk's records, how many are failures, and its array file.
Chunk = tuple[list[RecordPart], int, ArrayFileWriter | None]


class Committer:
    """Commits a job's records in chunks.

    Args:
        store: The output folder.
        output: Chunk size and interval.
        progress: Counts every record it receives.
        on_failures: Called with the job's failed-item count (earlier runs
            included) whenever records with failures arrive.
    """

    def __init__(
        self,
        store: ResultStore,
        output: OutputSection,
        progress: Progress,
        on_failures: Callable[[int], None],
    ) -> None:
        self._store = store
        self._output = output
        self._progress = progress
        self._on_failures = on_failures
        self._failed_before = store.manifest.failed
        self._chunk: list[RecordPart] = []
        self._chunk_items = 0
        self._chunk_failed = 0
        #: Records that cut the chunk being gathered: doubles from the first chunk's.
        self._chunk_size = min(output.first_commit_items, output.commit_items)
        self._flushing = False
        self._cut_soon = False
        self._receiving: anyio.CancelScope | None = None
        #: The first chunk (by sequence number) whose commit failed: the chunks after
        #: it stay unlisted, the ones before it are listed all the same.
        self._failed_seq: int | None = None
        #: Set once every received record is committed (the stream ended, or a flush).
        self.done = anyio.Event()

    async def run(self, receive: MemoryObjectReceiveStream[Outcomes]) -> None:
        """Gather and commit until ``receive`` ends (or :meth:`flush`); then set :attr:`done`."""
        chunks_send, chunks_receive = anyio.create_memory_object_stream[Chunk](1)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._write, chunks_receive)
            async with chunks_send, receive:
                try:
                    await self._gather(receive, chunks_send)
                    # After a flush: what the workers handed over already, and nothing more.
                    while True:
                        try:
                            outcomes = receive.receive_nowait()
                        except (anyio.WouldBlock, anyio.EndOfStream):
                            break
                        await self._add(*outcomes)
                    if self._chunk:
                        await chunks_send.send(self._cut())
                except anyio.BrokenResourceError:
                    pass  # the writer failed: its error is the one the task group raises
        self.done.set()

    async def flush(self) -> None:
        """Commit every record received so far, stop receiving, and wait until it is done.

        For a drain whose deadline passed while workers still wait on threads.
        """
        self._flushing = True
        if self._receiving is not None:
            self._receiving.cancel()
        await self.done.wait()

    def cut_soon(self) -> None:
        """Commit what was handed over so far without waiting for a full chunk.

        For when the workers have run out of blocks: the last chunk is written while
        the devices close, not after.
        """
        self._cut_soon = True
        if self._receiving is not None:
            self._receiving.cancel()

    async def _add(self, records: list[RecordPart], failed: int) -> None:
        if any(isinstance(part, ArrayRecords) for part in records):  # to the array file
            try:
                records = await anyio.to_thread.run_sync(self._store.append_arrays, records)
            except OSError as exc:  # a full disk, most likely
                raise self._write_failed("writing the next chunk's full results", exc) from exc
        items = item_count(records)
        self._chunk += records
        self._chunk_items += items
        self._chunk_failed += failed
        self._progress.add(items, failed)
        if failed:
            self._on_failures(self._failed_before + self._progress.failed)

    def _cut(self) -> Chunk:
        """The chunk gathered so far, with its array file; the next one starts empty."""
        chunk = (self._chunk, self._chunk_failed, self._store.cut())
        self._chunk, self._chunk_items, self._chunk_failed = [], 0, 0
        self._chunk_size = min(2 * self._chunk_size, self._output.commit_items)
        return chunk

    async def _gather(
        self,
        receive: MemoryObjectReceiveStream[Outcomes],
        chunks: ObjectSendStream[Chunk],
    ) -> None:
        # Loop time, like the timeout it drives (a mock clock moves both together).
        interval = self._output.commit_interval_s
        due = anyio.current_time() + interval
        ended = False
        while not ended and not self._flushing:
            # A flush cancels only this wait, never an append or a send: a block's
            # records are added with their arrays, and a cut chunk is sent.
            outcomes = None
            cut_soon = self._cut_soon  # then only what was handed over already
            if cut_soon:
                try:
                    outcomes = receive.receive_nowait()
                except anyio.WouldBlock:
                    pass
                except anyio.EndOfStream:
                    ended = True
            else:
                with anyio.CancelScope() as self._receiving:
                    with anyio.move_on_after(max(0.0, due - anyio.current_time())):
                        try:
                            outcomes = await receive.receive()
                        except anyio.EndOfStream:
                            ended = True
                self._receiving = None
            if outcomes is not None:
                await self._add(*outcomes)
            now = anyio.current_time()
            chunk = self._chunk
            drained = cut_soon and outcomes is None
            if chunk and (ended or drained or self._chunk_items >= self._chunk_size or now >= due):
                await chunks.send(self._cut())
            if drained:
                self._cut_soon = False
            if now >= due:
                due = now + interval

    async def _write(self, chunks: ObjectReceiveStream[Chunk]) -> None:
        slots = anyio.Semaphore(CHUNKS_WRITTEN_AT_ONCE)
        seq = len(self._store.manifest.chunks)
        before: anyio.Event | None = None
        async with chunks, anyio.create_task_group() as tg:
            async for chunk in chunks:
                await slots.acquire()
                if self._failed_seq is not None:
                    break  # nothing more is written: the failure ends the run
                ended = anyio.Event()
                tg.start_soon(self._commit, seq, chunk, before, ended, slots)
                seq, before = seq + 1, ended

    async def _commit(
        self,
        seq: int,
        chunk: Chunk,
        before: anyio.Event | None,
        ended: anyio.Event,
        slots: anyio.Semaphore,
    ) -> None:
        """Write chunk ``seq``, then list it once the chunk before it (``before`` set) is
        listed, unless an earlier chunk failed (a later one failing first does not
        stop it); a failed commit sets ``_failed_seq`` before its event."""
        records, failed, arrays = chunk
        try:
            # A commit that started finishes: its chunk is either all in or not listed.
            with anyio.CancelScope(shield=True):
                try:
                    written = await anyio.to_thread.run_sync(
                        self._store.write_chunk, seq, records, failed, arrays
                    )
                    if before is not None:
                        await before.wait()
                    if self._failed_seq is not None and self._failed_seq < seq:
                        return  # an earlier chunk's error ends the run: this one stays unlisted
                    await anyio.to_thread.run_sync(self._store.list_chunk, written)
                    startup_stage("first_chunk_committed", items=item_count(records))
                except BaseException as exc:
                    if self._failed_seq is None or seq < self._failed_seq:
                        self._failed_seq = seq
                    if not isinstance(exc, OSError):
                        raise
                    raise self._write_failed(f"committing chunk {seq}", exc) from exc
        finally:
            ended.set()
            slots.release()

    def _write_failed(self, what: str, exc: OSError) -> ConfigurationError:
        """The error that ends a run whose output could not be written."""
        return ConfigurationError(
            f"{what} to {self._store.folder} failed: {exc}; the chunks committed before it "
            "are intact",
            fix="make room on the disk (or make the folder writable), then run the job "
            "again with --resume.",
        )
