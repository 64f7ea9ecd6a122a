"""Running personalized PageRank on a resident graph: W seeds per pass, in passes.

A :class:`PprScratch` holds one shape's buffers (two ``V x W`` rank buffers, the
per-column state, and the top-k buffers when it selects) and the sequences prepared
over them, so pass after pass allocates and binds nothing. :func:`personalized_ranks`
runs a list of seeds through it ``W`` at a time: the seeds are written, the power
iteration runs as a resident repeated sequence until the device says done (only the
state words come back between submissions), then one more submission turns the final
ranks into one row per seed (``ppr_rows``) or selects each seed's top k (and reads
them back). A one-column run reads its ranks straight from the rank buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

import numpy as np

from ...backends import Backend, PreparedSequence, ReadRange, ResidentBuffer, SequenceStep
from ...errors import DispatchError, ValidationError
from .._repeat import prepare_batches, run_prepared
from ._kernels import ppr_check, ppr_gather, ppr_init, ppr_rows, ppr_update
from ._layout import (
    MAX_COLUMNS,
    STATE_DONE,
    STATE_ITERATIONS,
    STATE_WORDS,
    TOP_BINS,
    columns_for,
    columns_within,
    id_shift,
    top_passes,
    valid_columns,
)
from ._results import pack_top
from ._top_kernels import ppr_top_collect, ppr_top_hist, ppr_top_init, ppr_top_select

__all__ = [
    "GRAPH_BUFFERS",
    "PprRun",
    "PprScratch",
    "PprShape",
    "Teleport",
    "allocate_scratch",
    "column_bytes",
    "personalized_ranks",
    "plan_columns",
    "scratch_nbytes",
]

#: What a scratch fits: ``("ppr", vertices, columns, top_k, dense)`` (``top_k`` 0: full
#: ranks; ``dense``: one column personalized by a dense vector).
PprShape = tuple[str, int, int, int, bool]
#: The graph buffers a run reads: the in-lists, out-degrees and each in-edge's share.
GRAPH_BUFFERS = ("in_offsets", "in_indices", "out_degree", "shares")

#: Prepared finishing sequences a scratch keeps (by parity and seed count), at most.
_FINISHES = 16


def _lists(num_vertices: int, columns: int, top_k: int, dense: bool) -> dict[str, tuple[str, int]]:
    """Each buffer's dtype and element count."""
    vw = num_vertices * columns
    lists = {
        "rank_a": ("float32", vw),
        "rank_b": ("float32", vw),
        "seeds": ("int32", columns),
        "personal": ("float32", num_vertices if dense else 1),
        "mass": ("float32", columns),
        "mass_next": ("float32", columns),
        "diff": ("float32", columns),
        "active": ("int32", columns),
        "state": ("float32", STATE_WORDS),
    }
    if top_k:
        lists |= {
            "prefix": ("uint64", columns),
            "need": ("int32", columns),
            "shift": ("int32", columns),
            "taken": ("int32", columns),
            "hist": ("uint32", columns * TOP_BINS),
            "top_vertex": ("int32", columns * top_k),
            "top_rank": ("float32", columns * top_k),
        }
    return lists


def scratch_nbytes(num_vertices: int, columns: int, top_k: int = 0, dense: bool = False) -> int:
    """Device bytes of a scratch: about ``8 V W`` (two rank buffers), plus ``8 k W`` and
    1 KiB per column for a top-k select."""
    lists = _lists(num_vertices, columns, top_k, dense)
    return sum(np.dtype(dtype).itemsize * count for dtype, count in lists.values())


def column_bytes(num_vertices: int, top_k: int = 0) -> int:
    """Device bytes one more column (seed) adds to a scratch."""
    return scratch_nbytes(num_vertices, 2, top_k) - scratch_nbytes(num_vertices, 1, top_k)


