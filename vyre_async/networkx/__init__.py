"""A NetworkX backend: ``nx.pagerank(G, backend="vyre")`` runs on vyre_async.

NetworkX (3.4 or newer) finds this backend through the ``networkx.backends`` entry
point named ``vyre``; calls reach it with ``backend="vyre"``, through
``NETWORKX_BACKEND_PRIORITY=vyre``, or for a graph already converted. A graph is
converted once (:func:`convert_from_nx`) and kept, with its resident session, in
``G.__networkx_cache__``; the calls run on one event loop in a thread of the process
(``VYRE_ASYNC_NX_BACKEND``: ``auto``, ``cpu`` or ``cuda``). What a call asks for that
vyre does not do (a weight function, a personalization...) is left to NetworkX's own
implementation. Importing ``vyre_async`` does not import this package or NetworkX.
"""

from ._graph import VyreGraph as VyreGraph
from ._graph import conversions as conversions
from ._graph import convert_from_nx as convert_from_nx
from ._graph import convert_to_nx as convert_to_nx
from ._interface import FUNCTIONS as FUNCTIONS
from ._interface import BackendInterface as BackendInterface
from ._interface import backend_interface as backend_interface
from ._portal import BACKEND_VARIABLE as BACKEND_VARIABLE

__all__ = [
    "BACKEND_VARIABLE",
    "BackendInterface",
    "FUNCTIONS",
    "VyreGraph",
    "backend_interface",
    "conversions",
    "convert_from_nx",
    "convert_to_nx",
]
