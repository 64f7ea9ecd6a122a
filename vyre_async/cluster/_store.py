"""The graphs a Ray cluster keeps between jobs: one detached actor, ``vyre-graph-store``.

Users start a Ray cluster once and submit many jobs of one graph to it. The first
job's driver puts the graph's CSR arrays into the object store and lends them to the
store (:meth:`GraphStore.keep`); the store hands them to that run's actors at once and
meanwhile copies them into objects it owns, which outlive the driver. A later job of
the same graph (the same :func:`~vyre_async.jobs.graph.graph_fingerprint`) finds the
store's copy (:meth:`GraphStore.lookup`): its actors start from it before its driver
has prepared the graph, and the driver puts nothing.

An actor gets its graph from the store (:meth:`GraphStore.wait_for`), never as a
constructor argument: an actor Ray restarts gets it again from there, and Ray has no
object-store argument to warn about (an actor with ``max_restarts`` > 0 whose
constructor arguments live in the object store makes Ray log an error line at its
creation, since a restart fails once those objects are gone).

It also lists the actors kept warm after their jobs (``[job] ray_keep_actors_s``):
each holds a device with a graph resident, and a later job of the same graph and
backend takes them (:meth:`GraphStore.claim`) instead of starting its own. An idle
warm actor leaves the list before it exits (:meth:`GraphStore.retire`), so a job
never takes one that is going; a job that needs devices that idle actors of other
graphs hold has them removed (:meth:`GraphStore.evict`).

The store keeps the :data:`KEEP` most recently used graphs, fewer when the object
store is full. It is detached: it lives until the cluster stops or somebody kills it
(``ray.kill(ray.get_actor("vyre-graph-store", namespace="vyre_async"))``), which
drops every graph it keeps. Its methods run on its own event loop (Ray runs an actor
whose methods are coroutines on asyncio); this module imports Ray only inside them.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

import anyio
import msgspec

#: The store's actor name and namespace (one store per cluster, whatever the job's
#: namespace).
STORE_NAME = "vyre-graph-store"
NAMESPACE = "vyre_async"
#: Graphs the store keeps; the least recently used goes first.
KEEP = 4

#: A graph as the store hands it out: ``[offsets, indices, weights or None, symmetric]``
#: (object references inside a list, so that Ray passes them on unresolved).
GraphRefs = list[Any]


class KeptGraph(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A graph the store keeps, as :meth:`GraphStore.graphs` reports it.

    Attributes:
        key: Its fingerprint.
        nbytes: The bytes of its arrays.
    """

    key: str
    nbytes: int