def plan_columns(num_vertices: int, top_k: int, count: int, budget_bytes: int) -> int:
    """The columns of a pass for ``count`` seeds whose scratch fits ``budget_bytes``.

    Returns:
        A width the kernels take (:func:`~._layout.columns_for` of the seeds one pass
        carries), at most :data:`~._layout.MAX_COLUMNS`.

    Raises:
        ValidationError: Not even one column fits the budget.
    """
    fixed = scratch_nbytes(num_vertices, 1, top_k) - column_bytes(num_vertices, top_k)
    limit = (budget_bytes - fixed) // column_bytes(num_vertices, top_k)
    widest = columns_within(min(limit, MAX_COLUMNS))
    if widest < 1:
        needed = scratch_nbytes(num_vertices, 1, top_k)
        raise ValidationError(
            f"one seed's personalized ranks over {num_vertices} vertices need {needed} bytes "
            f"of device memory, over the budget of {budget_bytes} bytes",
            fix="raise budget_bytes, or use a smaller graph.",
        )
    return columns_for(min(max(count, 1), widest))


class PprScratch:
    """One shape's device buffers, and the sequences prepared over them.

    Each pass overwrites what it reads (``ppr_init`` sets every rank, sum and state
    word; ``ppr_top_init`` the select's state), so a scratch serves one pass at a time,
    any number of times, until its buffers are freed (:attr:`buffers`).

    Attributes:
        shape: ``("ppr", vertices, columns, top_k, dense)``; pools key on it.
        lists: Its buffers by name.
        buffers: Every buffer it holds.
        nbytes: Their bytes.
    """

    __slots__ = ("_finishes", "_graph", "_iteration", "buffers", "lists", "nbytes", "shape")

    def __init__(self, shape: PprShape, lists: dict[str, ResidentBuffer]) -> None:
        self.shape = shape
        self.lists = lists
        self.buffers = list(lists.values())
        self.nbytes = sum(b.nbytes for b in self.buffers)
        self._graph: tuple[int, ...] = ()
        self._iteration: tuple[PreparedSequence, PreparedSequence] | None = None
        self._finishes: dict[Hashable, PreparedSequence] = {}

    @property
    def columns(self) -> int:
        """Seeds one pass carries."""
        return self.shape[2]

    def _bind(self, graph: Mapping[str, ResidentBuffer]) -> None:
        """Forget what was prepared over another graph's buffers."""
        key = tuple(graph[name].id for name in GRAPH_BUFFERS)
        if key != self._graph:
            self._graph, self._iteration, self._finishes = key, None, {}

    def iteration(
        self, backend: Backend, graph: Mapping[str, ResidentBuffer]
    ) -> tuple[PreparedSequence, PreparedSequence]:
        """The power iteration's first and later batches (two iterations per repeat)."""
        self._bind(graph)
        if self._iteration is None:
            lists = self.lists
            columns = {name: lists[name] for name in ("mass", "mass_next", "diff", "active")}
            init = SequenceStep(
                ppr_init,
                {
                    "out_degree": graph["out_degree"],
                    "seeds": lists["seeds"],
                    "personal": lists["personal"],
                    "rank": lists["rank_a"],
                    "other": lists["rank_b"],
                    **columns,
                    "state": lists["state"],
                },
                {"damping": 0.85, "tol": 1e-6, "max_iter": 1, "dense": 0, "dense_mass": 0.0},
            )
            body = self._half(graph, "rank_a", "rank_b") + self._half(graph, "rank_b", "rank_a")
            self._iteration = prepare_batches(backend, [init], body, lists["state"])
        return self._iteration

    def _half(self, graph: Mapping[str, ResidentBuffer], src: str, dst: str) -> list[SequenceStep]:
        """One iteration from ranks ``src`` into ``dst`` (which arrives zeroed)."""
        lists = self.lists
        return [
            SequenceStep(
                ppr_gather,
                {
                    "in_offsets": graph["in_offsets"],
                    "in_indices": graph["in_indices"],
                    "shares": graph["shares"],
                    "src": lists[src],
                    "dst": lists[dst],
                    "active": lists["active"],
                    "state": lists["state"],
                },
            ),
            SequenceStep(
                ppr_update,
                {
                    "rank_in": lists[src],
                    "rank_out": lists[dst],
                    "out_degree": graph["out_degree"],
                    **{
                        name: lists[name]
                        for name in ("seeds", "personal", "mass", "mass_next", "diff", "active")
                    },
                    "state": lists["state"],
                },
            ),
            SequenceStep(
                ppr_check,
                {name: lists[name] for name in ("mass", "mass_next", "diff", "active", "state")},
            ),
        ]

    def finish(self, backend: Backend, odd: bool, count: int) -> PreparedSequence:
        """What reads a pass back: ``count`` rows, or their top k (by the shape)."""
        key = (odd, count)
        found = self._finishes.get(key)
        if found is not None:
            return found
        lists = self.lists
        final, other = (
            (lists["rank_b"], lists["rank_a"]) if odd else (lists["rank_a"], lists["rank_b"])
        )
        num_vertices, top_k = self.shape[1], self.shape[3]
        if top_k:
            steps = self._select(final, count, top_k, num_vertices)
            reads = [
                ReadRange(lists["taken"], 0, count),
                ReadRange(lists["top_vertex"], 0, count * top_k),
                ReadRange(lists["top_rank"], 0, count * top_k),
            ]
        else:
            steps = [
                SequenceStep(
                    ppr_rows,
                    {"ranks": final, "rows": other, "seeds": lists["seeds"]},
                    {"count": count},
                )
            ]
            reads = [ReadRange(other, 0, count * num_vertices)]
        if len(self._finishes) >= _FINISHES:
            self._finishes.clear()
        prepared = backend.prepare_repeated(steps, [], reads=reads)
        self._finishes[key] = prepared
        return prepared

    def _select(
        self, final: ResidentBuffer, count: int, top_k: int, num_vertices: int
    ) -> list[SequenceStep]:
        lists = self.lists
        select = {name: lists[name] for name in ("prefix", "need", "shift", "hist")}
        steps = [
            SequenceStep(
                ppr_top_init,
                {**select, "taken": lists["taken"]},
                {"count": count, "k": top_k},
            )
        ]
        hist = SequenceStep(
            ppr_top_hist,
            {
                "ranks": final,
                "prefix": lists["prefix"],
                "shift": lists["shift"],
                "hist": lists["hist"],
            },
        )
        pick = SequenceStep(ppr_top_select, select, {"id_shift": id_shift(num_vertices)})
        for _ in range(top_passes(num_vertices)):
            steps += [hist, pick]
        steps.append(
            SequenceStep(
                ppr_top_collect,
                {
                    "ranks": final,
                    "prefix": lists["prefix"],
                    "taken": lists["taken"],
                    "top_vertex": lists["top_vertex"],
                    "top_rank": lists["top_rank"],
                },
                {"count": count, "k": top_k},
            )
        )
        return steps


