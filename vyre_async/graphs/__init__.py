"""Graphs: the validated :class:`CsrGraph`, its constructors, file loaders and R-MAT.

:class:`CsrGraph` is built from edge columns (NumPy, pandas, Arrow; arbitrary ids
renumbered through :class:`VertexIds`), SciPy sparse matrices or NetworkX graphs.

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
from ._partition import GraphPart as GraphPart
from ._partition import VertexRanges as VertexRanges
from ._partition import graph_part as graph_part
from ._partition import part_graph_bytes as part_graph_bytes
from ._partition import replica_graph_bytes as replica_graph_bytes
from ._rmat import rmat as rmat
from ._rmat import rmat_params as rmat_params
from ._rmat_counter import RmatParams as RmatParams
from ._rmat_counter import rmat_edges as rmat_edges
from ._scipy_npz import load_scipy_npz as load_scipy_npz
from ._trusted import trusted_csr as trusted_csr
from ._vertex_ids import VertexIds as VertexIds
from ._weights import with_uniform_weights as with_uniform_weights

__all__ = [
    "CsrGraph",
    "GraphFileHeader",
    "GraphPart",
    "RmatParams",
    "VertexIds",
    "VertexRanges",
    "graph_part",
    "load_edge_list",
    "load_graph",
    "load_matrix_market",
    "load_npz",
    "load_scipy_npz",
    "part_graph_bytes",
    "read_graph_header",
    "replica_graph_bytes",
    "rmat",
    "rmat_edges",
    "rmat_params",
    "save_npz",
    "trusted_csr",
    "with_uniform_weights",
]