class GraphStore:
    """The store's state; Ray makes it a detached actor (see :func:`graph_store`)."""

    def __init__(self) -> None:
        self._owned: OrderedDict[str, tuple[GraphRefs, int]] = OrderedDict()
        self._lent: dict[tuple[str, str], GraphRefs] = {}
        self._changed: anyio.Event | None = None
        #: Warm actors waiting for a job: pool (graph key and backend) -> name -> handle.
        self._idle: dict[str, dict[str, Any]] = {}
        #: When each actor was last handed to a job (the monotonic clock).
        self._claimed_at: dict[str, float] = {}

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def lookup(self, key: str) -> GraphRefs | None:
        """The graph kept under ``key`` (now the most recently used), or ``None``."""
        kept = self._owned.get(key)
        if kept is None:
            return None
        self._owned.move_to_end(key)
        return kept[0]

    async def wait_for(self, key: str, run: str) -> GraphRefs:
        """The graph kept under ``key``, or the one run ``run``'s driver lent, once
        either is here."""
        while True:
            kept = self._owned.get(key)
            if kept is not None:
                self._owned.move_to_end(key)
                return kept[0]
            lent = self._lent.get((key, run))
            if lent is not None:
                return lent
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()

    async def keep(self, key: str, run: str, lent: GraphRefs) -> str:
        """Hand ``lent`` (the driver's own objects) to run ``run``'s actors now, and
        keep a copy the store owns under ``key``.

        Returns:
            ``"kept"``, or why the graph is not kept (the run's actors still have it
            while its driver lives).
        """
        self._lent[(key, run)] = lent
        self._notify()
        if key in self._owned:  # another run of the graph kept it meanwhile
            return "kept"
        import ray

        try:
            arrays = [None if ref is None else await ref for ref in lent[:3]]
        except ray.exceptions.RayError as exc:
            return f"not kept: the driver's arrays could not be read ({type(exc).__name__})"
        nbytes = sum(0 if a is None else int(a.nbytes) for a in arrays)
        try:
            owned = await anyio.to_thread.run_sync(_put, arrays)
        except ray.exceptions.ObjectStoreFullError:
            self._owned.clear()  # the other graphs go first, then one more try
            try:
                owned = await anyio.to_thread.run_sync(_put, arrays)
            except ray.exceptions.ObjectStoreFullError:
                return f"not kept: the object store has no room for {nbytes} bytes"
        del arrays
        self._owned[key] = ([*owned, lent[3]], nbytes)
        while len(self._owned) > KEEP:
            self._owned.popitem(last=False)
        self._notify()
        return "kept"

    async def forget_lent(self, key: str, run: str) -> None:
        """Drop what run ``run``'s driver lent (its driver is about to exit)."""
        self._lent.pop((key, run), None)

    async def park(self, pool: str, actors: dict[str, Any]) -> None:
        """List ``actors`` (name -> handle, their job done) as warm in ``pool``."""
        self._idle.setdefault(pool, {}).update(actors)

    async def claim(self, pool: str, count: int) -> dict[str, Any]:
        """Take up to ``count`` warm actors of ``pool`` off the list, for a job."""
        idle = self._idle.get(pool, {})
        taken = {name: idle.pop(name) for name in list(idle)[:count]}
        now = time.monotonic()
        self._claimed_at.update(dict.fromkeys(taken, now))
        return taken

    async def retire(self, pool: str, name: str, idle_s: float) -> bool:
        """Whether the actor ``name``, idle ``idle_s`` seconds, may exit now: not if a
        job took it in that time (its first request is on the way); otherwise it
        leaves the list first."""
        claimed = self._claimed_at.get(name)
        if claimed is not None and time.monotonic() - claimed < idle_s:
            return False
        self._idle.get(pool, {}).pop(name, None)
        self._claimed_at.pop(name, None)
        return True

    async def evict(self, keep_pool: str) -> int:
        """Remove the warm actors of every pool but ``keep_pool`` (their devices are
        wanted); return how many."""
        import ray

        evicted = 0
        for pool in [p for p in self._idle if p != keep_pool]:
            for name, actor in self._idle.pop(pool).items():
                self._claimed_at.pop(name, None)
                ray.kill(actor, no_restart=True)
                evicted += 1
        return evicted

    async def warm_actors(self) -> dict[str, list[str]]:
        """The names of the warm actors waiting for a job, by pool."""
        return {pool: list(actors) for pool, actors in self._idle.items() if actors}

    async def graphs(self) -> bytes:
        """The graphs kept, least recently used first (a msgpack list of
        :class:`KeptGraph`)."""
        return msgspec.msgpack.encode(
            [KeptGraph(key, nbytes) for key, (_, nbytes) in self._owned.items()]
        )


def _put(arrays: list[Any]) -> list[Any]:
    import ray

    return [None if a is None else ray.put(a) for a in arrays]


def graph_store(ray: Any) -> Any:
    """The cluster's store, started here if it is not running (blocking)."""
    return (
        ray.remote(GraphStore)
        .options(
            name=STORE_NAME,
            namespace=NAMESPACE,
            lifetime="detached",
            get_if_exists=True,
            num_cpus=0,
        )
        .remote()
    )