async def allocate_scratch(backend: Backend, shape: PprShape) -> PprScratch:
    """Allocate the buffers of ``shape``.

    Raises:
        ValueError: The columns are not a width the kernels take.
        OutOfMemoryError: The buffers do not fit (none is left allocated).
    """
    _, num_vertices, columns, top_k, dense = shape
    if not valid_columns(columns) or (dense and columns != 1):
        raise ValueError(f"{columns} columns are not a width the kernels take (dense={dense})")
    lists: dict[str, ResidentBuffer] = {}
    try:
        for name, (dtype, count) in _lists(num_vertices, columns, top_k, dense).items():
            itemsize = np.dtype(dtype).itemsize
            lists[name] = await backend.alloc(count * itemsize, dtype)
    except BaseException:
        for buffer in lists.values():
            await backend.free(buffer)
        raise
    return PprScratch(shape, lists)


@dataclass(frozen=True)
class Teleport:
    """How a run restarts, and how it stops.

    Attributes:
        damping: Probability of following an edge, in (0, 1).
        tol: A column stops once its L1 change is below it.
        max_iter: The run stops after this many iterations at the latest.
        personal: A dense float32 distribution over the vertices (one column, and no
            seeds), or ``None`` (each seed its own column).
        dense_mass: The distribution's mass on vertices without out-edges.
    """

    damping: float
    tol: float
    max_iter: int
    personal: np.ndarray | None = None
    dense_mass: float = 0.0


