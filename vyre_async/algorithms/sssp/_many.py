"""Running shortest paths from many sources: as lanes, or one source at a time.

Lanes: sources are cut into traversals of W lanes (a power of two up to 32, chosen by
a device-memory budget, :func:`lanes_for_budget`); each runs ``sssp_many_init`` and
``sssp_many_seed`` once, then ``sssp_many_step`` repeated, with only the state words
read back between submissions, and finally one kernel that makes what the caller
asked for: per-lane reach counts, or the distances one row per lane.

Lanes pay where a run is many small steps whose fixed cost the lanes share, as on a
road-like grid; they do not where hubs dominate, since each lane relaxes every edge
in every step where one source at a time walks a light graph (``bench/sssp.py``
measures both, on a grid and on R-MAT graphs). ``plan_many`` picks lanes when the
degrees are even (see ``_plan``), else one source at a time;
:func:`shortest_paths_many` runs either, by the scratch it is given.
Rows come back in source order.

A :class:`ManySsspScratch` holds one traversal shape's buffers (its
:attr:`~ManySsspScratch.shape`) and the batches prepared over them, so traversal after
traversal allocates and binds nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Literal

import numpy as np

from ...backends import Backend, PreparedSequence, ReadRange, ResidentBuffer, SequenceStep
from ...errors import DispatchError, ValidationError
from .._repeat import prepare_batches, run_prepared
from ._buffers import free_scratch_buffers
from ._graph import GRAPH_BUFFERS, GraphStats, check_width, graph_delta
from ._layout import STATE_HEAVY_ROUNDS, STATE_LIGHT_ROUNDS, STATE_REACHED
from ._many_kernels import (
    sssp_many_count,
    sssp_many_init,
    sssp_many_rows,
    sssp_many_seed,
    sssp_many_step,
)
from ._many_layout import (
    MANY_MAX_LANES,
    MANY_STATE_DONE,
    MANY_STATE_OVERFLOW,
    MANY_STATE_RELAX_ROUNDS,
    MANY_STATE_SPLIT_ROUNDS,
    MANY_STATE_WORDS,
    item_capacity,
)
from ._run import SsspScratch, check_bound, shortest_paths

#: What a many-source traversal reads back: distances (a row per source) or counts.
Readback = Literal["distances", "counts"]

#: What a scratch fits: ``("sssp_many", vertices, edges, lanes, readback)``.
ManyShape = tuple[str, int, int, int, Readback]

#: Delta for many sources, as a factor of :func:`choose_delta`'s. Lanes relax every
#: edge in every step (there is no light graph per lane), which narrower buckets
#: keep from repeating on graphs with hubs.
MANY_DELTA_SCALE = 0.5


def _sizes(num_vertices: int, num_edges: int, lanes: int) -> dict[str, int]:
    return {
        "vw": num_vertices * lanes,
        "v": num_vertices,
        "c": item_capacity(num_vertices, num_edges),
        "w": lanes,
        "s": MANY_STATE_WORDS,
        "k": MANY_MAX_LANES,
    }


def _lists(readback: Readback) -> tuple[tuple[str, type[np.generic], str], ...]:
    out = ("rows", np.float32, "vw") if readback == "distances" else ("counts", np.int32, "k")
    return (
        ("dist", np.float32, "vw"),
        ("masks_a", np.uint64, "v"),
        ("masks_b", np.uint64, "v"),
        ("far", np.uint32, "v"),
        ("items_a", np.int64, "c"),
        ("items_b", np.int64, "c"),
        ("sources", np.int32, "w"),
        ("state", np.int32, "s"),
        out,
    )


def many_scratch_nbytes(
    num_vertices: int, num_edges: int, lanes: int, readback: Readback = "distances"
) -> int:
    """Device bytes of a many-source scratch: about ``(4 or 8) W V + 36 V + E / 2``."""
    sizes = _sizes(num_vertices, num_edges, lanes)
    return sum(max(sizes[s], 1) * np.dtype(t).itemsize for _, t, s in _lists(readback))


def lanes_for_budget(
    num_vertices: int,
    num_edges: int,
    count: int,
    budget_bytes: int,
    readback: Readback = "distances",
) -> int:
    """The widest traversal (lanes) for ``count`` sources whose scratch fits the budget.

    Args:
        num_vertices: Vertices of the graph.
        num_edges: Edges of the graph.
        count: Sources to run (lanes beyond it would be idle).
        budget_bytes: Device bytes one scratch may take.
        readback: What comes back (distances need a second ``W * V`` buffer).

    Returns:
        A power of two in ``[1, 32]``, at most ``count`` rounded up to one.

    Raises:
        ValidationError: Not even one lane fits the budget.
    """
    lanes = 1
    while lanes < min(count, MANY_MAX_LANES):
        lanes *= 2
    while (
        lanes > 1 and many_scratch_nbytes(num_vertices, num_edges, lanes, readback) > budget_bytes
    ):
        lanes //= 2
    needed = many_scratch_nbytes(num_vertices, num_edges, lanes, readback)
    if needed > budget_bytes:
        raise ValidationError(
            f"one shortest-path lane over {num_vertices} vertices and {num_edges} edges "
            f"needs {needed} bytes of scratch, over the budget of {budget_bytes} bytes",
            fix="raise the memory budget, use a smaller graph, or ask for readback='counts'.",
        )
    return lanes


class ManySsspScratch:
    """A many-source traversal's device buffers, and the batches bound over them.

    Each traversal overwrites what it reads (the init and seed kernels set every
    distance, mask and far lane, and the state), so a scratch serves one traversal at
    a time, any number of times, until its buffers are freed (:attr:`buffers`).

    Attributes:
        shape: ``("sssp_many", vertices, edges, lanes, readback)``; pools key on it.
        buffers: Every buffer it holds.
        nbytes: Their bytes.
        lanes: Sources one traversal carries.
    """

    __slots__ = ("_batches", "_stats", "buffers", "lanes", "lists", "nbytes", "shape")

    def __init__(self, shape: ManyShape, lists: dict[str, ResidentBuffer]) -> None:
        self.shape = shape
        self.lanes = shape[3]
        self.lists = lists
        self.buffers = list(lists.values())
        self.nbytes = sum(b.nbytes for b in self.buffers)
        self._batches: tuple[Hashable, PreparedSequence, PreparedSequence, PreparedSequence] | None
        self._batches = None
        self._stats: dict[Hashable, GraphStats] = {}


async def allocate_many_scratch(
    backend: Backend,
    num_vertices: int,
    num_edges: int,
    lanes: int,
    readback: Readback = "distances",
) -> ManySsspScratch:
    """Allocate a many-source scratch of ``lanes`` lanes (a power of two up to 32).

    Raises:
        ValueError: ``lanes`` is not a power of two in ``[1, 32]``, or ``readback`` is
            neither ``"distances"`` nor ``"counts"``.
        OutOfMemoryError: The buffers do not fit (none is left allocated).
    """
    if not 1 <= lanes <= MANY_MAX_LANES or lanes & (lanes - 1):
        raise ValueError(f"lanes must be a power of two in [1, {MANY_MAX_LANES}], got {lanes!r}")
    if readback not in ("distances", "counts"):
        raise ValueError(f"readback must be 'distances' or 'counts', got {readback!r}")
    sizes = _sizes(num_vertices, num_edges, lanes)
    lists: dict[str, ResidentBuffer] = {}
    try:
        for name, dtype, size in _lists(readback):
            lists[name] = await backend.alloc(max(sizes[size], 1) * np.dtype(dtype).itemsize, dtype)
    except BaseException:
        await free_scratch_buffers(backend, list(lists.values()))
        raise
    return ManySsspScratch(("sssp_many", num_vertices, num_edges, lanes, readback), lists)


def _batches(
    backend: Backend, graph: Mapping[str, ResidentBuffer], scratch: ManySsspScratch
) -> tuple[PreparedSequence, PreparedSequence, PreparedSequence]:
    """The traversal's batches and its final step, prepared once per graph."""
    key = tuple(graph[name].id for name in GRAPH_BUFFERS)
    if scratch._batches is not None and scratch._batches[0] == key:
        return scratch._batches[1], scratch._batches[2], scratch._batches[3]
    lists = scratch.lists
    core = {name: lists[name] for name in ("dist", "masks_a", "masks_b")}
    prefix = [
        SequenceStep(sssp_many_init, {**core, "far": lists["far"]}),
        SequenceStep(
            sssp_many_seed,
            {
                "offsets": graph["offsets"],
                "sources": lists["sources"],
                "dist": lists["dist"],
                "masks_a": lists["masks_a"],
                "items_a": lists["items_a"],
                "state": lists["state"],
            },
            {"delta": 1.0, "max_distance": 0.0},
        ),
    ]
    step = SequenceStep(
        sssp_many_step,
        {name: graph[name] for name in GRAPH_BUFFERS}
        | core
        | {name: lists[name] for name in ("far", "items_a", "items_b", "state")},
    )
    first, more = prepare_batches(backend, prefix, [step], lists["state"])
    base = {"offsets": graph["offsets"], "dist": lists["dist"]}
    if "rows" in lists:
        final = SequenceStep(sssp_many_rows, {**base, "rows": lists["rows"]})
        out = ReadRange(lists["rows"])
    else:
        final = SequenceStep(
            sssp_many_count, {**base, "counts": lists["counts"]}, {"max_distance": 0.0}
        )
        out = ReadRange(lists["counts"])
    finish = backend.prepare_repeated([final], [], reads=[out])
    scratch._batches = (key, first, more, finish)
    return first, more, finish


