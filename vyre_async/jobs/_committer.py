"""Gathering records into chunks and committing them, one chunk at a time.

The committer takes the workers' records from a bounded stream and cuts them into
chunks of ``commit_items`` records, or whatever arrived within ``commit_interval_s``.
A writer task commits the chunks in order through the :class:`ResultStore` in a
worker thread, while the committer already gathers the next one: a commit's fsyncs
never hold up the workers unless two chunks are waiting (the stream between the two
holds one).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream

from ._progress import Progress
from ._records import ItemRecord
from ._spec import OutputSection
from ._store import ResultStore

#: A block's records and how many of them are failures.
Outcomes = tuple[list[ItemRecord], int]


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
        #: Set once every received record is committed (the stream ended).
        self.done = anyio.Event()

    async def run(self, receive: ObjectReceiveStream[Outcomes]) -> None:
        """Gather and commit until ``receive`` ends; then set :attr:`done`."""
        chunks_send, chunks_receive = anyio.create_memory_object_stream[Outcomes](1)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._write, chunks_receive)
            async with chunks_send, receive:
                await self._gather(receive, chunks_send)
        self.done.set()

    async def _gather(
        self,
        receive: ObjectReceiveStream[Outcomes],
        chunks: ObjectSendStream[Outcomes],
    ) -> None:
        output, progress = self._output, self._progress
        chunk: list[ItemRecord] = []
        chunk_failed = 0
        due = time.monotonic() + output.commit_interval_s
        ended = False
        while not ended:
            with anyio.move_on_after(max(0.0, due - time.monotonic())):
                try:
                    records, failed = await receive.receive()
                except anyio.EndOfStream:
                    ended = True
                else:
                    chunk += records
                    chunk_failed += failed
                    progress.add(len(records), failed)
                    if failed:
                        self._on_failures(self._failed_before + progress.failed)
            now = time.monotonic()
            if chunk and (ended or len(chunk) >= output.commit_items or now >= due):
                await chunks.send((chunk, chunk_failed))
                chunk, chunk_failed = [], 0
            if now >= due:
                due = now + output.commit_interval_s

    async def _write(self, chunks: ObjectReceiveStream[Outcomes]) -> None:
        async with chunks:
            async for chunk, failed in chunks:
                # A commit that started finishes: its chunk is either all in or not listed.
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self._store.commit, chunk, failed)
