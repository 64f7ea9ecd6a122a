"""The :class:`CsrGraph`: a validated, immutable compressed-sparse-row graph."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NoReturn, overload

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from ._build import (
    check_edge_weights,
    check_vertex_ids,
    edges_to_csr,
    resolve_num_vertices,
    transpose_arrays,
)
from ._checks import (
    INT32_MAX,
    Indices,
    Offsets,
    Weights,
    check_indices,
    check_offsets,
    check_weights,
    find_asymmetric_edge,
    frozen_vector,
)
from ._column_input import column_array
from ._networkx_input import networkx_edges
from ._scipy_input import canonical_csr, entry_namer
from ._vertex_ids import VertexIds, renumber_edges

if TYPE_CHECKING:
    import scipy.sparse


class CsrGraph:
    """A directed graph in compressed sparse row form, validated and read-only.

    Row ``u`` lists the out-neighbours of vertex ``u`` in
    ``indices[offsets[u]:offsets[u + 1]]``, with the matching edge weights in the
    same range of ``weights``. The arrays become read-only, C-contiguous views; the
    graph does not copy contiguous inputs, so do not modify them afterwards.

    Args:
        offsets: int32 or int64, length V + 1, starting at 0, non-decreasing, ending
            at E. int32 offsets require E < 2**31.
        indices: int32 column indices, length E, each in ``[0, V)``.
        weights: Optional float32 edge weights, length E.
        symmetric: Declare that every edge ``(u, v)`` has a reverse ``(v, u)`` of equal
            weight (an undirected graph); checked on construction.

    Attributes:
        offsets: The row offsets.
        indices: The column indices.
        weights: The edge weights, or ``None``.
        symmetric: Whether the graph equals its transpose.

    Raises:
        ValidationError: An array has the wrong dtype or shape, or its numbers break
            the CSR rules above; the message names the first bad position.
    """

    __slots__ = ("_transpose", "indices", "offsets", "symmetric", "weights")

    offsets: Offsets
    indices: Indices
    weights: Weights | None
    symmetric: bool
    _transpose: CsrGraph | None

    def __init__(
        self,
        offsets: npt.ArrayLike,
        indices: npt.ArrayLike,
        weights: npt.ArrayLike | None = None,
        *,
        symmetric: bool = False,
    ) -> None:
        self._setup(offsets, indices, weights, symmetric=symmetric, verify_symmetric=True)

    @classmethod
    def _trusted(
        cls, offsets: Offsets, indices: Indices, weights: Weights | None, *, symmetric: bool
    ) -> CsrGraph:
        """Build from arrays whose symmetry is known by construction (no symmetry sort)."""
        graph = cls.__new__(cls)
        graph._setup(offsets, indices, weights, symmetric=symmetric, verify_symmetric=False)
        return graph

    def _setup(
        self,
        offsets: object,
        indices: object,
        weights: object | None,
        *,
        symmetric: bool,
        verify_symmetric: bool,
    ) -> None:
        offs = frozen_vector("offsets", offsets, (np.int32, np.int64))
        cols = frozen_vector("indices", indices, (np.int32,))
        check_offsets(offs, cols.size)
        check_indices(cols, offs)
        vals = None if weights is None else frozen_vector("weights", weights, (np.float32,))
        if vals is not None:
            check_weights(vals, cols.size, offs, cols)
        if symmetric and verify_symmetric:
            bad = find_asymmetric_edge(offs, cols, vals)
            if bad is not None:
                u, v = bad
                raise ValidationError(
                    f"the graph is declared symmetric but edge {u} -> {v} has no reverse "
                    f"edge {v} -> {u}{' of equal weight' if vals is not None else ''}",
                    fix="add the reverse edges (CsrGraph.from_edges(..., symmetric=True) does) "
                    "or pass symmetric=False.",
                )
        for name, value in (
            ("offsets", offs),
            ("indices", cols),
            ("weights", vals),
            ("symmetric", bool(symmetric)),
            ("_transpose", None),
        ):
            object.__setattr__(self, name, value)

    @overload
    @classmethod
    def from_edges(
        cls,
        src: npt.ArrayLike,
        dst: npt.ArrayLike,
        num_vertices: int | None = None,
        *,
        symmetric: bool = False,
        dedupe: bool = True,
        weights: npt.ArrayLike | None = None,
        renumber: Literal[False] = False,
    ) -> CsrGraph: ...

    @overload
    @classmethod
    def from_edges(
        cls,
        src: Any,
        dst: Any,
        num_vertices: None = None,
        *,
        symmetric: bool = False,
        dedupe: bool = True,
        weights: Any = None,
        renumber: Literal[True],
    ) -> tuple[CsrGraph, VertexIds]: ...

    @classmethod
    def from_edges(
        cls,
        src: Any,
        dst: Any,
        num_vertices: int | None = None,
        *,
        symmetric: bool = False,
        dedupe: bool = True,
        weights: Any = None,
        renumber: bool = False,
    ) -> CsrGraph | tuple[CsrGraph, VertexIds]:
        """Build a graph from parallel columns of edge endpoints.

        The columns may be NumPy arrays, sequences, pandas Series or Arrow arrays
        (chunked or not); a missing entry (null, None, NaN) is refused. Rows come out
        sorted by destination. Self loops are kept.

        Args:
            src: Source vertex of each edge: integer ids from 0, or with ``renumber``
                any hashable ids (strings, integers of any size, tuples).
            dst: Destination vertex of each edge, same length as ``src``.
            num_vertices: Vertex count; defaults to the largest id plus one (0 when
                there are no edges). Not with ``renumber``.
            symmetric: Also add every edge reversed, giving an undirected graph.
            dedupe: Collapse repeated ``(src, dst)`` pairs to the first one (and its
                weight); with ``symmetric``, pairs are compared undirected.
            weights: Optional weight per edge, converted to float32; every weight must
                be finite and within float32's range.
            renumber: Number the distinct ids of ``src`` and ``dst`` from 0 (ascending
                when they have an order, else by first appearance) and return the
                mapping with the graph.

        Returns:
            The graph; int32 offsets when the edge count is below 2**31, else int64.
            With ``renumber``, ``(graph, ids)``: vertex ``v`` is ``ids.ids[v]``, and
            :class:`VertexIds` translates queries and results both ways.

        Raises:
            ValidationError: Ids that are not integers (without ``renumber``), negative,
                or not below ``num_vertices``; a missing id; mismatched lengths; a weight
                that is not finite or overflows float32. The first offender is named.
            ValueError: ``num_vertices`` given with ``renumber=True``.
        """
        ids = None
        if renumber:
            if num_vertices is not None:
                raise ValueError(
                    "num_vertices cannot be given with renumber=True: the vertex count is "
                    "the number of distinct ids"
                )
            src_ids = column_array("src", src, keep_items=True)
            dst_ids = column_array("dst", dst, keep_items=True)
            for name, column in (("src", src_ids), ("dst", dst_ids)):
                if column.ndim != 1:
                    raise ValidationError(
                        f"{name} has shape {column.shape}; expected a 1-D column of ids",
                        fix=f"pass a flat column: {name}.ravel().",
                    )
            _check_lengths(src_ids.size, dst_ids.size)
            s, d, ids = renumber_edges(src_ids, dst_ids)
            count: int = len(ids)
        else:
            s = check_vertex_ids("src", column_array("src", src))
            d = check_vertex_ids("dst", column_array("dst", dst))
            _check_lengths(s.size, d.size)
            count = resolve_num_vertices(s, d, num_vertices)
        w = None
        if weights is not None:
            w = check_edge_weights(column_array("weights", weights, nan_is_missing=False), s.size)
        # Every valid id is below 2**31 - 1, so int32 halves the memory of what follows.
        s, d = s.astype(np.int32, copy=False), d.astype(np.int32, copy=False)
        offsets, indices, w = edges_to_csr(
            s, d, count, symmetric=symmetric, dedupe=dedupe, weights=w
        )
        graph = cls._trusted(offsets, indices, w, symmetric=symmetric)
        return graph if ids is None else (graph, ids)

    @classmethod
    def from_scipy(cls, matrix: Any, *, symmetric: bool = False, weighted: bool = True) -> CsrGraph:
        """Build a graph from a SciPy sparse adjacency matrix: entry ``(i, j)`` is edge i -> j.

        Any format (CSR, CSC, COO, BSR, DIA, DOK, LIL; ``*_matrix`` or ``*_array``) and
        any index and value dtypes are taken. The matrix is brought into SciPy's
        canonical CSR form first, so duplicate entries of a COO matrix are summed, as
        ``matrix.tocsr()`` sums them. Every stored entry is an edge, a stored zero one
        of weight 0: explicit zeros, duplicates summing to zero and the padding of BSR
        blocks (call ``eliminate_zeros()`` on the CSR form first where zeros are not
        edges). Column indices are cast to
        int32 after a range check; offsets are int32 when the edge count allows. The
        caller's matrix is not modified and the graph shares no memory with it.

        Args:
            matrix: A square ``scipy.sparse`` matrix or array.
            symmetric: Also add every entry reversed, giving an undirected graph; where
                ``A[i, j]`` and ``A[j, i]`` are both stored and differ, the upper
                triangle's value (``i < j``) is kept for both directions.
            weighted: Keep the values as float32 weights (every value must be finite
                and within float32's range); ``False`` keeps only the pattern.

        Returns:
            The graph, rows sorted by destination.

        Raises:
            TypeError: ``matrix`` is not a SciPy sparse matrix or array.
            ValidationError: Not square; more rows than int32 vertex ids can number;
                complex values; a stored index outside the matrix; a value that is NaN,
                infinite or beyond float32's range (its entry is named).
            UnsupportedFeatureError: SciPy is not installed.
        """
        indptr, indices, data = canonical_csr(matrix)
        num_vertices = indptr.size - 1
        weights = None
        if weighted:
            weights = check_edge_weights(data, data.size, where=entry_namer(indptr, indices))
        if symmetric:
            rows = np.repeat(np.arange(num_vertices, dtype=np.int32), np.diff(indptr))
            return cls.from_edges(
                rows, indices, num_vertices, symmetric=True, dedupe=True, weights=weights
            )
        offset_type = np.int32 if indices.size <= INT32_MAX else np.int64
        return cls(indptr.astype(offset_type), indices.astype(np.int32), weights)

    @classmethod
    def from_networkx(
        cls, graph: Any, *, weight: str | None = "weight"
    ) -> tuple[CsrGraph, VertexIds]:
        """Build a graph from a NetworkX graph; nodes of any kind are numbered from 0.

        Vertex ``v`` is the ``v``-th node of ``graph.nodes`` (NetworkX's own order, the
        one ``nx.to_scipy_sparse_array`` uses). A directed graph keeps its edges' direction;
        an undirected one gives a symmetric graph (each edge both ways, a self loop once).
        In a multigraph, parallel edges become one edge whose weight is their sum, as in
        ``nx.to_scipy_sparse_array``.

        Args:
            graph: A ``networkx`` Graph, DiGraph, MultiGraph or MultiDiGraph.
            weight: The edge attribute holding each weight (1.0 where an edge lacks it),
                or ``None`` for an unweighted graph.

        Returns:
            ``(graph, ids)``: ``ids.ids[v]`` is the node of vertex ``v``, and
            :class:`VertexIds` translates nodes to vertex numbers and back.

        Raises:
            TypeError: ``graph`` is not a NetworkX graph.
            ValidationError: A weight that is not a number, not finite, or beyond
                float32's range (its edge is named); more than 2**31 - 1 nodes.
        """
        ids, src, dst, raw, directed = networkx_edges(graph, weight)
        weights = None
        if raw is not None:

            def edge(k: int) -> str:
                return f"edge {ids.ids[src[k]]!r} -> {ids.ids[dst[k]]!r}"

            weights = check_edge_weights(raw, raw.size, where=edge)
        built = cls.from_edges(
            src, dst, len(ids), symmetric=not directed, dedupe=True, weights=weights
        )
        return built, ids

    @property
    def num_vertices(self) -> int:
        """The vertex count V."""
        return int(self.offsets.size) - 1

    @property
    def num_edges(self) -> int:
        """The edge count E (a symmetric graph counts both directions)."""
        return int(self.indices.size)

    @property
    def nbytes(self) -> int:
        """Bytes held by the offsets, indices and weights."""
        extra = 0 if self.weights is None else self.weights.nbytes
        return int(self.offsets.nbytes + self.indices.nbytes + extra)

    def out_degree(self) -> npt.NDArray[np.int32]:
        """Out-degree of each vertex, as int32.

        Raises:
            ValidationError: A degree does not fit int32 (only possible with int64 offsets).
        """
        degree = np.diff(self.offsets)
        if degree.dtype != np.int32 and degree.size and int(degree.max()) > INT32_MAX:
            v = int(np.argmax(degree))
            raise ValidationError(
                f"vertex {v} has out-degree {int(degree[v])}, beyond int32",
                fix="use np.diff(graph.offsets) for int64 degrees.",
            )
        return degree.astype(np.int32)

    def transpose(self) -> CsrGraph:
        """The graph with every edge reversed (cached; a symmetric graph is its own).

        Row ``v`` of the result lists the sources of ``v``'s in-edges in the order the
        edges appear in this graph (stable), with their weights; offsets keep their dtype.
        """
        if self.symmetric:
            return self
        flipped = self._transpose
        if flipped is None:
            offsets, indices, weights = transpose_arrays(self.offsets, self.indices, self.weights)
            flipped = CsrGraph._trusted(offsets, indices, weights, symmetric=False)
            object.__setattr__(flipped, "_transpose", self)
            object.__setattr__(self, "_transpose", flipped)
        return flipped

    def to_scipy(self) -> scipy.sparse.csr_array:
        """A ``scipy.sparse.csr_array`` copy; values are the weights, or 1.0 when unweighted.

        SciPy is imported here, so it is needed only by callers of this method.
        """
        import scipy.sparse

        data = np.ones(self.num_edges, np.float32) if self.weights is None else self.weights
        return scipy.sparse.csr_array(
            (data.copy(), self.indices.copy(), self.offsets.copy()),
            shape=(self.num_vertices, self.num_vertices),
        )

    def __repr__(self) -> str:
        weighted = ", weighted" if self.weights is not None else ""
        symmetric = ", symmetric" if self.symmetric else ""
        return (
            f"CsrGraph(V={self.num_vertices}, E={self.num_edges}, "
            f"offsets={self.offsets.dtype.name}{weighted}{symmetric})"
        )

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"CsrGraph is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"CsrGraph is immutable; cannot delete {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:  # copy/deepcopy rebuild through the checks
        return (_rebuild, (self.offsets, self.indices, self.weights, self.symmetric))


def _check_lengths(sources: int, destinations: int) -> None:
    if sources != destinations:
        raise ValidationError(
            f"src has {sources} entries but dst has {destinations}",
            fix="pass one destination per source: src and dst of equal length.",
        )


def _rebuild(
    offsets: Offsets, indices: Indices, weights: Weights | None, symmetric: bool
) -> CsrGraph:
    return CsrGraph._trusted(offsets, indices, weights, symmetric=symmetric)