class PprRun:
    """What :func:`personalized_ranks` did: device time, iterations and passes."""

    __slots__ = ("device_ns", "iterations", "passes")

    def __init__(self) -> None:
        self.device_ns = 0
        self.iterations = 0
        self.passes = 0


async def personalized_ranks(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    scratch: PprScratch,
    seeds: np.ndarray,
    teleport: Teleport,
    check: Callable[[], None] = lambda: None,
    *,
    run: PprRun | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Personalized PageRank of every seed (or of ``teleport.personal``), in passes.

    Args:
        backend: The backend holding the graph and the scratch.
        graph: :data:`GRAPH_BUFFERS`: ``in_offsets`` (int64), ``in_indices`` (int32),
            ``out_degree`` (int32) and ``shares`` (float32, from ``ppr_shares``).
        scratch: Its columns are the seeds per pass; its ``top_k`` what comes back.
        seeds: int32 seed vertices in ``[0, V)``, duplicates allowed (ignored, may be
            empty, with a dense personalization: one row comes back).
        teleport: Damping, tolerance, iteration limit and a dense personalization.
        check: Called before each submission (a closed session raises there).
        run: Receives the device time, iterations and passes, if given.
        out: With one seed's full ranks from a one-column scratch, read them into
            this float32 array (as ``Backend.read`` takes one) and return it.

    Returns:
        float32 ranks ``(n, V)``, one row per seed in order; or, for a top-k scratch,
        the packed ``(n, 2, k)`` int32 rows (see :mod:`._results`); or ``out``.

    Raises:
        ValueError: ``out`` with more than one row to come back, or with top k.
        DispatchError: A select collected other than ``k`` vertices (a bug).
    """
    _, num_vertices, width, top_k, dense = scratch.shape
    wanted = np.zeros(1, np.int32) if dense else np.asarray(seeds, np.int32).reshape(-1)
    if out is not None and (wanted.size != 1 or width != 1 or top_k):
        raise ValueError("out takes the full ranks of one seed, from a one-column scratch")
    if top_k:
        rows = np.empty((wanted.size, 2, top_k), np.int32)
    else:
        rows = np.empty((wanted.size, num_vertices if out is None else 0), np.float32)
    run = run if run is not None else PprRun()
    lists = scratch.lists
    scalars = {
        "damping": teleport.damping,
        "tol": teleport.tol,
        "max_iter": teleport.max_iter,
        "dense": int(dense),
        "dense_mass": teleport.dense_mass,
    }
    if dense:
        if teleport.personal is None:
            raise ValueError("a dense scratch runs a dense personalization")
        await backend.write(lists["personal"], teleport.personal)
    for start in range(0, wanted.size, width):
        check()
        chunk = wanted[start : start + width]
        lane_seeds = np.full(width, -1, np.int32)
        lane_seeds[: chunk.size] = chunk
        await backend.write(lists["seeds"], lane_seeds)
        first, more = scratch.iteration(backend, graph)
        words, device_ns = await run_prepared(first, more, STATE_DONE, scalars=scalars, check=check)
        iterations = int(words[STATE_ITERATIONS])
        odd = iterations % 2 == 1
        run.iterations += iterations
        run.passes += 1
        run.device_ns += device_ns
        part = rows[start : start + chunk.size]
        if width == 1 and not top_k:
            final = lists["rank_b"] if odd else lists["rank_a"]
            if out is not None:
                return await backend.read(final, out=out)
            await backend.read(final, out=part[0])
            continue
        check()
        results, finish_ns = await scratch.finish(backend, odd, chunk.size).run(0)
        run.device_ns += finish_ns
        if top_k:
            taken, vertices, ranks = results
            if not np.all(taken == top_k):
                raise DispatchError(
                    f"a top-{top_k} select collected {taken.tolist()} vertices per seed",
                    fix="report this bug with the graph's vertex and edge counts.",
                )
            part[:] = pack_top(vertices.reshape(-1, top_k), ranks.reshape(-1, top_k))
        else:
            part[:] = results[0].reshape(chunk.size, num_vertices)
    return rows
