"""Running multi-source traversals over a resident graph.

Up to ``64 * W`` sources are one traversal: bit lane ``i`` of every vertex's W words
belongs to source ``i``. Only what the caller asks for comes back: per-lane reached
counts, the levels of a target set, or full levels. Which sources share a traversal
is the caller's plan (``vyre_async.sessions`` plans them by device memory).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import anyio
import numpy as np

from ...backends import Backend, ReadRange, ResidentBuffer, SequenceStep
from .._repeat import run_until_done
from . import _kernels as ms
from ._layout import (
    MSBFS_LANES_PER_WORD,
    MSBFS_STATE_WORDS,
    MSBFS_UNLIMITED,
    STATE_DONE,
    STATE_LEVELS_RUN,
)

#: What a traversal reads back: every vertex's level, reached counts, target levels.
Readback = Literal["levels", "counts", "targets"]


class MultiSourceTraversal:
    """Runs multi-source traversals on one resident graph.

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

    async def run(
        self,
        sources: Sequence[int] | np.ndarray,
        *,
        words: int,
        max_level: int = MSBFS_UNLIMITED,
        readback: Readback = "levels",
        targets: Sequence[int] = (),
    ) -> np.ndarray:
        """Traverse from every source at once; return one row per source, in order.

        Args:
            sources: At most ``64 * words`` source vertices (duplicates allowed).
            words: 64-bit lane words per vertex, 1 to ``MSBFS_MAX_WORDS``.
            max_level: The deepest level to discover (``MSBFS_UNLIMITED``: no limit).
            readback: What comes back per source (see the return value).
            targets: Vertices whose levels a ``"targets"`` readback returns.

        Returns:
            int32 ``(len(sources), V)`` levels, ``(len(sources), len(targets))`` target
            levels, or ``(len(sources),)`` reached counts (-1: unreached).
        """
        count = len(sources)
        lanes = MSBFS_LANES_PER_WORD * words
        n = self._n
        lane_sources = np.full(lanes, -1, dtype=np.int32)
        lane_sources[:count] = sources
        backend = self._backend
        owned: list[ResidentBuffer] = []

        async def alloc(count: int, dtype: type[np.generic]) -> ResidentBuffer:
            buffer = await backend.alloc(max(count, 1) * np.dtype(dtype).itemsize, dtype)
            owned.append(buffer)
            return buffer

        try:
            src = await backend.upload(lane_sources)
            owned.append(src)
            visited = await alloc(n * words, np.uint64)
            a = await alloc(n * words, np.uint64)
            b = await alloc(n * words, np.uint64)
            state = await alloc(MSBFS_STATE_WORDS, np.int32)
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
                target_buffer = await backend.upload(np.asarray(targets, dtype=np.int32))
                owned.append(target_buffer)
                output = await alloc(lanes * len(targets), np.int32)
                tb = {"targets": target_buffer, "target_levels": output, "state": state}
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
                backend, prefix, level(a, b) + level(b, a), state, STATE_DONE
            )
            self.device_ns += device_ns
            self.levels += int(words_read[STATE_LEVELS_RUN])
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
                return result[:count]
            assert output is not None
            rows = await backend.read(output)
            width = len(targets) if readback == "targets" else n
            return rows.reshape(lanes, width)[:count]
        finally:
            with anyio.CancelScope(shield=True):
                await backend.settle(owned)
                for buffer in owned:
                    await backend.free(buffer)
