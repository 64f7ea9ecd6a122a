"""Running planned query chunks as multi-source traversals over a resident graph.

One chunk of up to ``64 * W`` queries is one traversal: bit lane ``i`` of every
vertex's W words belongs to query ``i``. Only what the queries asked for comes back:
per-lane reached counts, the levels of a target set, or full levels.
"""

from __future__ import annotations

from collections.abc import Mapping

import anyio
import numpy as np

from ..backends import Backend, ReadRange, ResidentBuffer, SequenceStep
from ..kernels import _msbfs as ms
from ._planner import LANES_PER_WORD, QueryChunk
from ._repeat import run_until_done


class MultiSourceTraversal:
    """Runs :class:`QueryChunk` s on one resident graph.

    Args:
        backend: The backend holding the graph.
        graph: The session's device arrays (``offsets``, ``in_offsets``, ``in_indices``).
        num_vertices: Vertices of the graph.
    """

    def __init__(
        self, backend: Backend, graph: Mapping[str, ResidentBuffer], num_vertices: int
    ) -> None:
        self._backend = backend
        self._graph = graph
        self._n = num_vertices
        #: Device time of the traversals run so far (timing events).
        self.device_ns = 0
        #: Levels expanded by the traversals run so far.
        self.levels = 0

    async def run(self, chunk: QueryChunk) -> np.ndarray:
        """Run one chunk; return one row per query, in chunk order.

        Returns:
            int32 ``(queries, V)`` levels, ``(queries, K)`` target levels, or
            ``(queries,)`` reached counts, by the chunk's readback (-1: unreached).
        """
        queries = chunk.queries
        first = queries[0]
        words = chunk.words
        lanes = LANES_PER_WORD * words
        n = self._n
        sources = np.full(lanes, -1, dtype=np.int32)
        sources[: len(queries)] = [q.source for q in queries]
        max_level = first.k if first.kind == "khop" and first.k is not None else ms.MSBFS_UNLIMITED
        readback = "counts" if first.kind == "reach" else first.readback
        backend = self._backend
        owned: list[ResidentBuffer] = []

        async def alloc(count: int, dtype: type[np.generic]) -> ResidentBuffer:
            buffer = await backend.alloc(max(count, 1) * np.dtype(dtype).itemsize, dtype)
            owned.append(buffer)
            return buffer

        try:
            src = await backend.upload(sources)
            owned.append(src)
            visited = await alloc(n * words, np.uint64)
            a = await alloc(n * words, np.uint64)
            b = await alloc(n * words, np.uint64)
            state = await alloc(ms.MSBFS_STATE_WORDS, np.int32)
            g = self._graph
            base = {"offsets": g["offsets"], "sources": src, "state": state}
            prefix = [
                SequenceStep(
                    ms.msbfs_init,
                    {**base, "visited": visited, "frontier": a, "next": b},
                    {"max_level": int(max_level)},
                )
            ]
            record: list[tuple[object, dict[str, ResidentBuffer]]] = []
            output: ResidentBuffer | None = None
            if readback == "targets":
                targets = await backend.upload(np.asarray(first.targets, dtype=np.int32))
                owned.append(targets)
                output = await alloc(lanes * len(first.targets), np.int32)
                tb = {"targets": targets, "target_levels": output, "state": state}
                prefix.append(SequenceStep(ms.msbfs_init_targets, {**tb, "sources": src}))
                record.append((ms.msbfs_record_targets, {**tb, "offsets": g["offsets"]}))
            elif readback == "levels":
                output = await alloc(lanes * n, np.int32)
                lb = {"levels": output, "state": state, "offsets": g["offsets"]}
                prefix.append(SequenceStep(ms.msbfs_init_levels, {**lb, "sources": src}))
                record.append((ms.msbfs_record_levels, lb))

            def level(frontier: ResidentBuffer, nxt: ResidentBuffer) -> list[SequenceStep]:
                pull = {
                    "in_offsets": g["in_offsets"],
                    "in_indices": g["in_indices"],
                    "frontier": frontier,
                    "next": nxt,
                    "visited": visited,
                    "state": state,
                }
                steps = [
                    SequenceStep(ms.msbfs_expand, pull),
                    SequenceStep(ms.msbfs_expand_hubs, pull),
                ]
                steps += [SequenceStep(k, {**bind, "next": nxt}) for k, bind in record]  # type: ignore[arg-type]
                steps.append(SequenceStep(ms.msbfs_advance, {"state": state}))
                return steps

            words_read, device_ns = await run_until_done(
                backend, prefix, level(a, b) + level(b, a), state, ms.STATE_DONE
            )
            self.device_ns += device_ns
            self.levels += int(words_read[ms.STATE_LEVELS_RUN])
            if readback == "counts":
                counts = await alloc(lanes, np.int32)
                (result,) = await backend.submit_sequence(
                    [
                        SequenceStep(
                            ms.msbfs_count,
                            {
                                "offsets": g["offsets"],
                                "sources": src,
                                "visited": visited,
                                "counts": counts,
                            },
                        )
                    ],
                    reads=[ReadRange(counts)],
                )
                return result[: len(queries)]
            assert output is not None
            rows = await backend.read(output)
            width = len(first.targets) if readback == "targets" else n
            return rows.reshape(lanes, width)[: len(queries)]
        finally:
            with anyio.CancelScope(shield=True):
                await backend.settle(owned)
                for buffer in owned:
                    await backend.free(buffer)