class ManyRun:
    """What :func:`shortest_paths_many` did: device time, steps and traversals."""

    __slots__ = ("device_ns", "steps", "traversals")

    def __init__(self) -> None:
        self.device_ns = 0
        self.steps = 0
        self.traversals = 0


async def shortest_paths_many(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    scratch: SsspScratch | ManySsspScratch,
    sources: Sequence[int] | np.ndarray,
    check: Callable[[], None] = lambda: None,
    *,
    readback: Readback = "distances",
    max_distance: float = math.inf,
    delta: float | None = None,
    run: ManyRun | None = None,
) -> np.ndarray:
    """Shortest distances, or reach counts, from every source.

    Args:
        backend: The backend holding the graph and the scratch.
        graph: The resident graph: ``offsets`` (int64, V + 1), ``indices`` (int32, E)
            and ``weights`` (float32, E).
        scratch: A :class:`ManySsspScratch` (``scratch.lanes`` sources per traversal;
            its readback must be ``readback``), or an ``SsspScratch`` (one source at a
            time); see :func:`plan_many`.
        sources: Source vertices, duplicates allowed; one outside ``[0, V)`` reaches
            nothing (its count is 0, its row all +inf).
        check: Called before each submission (a closed session raises there).
        readback: ``"distances"`` or ``"counts"``.
        max_distance: Distances above it stay +inf and are not counted (``inf``: none).
        delta: Bucket width; ``None`` measures the graph once (for lanes scaled by
            :data:`MANY_DELTA_SCALE`), cached on the scratch.
        run: Receives the device time, steps and traversals, if given.

    Returns:
        float32 ``(len(sources), V)`` distances (+inf: unreached), or int32
        ``(len(sources),)`` counts of the vertices within ``max_distance``, the source
        included; rows in source order.

    Raises:
        ValueError: ``max_distance`` is negative or NaN, ``delta`` is not > 0, or the
            scratch was made for the other readback.
        DispatchError: A list overflowed (a bug: the capacities are bounds).
    """
    if readback not in ("distances", "counts"):
        raise ValueError(f"readback must be 'distances' or 'counts', got {readback!r}")
    check_bound(max_distance)
    num_vertices = graph["offsets"].size - 1
    wanted = np.asarray(sources, dtype=np.int64).reshape(-1)
    out = (
        np.empty((wanted.size, num_vertices), dtype=np.float32)
        if readback == "distances"
        else np.empty(wanted.size, dtype=np.int32)
    )
    if wanted.size == 0 or num_vertices == 0:
        return out if num_vertices else np.zeros_like(out)
    run = run if run is not None else ManyRun()
    if isinstance(scratch, SsspScratch):
        await _one_at_a_time(backend, graph, scratch, wanted, out, check, max_distance, delta, run)
    else:
        if scratch.shape[4] != readback:
            raise ValueError(
                f"a scratch made for readback={scratch.shape[4]!r} cannot read back {readback!r}"
            )
        await _as_lanes(backend, graph, scratch, wanted, out, check, max_distance, delta, run)
    return out


