"""Graphs: the validated :class:`CsrGraph`, file loaders and the R-MAT generator.

Example:
    >>> from vyre_async.graphs import rmat
    >>> graph = rmat(scale=10, edge_factor=8, seed=1)
    >>> graph.num_vertices
    1024
"""

from ._csr import CsrGraph as CsrGraph
from ._header import GraphFileHeader as GraphFileHeader
from ._io import load_edge_list as load_edge_list
from ._io import load_graph as load_graph
from ._io import read_graph_header as read_graph_header
from ._mtx import load_matrix_market as load_matrix_market
from ._npz import load_npz as load_npz
from ._npz import save_npz as save_npz
from ._rmat import rmat as rmat

__all__ = [
    "CsrGraph",
    "GraphFileHeader",
    "load_edge_list",
    "load_graph",
    "load_matrix_market",
    "load_npz",
    "read_graph_header",
    "rmat",
    "save_npz",
]
