"""Running single-source shortest paths on a resident graph, as repeated sequences.

A run is ``sssp_init`` once, then ``sssp_step`` repeated, submitted a few steps at a
time with only the state words read back between submissions (see
:mod:`.._repeat`). The distances stay in the scratch's ``dist`` buffer.

A :class:`SsspScratch` holds a run's buffers for graphs of one size (its
:attr:`~SsspScratch.shape`), and the batches prepared over them for the graph it last
ran on, so a caller that keeps scratches (a session's replica pools them by shape and
bytes) allocates and binds nothing per run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping

import numpy as np

from ...backends import Backend, PreparedSequence, ResidentBuffer, SequenceStep
from ...errors import DispatchError
from .._repeat import prepare_batches, run_prepared
from ._buffers import free_scratch_buffers
from ._graph import (
    GRAPH_BUFFERS,
    LIGHT_BUFFERS,
    GraphStats,
    LightGraph,
    build_light_graph,
    check_width,
    graph_delta,
    graph_key,
)
from ._kernels import sssp_init, sssp_step
from ._layout import SSSP_STATE_WORDS, SSSP_UNBOUNDED, STATE_DONE, STATE_OVERFLOW, chunk_capacity

#: What a scratch fits: ``("sssp", vertices, edges)``.
ScratchShape = tuple[str, int, int]

_LISTS: tuple[tuple[str, type[np.generic], str], ...] = (
    ("dist", np.float32, "v"),
    ("stamp", np.int32, "v"),
    ("far", np.uint32, "fw"),
    ("queue_a", np.int32, "v"),
    ("queue_b", np.int32, "v"),
    ("chunks_a", np.int64, "c"),
    ("chunks_b", np.int64, "c"),
    ("members", np.int32, "v"),
    ("heavy", np.int64, "c"),
    ("state", np.int32, "s"),
)


def _counts(num_vertices: int, num_edges: int) -> dict[str, int]:
    return {
        "v": num_vertices,
        "fw": -(-num_vertices // 4),
        "c": chunk_capacity(num_edges),
        "s": SSSP_STATE_WORDS,
    }


def scratch_nbytes(num_vertices: int, num_edges: int) -> int:
    """Device bytes of a scratch for a graph of this size (about ``25 V + 0.84 E``)."""
    counts = _counts(num_vertices, num_edges)
    return sum(max(counts[size], 1) * np.dtype(dtype).itemsize for _, dtype, size in _LISTS)


class SsspScratch:
    """A run's device buffers for graphs of one size, and the batches bound over them.

    Each run overwrites what it reads (``sssp_init`` sets every distance, stamp and
    far flag and the state), so a scratch serves one run at a time, any number of
    times, until its buffers are freed (:attr:`buffers`, by whoever made it).

    A graph given without a light graph gets one built into the scratch on its first
    run (:func:`~._graph.build_light_graph`), kept for the next run of the same graph
    and delta: :attr:`buffers` and :attr:`nbytes` then include it.

    Attributes:
        shape: ``("sssp", vertices, edges)``: what it fits; pools key on it.
        buffers: Every buffer it holds.
        nbytes: Their bytes.
        dist: float32 distances of the last run (+inf: unreached).
        state: The state words of the last run (``STATE_*``).
    """

    __slots__ = (
        "_batches",
        "_light",
        "_stats",
        "buffers",
        "dist",
        "lists",
        "nbytes",
        "shape",
        "state",
    )

    def __init__(self, shape: ScratchShape, lists: dict[str, ResidentBuffer]) -> None:
        self.shape = shape
        self.lists = lists
        self.buffers = list(lists.values())
        self.nbytes = sum(b.nbytes for b in self.buffers)
        self.dist = lists["dist"]
        self.state = lists["state"]
        self._batches: tuple[Hashable, PreparedSequence, PreparedSequence] | None = None
        self._stats: dict[Hashable, GraphStats] = {}
        self._light: tuple[Hashable, LightGraph] | None = None

    def _keep_light(self, key: Hashable, light: LightGraph | None) -> None:
        self._light = None if light is None else (key, light)
        kept = list(light.buffers.values()) if light is not None and light.owned else []
        self.buffers = [*self.lists.values(), *kept]
        self.nbytes = sum(b.nbytes for b in self.buffers)


async def allocate_scratch(backend: Backend, num_vertices: int, num_edges: int) -> SsspScratch:
    """Allocate a scratch for graphs of ``num_vertices`` vertices and ``num_edges`` edges.

    Raises:
        OutOfMemoryError: The buffers do not fit (none is left allocated).
    """
    counts = _counts(num_vertices, num_edges)
    lists: dict[str, ResidentBuffer] = {}
    try:
        for name, dtype, size in _LISTS:
            nbytes = max(counts[size], 1) * np.dtype(dtype).itemsize
            lists[name] = await backend.alloc(nbytes, dtype)
    except BaseException:
        await free_scratch_buffers(backend, list(lists.values()))
        raise
    return SsspScratch(("sssp", num_vertices, num_edges), lists)


def _batches(
    backend: Backend, graph: Mapping[str, ResidentBuffer], scratch: SsspScratch
) -> tuple[PreparedSequence, PreparedSequence]:
    """The scratch's batches over ``graph`` (with its light graph), prepared once."""
    key = tuple(graph[name].id for name in (*GRAPH_BUFFERS, *LIGHT_BUFFERS))
    if scratch._batches is not None and scratch._batches[0] == key:
        return scratch._batches[1], scratch._batches[2]
    lists = scratch.lists
    init = SequenceStep(
        sssp_init,
        {
            "offsets": graph["offsets"],
            "light_offsets": graph["light_offsets"],
            **{
                name: lists[name]
                for name in ("dist", "stamp", "far", "queue_a", "chunks_a", "members", "heavy")
            },
            "state": lists["state"],
        },
        {"source": 0, "delta": 1.0, "max_distance": SSSP_UNBOUNDED, "heavy_edges": 1},
    )
    step = SequenceStep(
        sssp_step,
        {name: graph[name] for name in (*GRAPH_BUFFERS, *LIGHT_BUFFERS)} | dict(lists),
    )
    first, more = prepare_batches(backend, [init], [step], lists["state"])
    scratch._batches = (key, first, more)
    return first, more