async def _one_at_a_time(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    scratch: SsspScratch,
    sources: np.ndarray,
    out: np.ndarray,
    check: Callable[[], None],
    max_distance: float,
    delta: float | None,
    run: ManyRun,
) -> None:
    num_vertices = graph["offsets"].size - 1
    for i, source in enumerate(sources.tolist()):
        inside = 0 <= source < num_vertices
        words, device_ns = await shortest_paths(
            backend,
            graph,
            scratch,
            source if inside else -1,
            check,
            max_distance=max_distance,
            delta=delta,
        )
        if out.ndim == 1:
            out[i] = words[STATE_REACHED]
        else:
            await backend.read(scratch.dist, out=out[i])
        run.device_ns += device_ns
        run.steps += int(words[STATE_LIGHT_ROUNDS] + words[STATE_HEAVY_ROUNDS])
        run.traversals += 1


async def _as_lanes(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    scratch: ManySsspScratch,
    wanted: np.ndarray,
    out: np.ndarray,
    check: Callable[[], None],
    max_distance: float,
    delta: float | None,
    run: ManyRun,
) -> None:
    bound = check_bound(max_distance)
    if delta is None:
        delta = await graph_delta(backend, graph, scale=MANY_DELTA_SCALE, cache=scratch._stats)
    width = check_width(delta)
    lanes, readback = scratch.lanes, scratch.shape[4]
    num_vertices = graph["offsets"].size - 1
    first, more, finish = _batches(backend, graph, scratch)
    for start in range(0, wanted.size, lanes):
        check()
        chunk = wanted[start : start + lanes]
        lane_sources = np.full(lanes, -1, dtype=np.int32)
        inside = (chunk >= 0) & (chunk < num_vertices)
        lane_sources[: chunk.size] = np.where(inside, chunk, -1)
        await backend.write(scratch.lists["sources"], lane_sources)
        words, device_ns = await run_prepared(
            first,
            more,
            MANY_STATE_DONE,
            scalars={"delta": width, "max_distance": bound},
            check=check,
        )
        if words[MANY_STATE_OVERFLOW]:
            raise DispatchError(
                f"a {lanes}-lane shortest-path traversal overflowed its item list (state "
                f"word {MANY_STATE_OVERFLOW} = {int(words[MANY_STATE_OVERFLOW])})",
                fix="report this bug with the graph's vertex and edge counts.",
            )
        scalars = {"max_distance": bound} if readback == "counts" else None
        (result,), final_ns = await finish.run(0, scalars=scalars)
        if readback == "distances":
            out[start : start + chunk.size] = result.reshape(lanes, num_vertices)[: chunk.size]
        else:
            out[start : start + chunk.size] = result[: chunk.size]
        run.device_ns += device_ns + final_ns
        run.steps += int(words[MANY_STATE_RELAX_ROUNDS] + words[MANY_STATE_SPLIT_ROUNDS])
        run.traversals += 1
