"""The factories of sessions: what ``vyre_async.resident_graph`` and ``egraph_session`` make.

Sessions sit above backends and are built on the :class:`~vyre_async.backends.Backend`
protocol alone, so their factories live here, not on the backend: a backend knows
nothing of the layers above it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..algorithms.egraph import EGraphSource
from ..backends import Backend, DeviceGroup
from ..graphs import CsrGraph
from ._batched import BatchingConfig
from ._egraph_session import EGraphSession
from ._graph_session import ResidentGraphSession


def resident_graph(
    backend: Backend | DeviceGroup | Sequence[Backend],
    graph: CsrGraph,
    *,
    batching: BatchingConfig | None = None,
) -> ResidentGraphSession:
    """A session keeping ``graph`` resident; use it with ``async with``.

    The graph is uploaded once on entry (one allocation per device) and freed on
    exit, also on error or cancellation.

    Args:
        backend: An open backend, or an open :class:`~vyre_async.backends.DeviceGroup`:
            the graph is then replicated on each of its devices while a copy fits
            every device's budget, and each analysis (with ``batching``, each batch)
            runs on the least busy one; a device that is lost is taken out and its
            work runs again on the others. Otherwise the graph is split in vertex
            ranges over the devices (``session.placement`` says which, and why).
        graph: The graph; it is not copied on the host, only uploaded.
        batching: Coalesce concurrent ``bfs``/``khop``/``reach_count`` calls into
            multi-source traversals (``None``: every call runs alone).

    Returns:
        The session, unopened: ``async with resident_graph(backend, graph) as session:``.
    """
    return ResidentGraphSession(backend, graph, batching=batching)


def egraph_session(
    backend: Backend, source: EGraphSource, *, chunk_bytes: int | None = None
) -> EGraphSession:
    """A session keeping an e-graph resident on ``backend``; use it with ``async with``.

    The image is uploaded on entry (see ``upload_egraph``) and freed, with its
    scratch, on exit.

    Args:
        backend: An open backend.
        source: An e-graph snapshot, or an upload plan of one.
        chunk_bytes: Bytes per upload write (``None``: the upload's default).

    Returns:
        The session, unopened: ``async with egraph_session(backend, snapshot) as s:``.
    """
    return EGraphSession(backend, source, chunk_bytes=chunk_bytes)