async def _with_light_graph(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    scratch: SsspScratch,
    delta: float,
) -> tuple[Mapping[str, ResidentBuffer], bool]:
    """``graph`` with its light graph (its own, or one the scratch builds and keeps),
    and whether some edge is heavy."""
    if all(name in graph for name in LIGHT_BUFFERS):
        return graph, True
    key = (graph_key(graph), delta)
    if scratch._light is None or scratch._light[0] != key:
        old = scratch.buffers[len(scratch.lists) :]
        scratch._keep_light(None, None)
        await free_scratch_buffers(backend, old)
        scratch._keep_light(key, await build_light_graph(backend, graph, delta))
    assert scratch._light is not None
    light = scratch._light[1]
    return {**graph, **light.buffers}, light.heavy_edges


def check_bound(max_distance: float) -> float:
    """``max_distance`` as the kernels take it (``inf`` becomes ``SSSP_UNBOUNDED``).

    Raises:
        ValueError: It is negative or NaN.
    """
    if math.isnan(max_distance) or max_distance < 0:
        raise ValueError(f"max_distance must be >= 0 (or inf), got {max_distance!r}")
    return min(float(max_distance), SSSP_UNBOUNDED)


async def shortest_paths(
    backend: Backend,
    graph: Mapping[str, ResidentBuffer],
    scratch: SsspScratch,
    source: int,
    check: Callable[[], None] = lambda: None,
    *,
    max_distance: float = math.inf,
    delta: float | None = None,
) -> tuple[np.ndarray, int]:
    """Shortest distances from ``source`` into ``scratch.dist``.

    Args:
        backend: The backend holding the graph and the scratch.
        graph: The resident graph: ``offsets`` (int64, V + 1), ``indices`` (int32, E)
            and ``weights`` (float32, E, non-negative, aligned with ``indices``); with
            ``light_offsets``, ``light_indices``, ``light_weights`` for ``delta``
            (:func:`~._graph.build_light_graph`) if the caller keeps one, else the
            scratch builds one on the first run and keeps it.
        scratch: Buffers for a graph of this size (:func:`allocate_scratch`); its
            batches are prepared here on first use with this graph.
        source: The source vertex (checked by the caller; one outside ``[0, V)``
            reaches nothing).
        check: Called before each submission (a closed session raises there).
        max_distance: Distances above this stay +inf (``inf``: no bound).
        delta: Bucket width; ``None`` measures the graph once
            (:func:`~._graph.graph_delta`, cached on the scratch). A light graph in
            ``graph`` must have been built for this delta.

    Returns:
        The final state words (``STATE_REACHED`` counts the vertices within
        ``max_distance``) and the device time of the run in nanoseconds.

    Raises:
        ValueError: ``max_distance`` is negative or NaN, or ``delta`` is not > 0.
        DispatchError: A list overflowed (a bug: the capacities are upper bounds).
    """
    check()
    bound = check_bound(max_distance)
    if graph["offsets"].size <= 1:
        # No vertices: nothing to launch (and no source to reach).
        words = np.zeros(SSSP_STATE_WORDS, dtype=np.int32)
        words[STATE_DONE] = 1
        return words, 0
    if delta is None:
        delta = await graph_delta(backend, graph, cache=scratch._stats)
    width = check_width(delta)
    full, heavy_edges = await _with_light_graph(backend, graph, scratch, width)
    first, more = _batches(backend, full, scratch)
    words, device_ns = await run_prepared(
        first,
        more,
        STATE_DONE,
        scalars={
            "source": int(source),
            "delta": width,
            "max_distance": bound,
            "heavy_edges": int(heavy_edges),
        },
        check=check,
    )
    if words[STATE_OVERFLOW]:
        raise DispatchError(
            f"a shortest-path run from {source} overflowed its lists (state word "
            f"{STATE_OVERFLOW} = {int(words[STATE_OVERFLOW])})",
            fix="report this bug with the graph's vertex and edge counts.",
        )
    return words, device_ns
