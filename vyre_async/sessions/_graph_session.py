"""Resident-graph sessions: upload a graph once, run many queries over it.

The graph's CSR arrays (and, for a directed graph, its transpose, which bottom-up
BFS and pull PageRank read) go to each device in one ``upload_group``: one
allocation, one transfer. Each query then runs as resident repeated sequences of
its kind (:mod:`vyre_async.algorithms`) on one replica of the graph.

A session over a device group keeps one replica per device: each query (and, with
batching, each batch) runs on the replica with the least work running, so batches
spread over devices by queue depth; a replica whose device is lost is taken out and
its work runs again on the others. Where a copy does not fit every device's budget,
the graph is split in vertex ranges over the devices instead (:mod:`._partition`)
and each query runs on all of them through its kind's ``run_partitioned``.

The session knows no kind: :meth:`ResidentGraphSession.query` and
:meth:`~ResidentGraphSession.query_many` run any registered kind, and the typed
methods (``bfs``, ``khop``, ``reach_count``, ``path``, ``pagerank``, ``bfs_many``,
``sssp``, ``sssp_many``, ``components``, ``component_sizes``, ``ppr``, ``ppr_many``) are
thin calls into their kinds' units.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Self, overload

import anyio
import numpy as np

from .._lifecycle import AsyncLifecycle, BackgroundTasks, LifecycleState
from ..algorithms import DEFAULT_QUERY_BUDGET, Params, QueryKind, lookup
from ..algorithms.bfs import BFS, KHOP, REACH, BfsParams, KhopParams, ReachParams, Readback
from ..algorithms.bfs_path import BFS_PATH, BfsPathParams
from ..algorithms.components import (
    COMPONENTS,
    ComponentSizes,
    ComponentsParams,
    component_sizes,
)
from ..algorithms.pagerank import PAGERANK, PagerankParams
from ..algorithms.ppr import (
    PPR,
    PprParams,
    TopRanks,
    personalized_query,
    require_seeds,
    top_ranks,
)
from ..algorithms.sssp import SSSP, SsspParams
from ..backends import Backend, DeviceGroup, Placement, check_out, is_foreign
from ..batching import DynamicBatcher
from ..errors import UnsupportedFeatureError, ValidationError
from ..graphs import CsrGraph
from ._batched import BatchedQueries, BatchingConfig, to_device_array
from ._partition import GraphPartition, place_graph
from ._query_block import QueryBlock
from ._replica import SessionHooks
from ._replicas import ReplicaSet
from ._stats import RunCounters, SessionStats

__all__ = ["DEFAULT_QUERY_BUDGET", "BatchingConfig", "ResidentGraphSession"]

#: The parameters of the typed traversal methods that take none: valid on any graph.
_BFS_LEVELS = BfsParams(readback="levels")
_BFS_PARENTS = BfsParams(readback="parents")
_REACH = ReachParams()
_COMPONENTS = ComponentsParams()


class ResidentGraphSession(BatchedQueries, AsyncLifecycle):
    """A graph resident on one device or a group's, analysed again and again without re-uploading.

    Made by :func:`vyre_async.resident_graph` (an async context manager); every method
    raises :class:`~vyre_async.errors.LifecycleError` outside it.

    With ``batching``, concurrent single queries of a kind that runs many at once
    (``bfs`` / ``khop`` / ``reach_count``) queue into a :class:`DynamicBatcher` and
    run together as multi-source traversals; a lone call still runs the
    single-source, direction-optimizing traversal.

    Args:
        backend: An open backend, an open device group (one replica of the graph on
            each of its backends), or a sequence of open backends.
        graph: The graph; it is not copied on the host, only uploaded.
        batching: Coalesce concurrent queries (``None``: every call runs alone).
    """

    _noun = "resident-graph session"
    _make_fix = "open a new one with vyre_async.resident_graph(backend, graph)."
    _use_fix = "use it inside `async with vyre_async.resident_graph(backend, graph) as session:`."

    def __init__(
        self,
        backend: Backend | DeviceGroup | Sequence[Backend],
        graph: CsrGraph,
        *,
        batching: BatchingConfig | None = None,
    ) -> None:
        if not isinstance(graph, CsrGraph):
            raise TypeError(f"resident_graph takes a CsrGraph, got {type(graph).__name__}")
        self._group = backend if isinstance(backend, DeviceGroup) else None
        if isinstance(backend, DeviceGroup):
            backends = list(backend.backends)
        elif isinstance(backend, Sequence):
            backends = list(backend)
        else:
            backends = [backend]
        self._graph = graph
        self._counters = RunCounters()
        hooks = SessionHooks(self._counters, self._check_open, self._is_open)
        self._replicas = ReplicaSet(backends, graph, hooks)
        self._placement: Placement | None = None
        self._partition: GraphPartition | None = None
        self._batching = batching
        self._batcher: DynamicBatcher[QueryBlock, Any] | None = None
        self._background = BackgroundTasks(self._noun)

    # ----------------------------------------------------------------- lifecycle
    @property
    def graph(self) -> CsrGraph:
        """The graph this session holds."""
        return self._graph

    async def __aenter__(self) -> Self:
        self._enter_open()
        try:
            group = self._group
            if group is not None and (
                len(group) > 1 or any(limit is not None for limit in group.memory_limits)
            ):
                self._placement = await place_graph(group, self._graph)
            if self._placement is not None and self._placement.mode == "partition":
                self._partition = GraphPartition(
                    self._group.backends if self._group is not None else (),
                    self._graph,
                    self._counters,
                    self._check_open,
                    self._is_open,
                )
                await self._partition.upload()
            else:
                await self._replicas.upload()
            if self._batching is not None and self._partition is None:
                await self._start_batcher(self._batching)
        except BaseException:
            try:
                await self.aclose()
            finally:
                await self._leave()
            raise
        return self

    async def aclose(self) -> None:
        """Free the graph and every scratch buffer. Idempotent; runs even when cancelled.

        Any task may close the session: queued queries still run first. Its
        ``async with`` block is still left in the task that entered it.
        """
        if self._state is LifecycleState.CLOSED:
            return
        if self._batcher is not None:
            # Queued queries still run (the session is open for them), then the
            # batcher's task ends.
            batcher, self._batcher = self._batcher, None
            try:
                with anyio.CancelScope(shield=True):
                    await batcher.aclose()
            finally:
                await self._background.stop()
        self._enter_closed()
        if self._partition is not None:
            await self._partition.free_all()
        await self._replicas.free_all()

    async def _leave(self) -> None:
        await self._background.leave()

    def _check_open(self) -> None:
        self._require_open()

    def _is_open(self) -> bool:
        return self._state is LifecycleState.OPEN

    @property
    def batching(self) -> BatchingConfig | None:
        """How concurrent queries are coalesced (``None``: each call runs alone)."""
        return self._batching

    # ----------------------------------------------------------------- replicas
    @property
    def devices(self) -> int:
        """Replicas still in service (devices not lost); a split graph's devices."""
        return self._replicas.live

    @property
    def placement(self) -> Placement | None:
        """How the graph was laid on a device group, and why (``None``: one device
        without a ``memory_limit``, or not yet open)."""
        return self._placement

    @property
    def device_graph_bytes(self) -> tuple[int, ...]:
        """Device bytes of the graph on each device: a whole copy each where it is
        replicated, each device's part where it is split."""
        if self._partition is not None:
            return self._partition.graph_bytes
        return tuple(r.graph_bytes for r in self._replicas)

    # ------------------------------------------------------------- any kind
    async def query(
        self,
        kind: str | QueryKind[Any],
        source: int | None = None,
        params: Params | None = None,
        *,
        out: Any = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> Any:
        """One query of any registered kind (see :func:`vyre_async.algorithms.kind_names`).

        The typed methods (:meth:`bfs`, :meth:`pagerank`, ...) are this with their
        kind and parameters; tools that take the kind by name (jobs, a server) call it.

        Args:
            kind: The kind, or its name.
            source: The source vertex; ``None`` for a kind without sources.
            params: The kind's parameters (``None``: its defaults).
            out: Where the answer goes, for kinds that write one into an array.
            priority: With batching, higher priorities join batches first.
            queue_timeout: With batching, seconds the query may wait in the queue.

        Raises:
            ValidationError: An unknown kind, a source out of range (or one given to a
                kind without sources, or missing), or parameters that cannot run.
        """
        unit = self._kind(kind)
        checked = self._params(unit, params)
        if unit.takes_sources:
            if source is None:
                raise ValidationError(
                    f"a {unit.name!r} query needs a source vertex", fix="pass source=..."
                )
            source = self._checked(source)
        elif source is not None:
            raise ValidationError(
                f"a {unit.name!r} query takes no source, got {source!r}",
                fix="leave source out (None).",
            )
        else:
            self._check_open()
        return await self._one(unit, checked, source, out, priority, queue_timeout)

    async def _one(
        self,
        unit: QueryKind[Any],
        params: Params,
        source: int | None,
        out: Any,
        priority: int,
        queue_timeout: float | None,
    ) -> Any:
        """One query whose source and parameters are checked: through the batcher where
        the kind coalesces, else on the least busy replica (or the split graph)."""
        if self._partition is not None:
            return await _one_partitioned(self._partition, unit, params, source, out)
        if self._batcher is not None and unit.lanes > 1 and source is not None:
            answer = await self._submit_one(unit, params, source, priority, queue_timeout)
            if out is None:
                return answer
            if is_foreign(out):  # a device array: batches are unpacked on the host
                return await self._replicas.run(lambda r: to_device_array(r.backend, answer, out))
            np.copyto(out.reshape(-1), answer)
            return out
        return await self._replicas.run(lambda r: unit.run_one(r, params, source, out))

    async def query_many(
        self,
        kind: str | QueryKind[Any],
        sources: Sequence[int] | np.ndarray,
        params: Params | None = None,
        *,
        budget_bytes: int | None = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> np.ndarray:
        """Many queries of one kind and parameters at once: one row per source, in order.

        With batching, the queries go through the session's batcher in blocks of up
        to ``max_batch``, sharing runs with concurrent calls; without it they run as
        passes planned for this call alone.

        Args:
            kind: The kind (one with sources), or its name.
            sources: One source per query (duplicates allowed).
            params: The kind's parameters (``None``: its defaults).
            budget_bytes: Device bytes the graph plus one pass may use (default: the
                graph plus :data:`DEFAULT_QUERY_BUDGET`). Without batching only.
            priority: With batching, as for :meth:`query`.
            queue_timeout: With batching, as for :meth:`query` (per block).

        Raises:
            ValidationError: An unknown kind or one without sources, a source out of
                range, or parameters that cannot run.
        """
        self._check_open()
        unit = self._kind(kind)
        if not unit.takes_sources:
            raise ValidationError(
                f"a {unit.name!r} query takes no sources", fix=f"run it with query({unit.name!r})."
            )
        checked = self._params(unit, params)
        array = self._source_array(sources)
        if not len(array):
            return unit.no_rows(checked, self._graph.num_vertices)
        if self._partition is not None:
            # budget_bytes counts the graph; a split run's budget is besides its part.
            if budget_bytes is not None:
                budget_bytes = max(1, budget_bytes - max(self._partition.graph_bytes))
            rows: np.ndarray = await unit.run_partitioned(
                self._partition, checked, array, budget_bytes
            )
            return rows
        if self._batcher is not None and unit.lanes > 1:
            return await self._submit_many(unit, checked, array, priority, queue_timeout)
        return await self._replicas.run(lambda r: unit.run_many(r, checked, array, budget_bytes))

    def _kind(self, kind: str | QueryKind[Any]) -> QueryKind[Any]:
        return lookup(kind) if isinstance(kind, str) else kind

    def _params(self, unit: QueryKind[Any], params: Params | None) -> Params:
        """``params`` (or the kind's defaults) checked against the kind and the graph."""
        if params is None:
            try:
                params = unit.params()
            except TypeError as exc:
                raise ValidationError(
                    f"a {unit.name!r} query has parameters without defaults ({exc})",
                    fix=f"pass params={unit.params.__name__}(...).",
                ) from None
        elif not isinstance(params, unit.params):
            raise ValidationError(
                f"a {unit.name!r} query takes {unit.params.__name__}, got {type(params).__name__}",
                fix=f"pass params={unit.params.__name__}(...).",
            )
        unit.check_params(params, self._graph.num_vertices)
        problem = unit.graph_problem(params, weighted=self._graph.weights is not None)
        if problem is not None:
            raise ValidationError(problem, fix=unit.graph_fix)
        return params

    # ---------------------------------------------------------- typed methods
    @overload
    async def bfs(
        self,
        source: int,
        *,
        parents: Literal[False] = False,
        out: np.ndarray | None = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> np.ndarray: ...

    @overload
    async def bfs(
        self,
        source: int,
        *,
        parents: Literal[True],
        out: None = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray]: ...

    async def bfs(
        self,
        source: int,
        *,
        parents: bool = False,
        out: np.ndarray | None = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """BFS levels from ``source``: int32, 0 at the source, -1 where unreachable.

        Direction-optimizing: levels switch to bottom-up when the frontier is large.
        With batching, concurrent calls share multi-source traversals.

        With ``parents=True`` it returns ``(levels, parents)``: ``parents[v]`` is an
        in-neighbour of ``v`` one level closer to the source (the first in ``v``'s
        in-list, in the graph's order), -1 for the source and where unreachable, so
        following parents from ``v`` walks a shortest path back to the source. They
        are pulled from the in-edges on the device after the traversal, and come back
        with the levels.

        Args:
            source: Source vertex.
            parents: Also return each vertex's BFS parent (then ``out`` is not taken).
            out: Write the levels into this int32 array of ``num_vertices`` elements
                and return it. A page-locked one (``cupyx.empty_pinned``) on the CUDA
                backend takes them straight from the device, skipping the staging and
                host copies that are most of a large graph's readback; reusing one
                array also skips a fresh array's page faults. On the CUDA backend it
                may be a device array (CuPy, PyTorch, JAX): the levels are copied
                device to device, never through the host. With batching the levels
                are copied into it (from the host, where batches are unpacked).
            priority: With batching, higher priorities join batches first (FIFO
                within a priority); ignored without batching.
            queue_timeout: With batching, seconds the query may wait in the queue
                before it is rejected with DispatchError; ignored without batching.

        Raises:
            ValidationError: ``source`` is out of range, ``out`` does not fit, or
                ``out`` was given with ``parents=True``.
        """
        self._check_source(source)
        if parents:
            if out is not None:
                raise ValidationError(
                    "bfs(parents=True) returns two new arrays and takes no out=",
                    fix="leave out= out, or call bfs(source, out=...) for the levels alone.",
                )
            tree: tuple[np.ndarray, np.ndarray] = await self._one(
                BFS, _BFS_PARENTS, int(source), None, priority, queue_timeout
            )
            return tree
        if out is not None:
            check_out(out, np.dtype(np.int32), self._graph.num_vertices)
        levels: np.ndarray = await self._one(
            BFS, _BFS_LEVELS, int(source), out, priority, queue_timeout
        )
        return levels

    @overload
    async def khop(
        self,
        source: int,
        k: int,
        *,
        out: None = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> np.ndarray: ...

    @overload
    async def khop(
        self,
        source: int,
        k: int,
        *,
        out: Any,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> int: ...

    async def khop(
        self,
        source: int,
        k: int,
        *,
        out: Any = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> np.ndarray | int:
        """Vertices within ``k`` hops of ``source`` (the source included), sorted int32.

        A query that runs alone (without batching, or with ``out``) compacts the set
        from the traversal's levels on the device, so only the set comes back, not a
        level per vertex. With ``out`` it is written into that array and only its
        length comes back: into a device array (a ``ResidentBuffer``; on the CUDA
        backend a CuPy, PyTorch or JAX array) nothing else leaves the device, which is
        what a GPU pipeline that carries on from the set (PyTorch Geometric's, say)
        wants. ``out`` must be int32, C-contiguous and hold at least ``num_vertices``
        elements; the first ``length`` are written, the rest left alone. A query with
        ``out`` runs alone, never through the batcher.

        ``priority`` and ``queue_timeout`` apply with batching (without ``out``), as
        for :meth:`bfs`.

        Returns:
            The vertices as a new array; with ``out``, how many were written.

        Raises:
            ValidationError: ``source`` is out of range, ``k`` is not an int >= 0, or
                ``out`` does not fit (nothing has run).
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValidationError(f"k must be a non-negative int, got {k!r}", fix="pass k >= 0.")
        self._check_source(source)
        params = KhopParams(k=k, readback="levels")
        if out is not None and self._partition is not None:
            _host_out(KHOP, out)
            if out.dtype != np.int32 or out.size < self._graph.num_vertices:
                raise ValidationError(
                    f"out is a {out.dtype} array of {out.size} element(s); this needs int32 "
                    f"and at least {self._graph.num_vertices}",
                    fix=f"pass np.empty({self._graph.num_vertices}, np.int32).",
                )
            found: np.ndarray = await self._one(KHOP, params, int(source), None, 0, None)
            out.reshape(-1)[: len(found)] = found
            return len(found)
        if out is not None:
            length: int = await self._replicas.run(
                lambda r: KHOP.run_one(r, params, int(source), out)
            )
            return length
        vertices: np.ndarray = await self._one(
            KHOP, params, int(source), None, priority, queue_timeout
        )
        return vertices

    async def reach_count(
        self, source: int, *, priority: int = 0, queue_timeout: float | None = None
    ) -> int:
        """How many vertices ``source`` reaches (itself included); reads back 32 bytes.

        ``priority`` and ``queue_timeout`` apply with batching, as for :meth:`bfs`.
        """
        self._check_source(source)
        count: int = await self._one(REACH, _REACH, int(source), None, priority, queue_timeout)
        return count

    async def path(self, source: int, target: int) -> np.ndarray:
        """One shortest path (fewest edges) from ``source`` to ``target``.

        A BFS from ``source`` that stops once ``target`` has a level, then a walk back
        from ``target`` on the device, each step to the first in-neighbour (in the
        graph's order) one level closer: the path :meth:`bfs`'s parents give. Only the
        path comes back. Path queries are not batched; each runs alone.

        Returns:
            int32 vertex ids from ``source`` to ``target`` (its length minus one is
            ``target``'s BFS level); ``[source]`` when they are the same vertex; empty
            when ``target`` is unreachable.

        Raises:
            ValidationError: ``source`` or ``target`` is out of range.
        """
        self._check_source(source)
        params = self._params(BFS_PATH, BfsPathParams(target=target))
        path: np.ndarray = await self._one(BFS_PATH, params, int(source), None, 0, None)
        return path

    async def pagerank(
        self,
        damping: float = 0.85,
        tol: float = 1e-6,
        max_iter: int = 100,
        *,
        out: np.ndarray | None = None,
        personalization: Any = None,
    ) -> np.ndarray:
        """PageRank by pull iteration in float32; dangling mass spread uniformly.

        The first call on each device uploads the order the shares are stored in
        (hubs first, 4 bytes per vertex) and keeps a copy of the in-lists renumbered
        to it (4 bytes per edge) until the session closes; where that copy does not
        fit, PageRank runs in the graph's own order and logs a warning.

        With ``personalization``, the walk teleports (and leaves vertices without
        out-edges) to that distribution instead of uniformly, as NetworkX's
        ``pagerank(personalization=...)`` does with ``dangling=None``; it runs as a
        ``ppr`` query (see :meth:`ppr`).

        Args:
            damping: Probability of following an edge, in (0, 1).
            tol: Stop once the L1 change of one iteration is below ``tol``.
            max_iter: Stop after this many iterations at the latest.
            out: Write the ranks into this float32 array of ``num_vertices`` elements
                and return it (page-locked: straight from the device; a device array
                on the CUDA backend: device to device, as for :meth:`bfs`).
            personalization: A vertex, a list of vertices (uniform over the distinct
                ones), or a float weight vector of ``num_vertices`` non-negative
                weights with positive mass (normalized); ``None``: uniform.

        Returns:
            float32 ranks summing to 1.

        Raises:
            ValidationError: A parameter is out of range, ``out`` does not fit, or the
                personalization is empty, out of range, of the wrong length, negative
                or of zero mass.
        """
        self._check_open()
        if out is not None:
            check_out(out, np.dtype(np.float32), self._graph.num_vertices)
        if personalization is not None:
            query, seed = personalized_query(
                personalization,
                self._graph.num_vertices,
                damping=damping,
                tol=tol,
                max_iter=max_iter,
            )
            personal: np.ndarray = await self._one(
                PPR, self._params(PPR, query), seed, out, 0, None
            )
            return personal
        params = PagerankParams(damping=damping, tol=tol, max_iter=max_iter)
        ranks: np.ndarray = await self.query(PAGERANK, None, params, out=out)
        return ranks

    async def bfs_many(
        self,
        sources: Sequence[int] | np.ndarray,
        *,
        k: int | None = None,
        readback: Readback = "levels",
        targets: Sequence[int] = (),
        budget_bytes: int | None = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> np.ndarray:
        """Many traversals at once: multi-source BFS, 64 queries per 64-bit lane word.

        With batching, the queries go through the session's batcher in blocks of up
        to ``max_batch`` lanes, sharing traversals with concurrent calls; without it
        they run as traversals planned for this call alone.

        Args:
            sources: One source per query (duplicates allowed): a sequence of ints
                or a 1-D integer array.
            k: Hop limit (k-hop queries) or ``None`` for a full traversal.
            readback: ``"levels"`` (every vertex), ``"counts"`` (reached vertices),
                ``"targets"`` (the levels of ``targets`` only) or ``"parents"`` (every
                vertex's BFS parent, as :meth:`bfs` gives them).
            targets: Vertices whose levels a ``"targets"`` readback returns.
            budget_bytes: Device bytes the graph plus one traversal may use (default:
                the graph plus :data:`DEFAULT_QUERY_BUDGET`); larger query sets run as
                several traversals. Without batching only; batches use the default.
            priority: With batching, as for :meth:`bfs`.
            queue_timeout: With batching, as for :meth:`bfs` (per block).

        Returns:
            int32 rows in ``sources`` order: ``(len(sources), V)`` levels (or parents),
            ``(len(sources), len(targets))`` target levels, or ``(len(sources),)``
            counts; -1 where unreached (and a parent -1 at the source).
        """
        self._check_open()
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
            raise ValidationError(
                f"k must be a non-negative int or None, got {k!r}",
                fix="pass k >= 0 for k-hop queries, or leave it None for full traversals.",
            )
        if readback not in ("levels", "counts", "targets", "parents"):
            raise ValidationError(
                f"readback must be 'levels', 'counts', 'targets' or 'parents', got {readback!r}",
                fix="pick one of 'levels', 'counts', 'targets' and 'parents'.",
            )
        target_ids = tuple(int(t) for t in targets)
        params: BfsParams = (
            BfsParams(readback=readback, targets=target_ids)
            if k is None
            else KhopParams(k=k, readback=readback, targets=target_ids)
        )
        rows = await self.query_many(
            BFS if k is None else KHOP,
            sources,
            params,
            budget_bytes=budget_bytes,
            priority=priority,
            queue_timeout=queue_timeout,
        )
        # The kind's parents rows carry the levels too (2, V): hand back the parents.
        return np.ascontiguousarray(rows[:, 1]) if readback == "parents" else rows

    async def sssp(
        self,
        source: int,
        *,
        max_distance: float | None = None,
        out: np.ndarray | None = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> np.ndarray:
        """Shortest distances from ``source`` over the graph's weights: float32, 0 at the
        source, +inf where unreachable (or beyond ``max_distance``).

        Near-far delta-stepping on the device; the first query on each device uploads
        the weights (4 bytes per edge) and a light graph of the edges below the bucket
        width, kept until the session closes. With batching, concurrent calls share
        runs (as lanes where the graph's degrees are even, else one after another).

        Args:
            source: Source vertex.
            max_distance: Distances beyond it are not followed (``None``: no bound).
            out: Write the distances into this float32 array of ``num_vertices``
                elements and return it (as for :meth:`bfs`).
            priority: With batching, as for :meth:`bfs`.
            queue_timeout: With batching, as for :meth:`bfs`.

        Raises:
            ValidationError: ``source`` is out of range, the graph has no weights or a
                negative one (the edge is named), or ``out`` does not fit.
        """
        self._check_source(source)
        if out is not None:
            check_out(out, np.dtype(np.float32), self._graph.num_vertices)
        params = self._params(SSSP, SsspParams(readback="distances", max_distance=max_distance))
        distances: np.ndarray = await self._one(
            SSSP, params, int(source), out, priority, queue_timeout
        )
        return distances

    async def sssp_many(
        self,
        sources: Sequence[int] | np.ndarray,
        *,
        readback: Literal["distances", "counts"] = "distances",
        max_distance: float | None = None,
        budget_bytes: int | None = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> np.ndarray:
        """Shortest paths from many sources: ``(n, V)`` float32 distances, or ``(n,)``
        int32 counts of the vertices within ``max_distance`` (the source included).

        Runs as lanes of one traversal (up to 32 sources) where the graph's degrees are
        even, else one source at a time; see :meth:`sssp` for the rest.
        """
        return await self.query_many(
            SSSP,
            sources,
            SsspParams(readback=readback, max_distance=max_distance),
            budget_bytes=budget_bytes,
            priority=priority,
            queue_timeout=queue_timeout,
        )

    async def components(self, *, out: np.ndarray | None = None) -> np.ndarray:
        """Weakly connected components: an int32 label per vertex, the smallest vertex id
        of its component.

        An edge joins its end points whichever way it points, so a directed graph's
        components are its weak ones (SciPy's ``connection="weak"``). On the device the
        components are found by hooking and pointer jumping, a few rounds per
        submission; the labels are the same on every backend.

        Args:
            out: Write the labels into this int32 array of ``num_vertices`` elements and
                return it (page-locked: straight from the device; a device array on the
                CUDA backend: device to device, as for :meth:`bfs`).

        Raises:
            ValidationError: ``out`` does not fit.
        """
        self._check_open()
        if out is not None:
            check_out(out, np.dtype(np.int32), self._graph.num_vertices)
        labels: np.ndarray = await self.query(COMPONENTS, None, _COMPONENTS, out=out)
        return labels

    async def component_sizes(self) -> ComponentSizes:
        """Every weakly connected component once, with its size.

        Returns:
            ``(labels, sizes)``: int32 labels of the components (each its smallest
            vertex id, as :meth:`components` labels vertices), ascending, and the int64
            vertex count of each; ``labels.size`` is the number of components.
        """
        labels = await self.components()
        return await anyio.to_thread.run_sync(component_sizes, labels)

    async def ppr(
        self,
        seed: int,
        *,
        top_k: int | None = None,
        damping: float = 0.85,
        tol: float = 1e-6,
        max_iter: int = 100,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> np.ndarray | TopRanks:
        """Personalized PageRank of ``seed``: float32 ranks summing to 1, or its top k.

        A walk restarts at ``seed`` with probability ``1 - damping`` at each step, and
        always from a vertex without out-edges. With batching, concurrent calls run
        together as the columns of one power iteration (see :meth:`ppr_many`).

        Args:
            seed: The seed vertex.
            top_k: Return a :class:`~vyre_async.algorithms.ppr.TopRanks` of the
                ``top_k`` highest-ranked vertices (at most V, best first, ties to the
                smaller vertex) and their ranks; ``None``: every vertex's rank.
            damping: Probability of following an edge, in (0, 1).
            tol: Stop once the L1 change of one iteration is below ``tol``.
            max_iter: Stop after this many iterations at the latest.
            priority: With batching, as for :meth:`bfs`.
            queue_timeout: With batching, as for :meth:`bfs`.

        Raises:
            ValidationError: ``seed`` is out of range, or a parameter is (``top_k``
                below 1 among them).
        """
        self._check_source(seed)
        params = PprParams(damping=damping, tol=tol, max_iter=max_iter, top_k=top_k)
        found: np.ndarray | TopRanks = await self._one(
            PPR, self._params(PPR, params), int(seed), None, priority, queue_timeout
        )
        return found

    async def ppr_many(
        self,
        seeds: Sequence[int] | np.ndarray,
        *,
        top_k: int | None = None,
        damping: float = 0.85,
        tol: float = 1e-6,
        max_iter: int = 100,
        budget_bytes: int | None = None,
        priority: int = 0,
        queue_timeout: float | None = None,
    ) -> np.ndarray | TopRanks:
        """Personalized PageRank of many seeds in one pass over the edges per iteration.

        The seeds are the columns of one float32 power iteration (a sparse-times-dense
        product), each seed stopping once its own L1 change is below ``tol``; as many
        seeds per pass as fit ``budget_bytes`` (two ``V``-float buffers per seed), up to
        1,024. With batching, the seeds go through the batcher as for :meth:`bfs_many`.

        Args:
            seeds: One seed vertex per query (duplicates allowed), at least one.
            top_k: As for :meth:`ppr`.
            damping: As for :meth:`ppr`.
            tol: As for :meth:`ppr`.
            max_iter: As for :meth:`ppr`.
            budget_bytes: Device bytes the graph plus one pass may use (default: the
                graph plus :data:`DEFAULT_QUERY_BUDGET`). Without batching only.
            priority: With batching, as for :meth:`bfs`.
            queue_timeout: With batching, as for :meth:`bfs` (per block).

        Returns:
            float32 ranks ``(len(seeds), V)``, a row per seed in order; or, with
            ``top_k``, a :class:`~vyre_async.algorithms.ppr.TopRanks` of ``(len(seeds),
            k)`` int32 vertices and float32 ranks.

        Raises:
            ValidationError: No seed, a seed out of range, or a bad parameter.
        """
        self._check_open()
        params = self._params(
            PPR, PprParams(damping=damping, tol=tol, max_iter=max_iter, top_k=top_k)
        )
        require_seeds(seeds)
        rows = await self.query_many(
            PPR,
            seeds,
            params,
            budget_bytes=budget_bytes,
            priority=priority,
            queue_timeout=queue_timeout,
        )
        return rows if top_k is None else top_ranks(rows)

    def _source_array(self, sources: Sequence[int] | np.ndarray) -> np.ndarray:
        """``sources`` as a fresh int32 array, every vertex checked against the graph."""
        array = np.asarray(sources)
        if array.size == 0:
            return np.empty(0, np.int32)
        if array.ndim != 1:
            raise ValidationError(
                f"sources must be one-dimensional, got shape {array.shape}",
                fix="pass a flat sequence (or 1-D array) of vertex ids.",
            )
        if array.dtype.kind not in "iu":
            # Not plain integers (bools, floats, Python ints past int64...): the first
            # source that is not a vertex id names itself.
            for source in array.tolist():
                self._check_source(source)
            array = array.astype(np.int64)
        n = self._graph.num_vertices
        if array.min() < 0 or array.max() >= n:
            self._check_source(int(array[np.flatnonzero((array < 0) | (array >= n))[0]]))
        return array.astype(np.int32)

    def _checked(self, source: int) -> int:
        self._check_source(source)
        return int(source)

    def stats(self) -> SessionStats:
        """What this session uploaded once and what its runs avoided, from telemetry."""
        replicas = self._replicas
        if self._partition is not None:
            parts = self._partition.graph_bytes
            return self._counters.stats(
                sum(parts), len(parts), copy_bytes=sum(parts), devices=len(parts)
            )
        return self._counters.stats(
            sum(r.graph_bytes for r in replicas),
            sum(r.graph_allocations for r in replicas),
            copy_bytes=replicas[0].graph_bytes,
            devices=len(replicas),
            devices_lost=sum(r.lost is not None for r in replicas),
        )

    # ----------------------------------------------------------------- machinery
    def _check_source(self, source: int) -> None:
        self._check_open()
        count = self._graph.num_vertices
        if isinstance(source, bool) or not isinstance(source, (int, np.integer)):
            raise TypeError(f"source must be an int vertex id, got {type(source).__name__}")
        if not 0 <= int(source) < count:
            raise ValidationError(
                f"source vertex {source} is out of range for a graph of {count} vertices",
                fix=f"pass a vertex id in [0, {count - 1}]."
                if count
                else "the graph has no vertices.",
            )


def _host_out(unit: QueryKind[Any], out: Any) -> None:
    """Refuse a device array as ``out`` of a query on a split graph (its rows are put
    together on the host)."""
    if not isinstance(out, np.ndarray):
        raise UnsupportedFeatureError(
            f"a {unit.name!r} query on a graph split over several devices cannot write "
            f"into a {type(out).__name__}",
            fix="pass a NumPy array as out= (or leave it out), or raise the devices' "
            "memory_limit so that the graph is replicated.",
        )


async def _one_partitioned(
    partition: GraphPartition, unit: QueryKind[Any], params: Params, source: int | None, out: Any
) -> Any:
    """One query on a split graph: its kind's row (or answer), into ``out`` if given."""
    if source is None:
        answer = await unit.run_partitioned(partition, params, None)
    else:
        rows = await unit.run_partitioned(partition, params, np.array([source], np.int32))
        answer = await unit.unpack(params, rows[0])
    if out is None:
        return answer
    _host_out(unit, out)
    np.copyto(out.reshape(-1), answer)
    return out
