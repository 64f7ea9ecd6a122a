"""BFS parents, shortest paths by hops, and k-hop sets into device arrays, on a real GPU."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from graph_references import GRAPH_SHAPES, scipy_levels
from tree_references import assert_shortest_path, assert_valid_parents

import vyre_async as va
from vyre_async.graphs import CsrGraph, rmat


def _optional(name: str) -> Any:
    with contextlib.suppress(ImportError):
        return importlib.import_module(name)
    return None


# Imported at collection, not in the event loop: their first import reads files, which
# the blocking-call check refuses inside async tests.
cp = _optional("cupy")
torch = _optional("torch")


@pytest.fixture(scope="module", autouse=True)
def _warm_cupy_and_torch() -> None:
    """Run the CuPy and PyTorch operations these tests use once, outside the event loop
    (both compile kernels and load libraries on first use)."""
    if cp is not None:
        warm = cp.full(8, -7, cp.int32)
        warm.fill(-7)  # fill is a kernel of its own
        cp.asnumpy(warm + 1)
    if torch is not None and torch.cuda.is_available():
        (torch.full((8,), -7, dtype=torch.int32, device="cuda") + 1).cpu()
        torch.cuda.synchronize()


def _rmat15_directed(rng: np.random.Generator) -> CsrGraph:
    ends = rng.integers(0, 1 << 15, (2, 400_000))
    return CsrGraph.from_edges(ends[0], ends[1], 1 << 15)


#: Small shapes, and graphs large enough for many compaction tiles and hub in-lists.
SHAPES: dict[str, Callable[[np.random.Generator], CsrGraph]] = {
    "random_directed": GRAPH_SHAPES["random_directed"],
    "disconnected": GRAPH_SHAPES["disconnected"],
    "star_skewed": GRAPH_SHAPES["star_skewed"],
    "rmat16": lambda rng: rmat(16, 16, seed=int(rng.integers(1 << 30))),
    "rmat15_directed": _rmat15_directed,
}


def _sources(rng: np.random.Generator, graph: CsrGraph, count: int) -> list[int]:
    return [int(s) for s in rng.integers(0, graph.num_vertices, count)]


@pytest.mark.parametrize("name", sorted(SHAPES))
async def test_parents_and_paths_are_valid_on_gpu(
    cuda: va.Backend, rng: np.random.Generator, name: str
) -> None:
    """bfs(parents=True), bfs_many(readback="parents") and path(s, t) on the GPU: valid
    against SciPy's BFS, and the path the parents' chain gives."""
    graph = SHAPES[name](rng)
    sources = _sources(rng, graph, 70)
    async with va.resident_graph(cuda, graph) as session:
        for source in sources[:3]:
            levels, parents = await session.bfs(source, parents=True)
            np.testing.assert_array_equal(levels, scipy_levels(graph, source))
            assert_valid_parents(graph, source, levels, parents)
            for target in [*_sources(rng, graph, 3), source]:
                path = await session.path(source, target)
                assert_shortest_path(graph, source, target, levels, path)
        rows = await session.bfs_many(sources, readback="parents")
    for source, row in zip(sources, rows, strict=True):
        assert_valid_parents(graph, source, scipy_levels(graph, source), row)


def _want(graph: CsrGraph, source: int, k: int) -> np.ndarray:
    dist = scipy_levels(graph, source)
    return np.flatnonzero((dist >= 0) & (dist <= k)).astype(np.int32)


@pytest.mark.parametrize("name", ["star_skewed", "rmat16", "rmat15_directed"])
async def test_khop_into_a_resident_buffer_on_gpu(
    cuda: va.Backend, rng: np.random.Generator, name: str
) -> None:
    """khop(out=ResidentBuffer): its head is the set the host path returns (and SciPy's)."""
    graph = SHAPES[name](rng)
    async with va.resident_graph(cuda, graph) as session:
        out = await cuda.upload(np.full(graph.num_vertices, -7, np.int32))
        try:
            for source in _sources(rng, graph, 4):
                k = int(rng.integers(0, 4))
                want = _want(graph, source, k)
                length = await session.khop(source, k, out=out)
                assert length == want.size
                got = await cuda.read(out)
                np.testing.assert_array_equal(got[:length], want)
                np.testing.assert_array_equal(await session.khop(source, k), want)
        finally:
            await cuda.free(out)


async def test_khop_into_a_cupy_array_stays_on_the_device(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """khop(out=cupy array) writes the set in place; the tail is left alone."""
    if cp is None:
        pytest.skip("CuPy is not installed")
    graph = SHAPES["rmat16"](rng)
    out = cp.full(graph.num_vertices + 5, -7, cp.int32)
    pointer = out.data.ptr
    async with va.resident_graph(cuda, graph) as session:
        for source in _sources(rng, graph, 4):
            out.fill(-7)
            length = await session.khop(source, 2, out=out)
            assert out.data.ptr == pointer
            host = cp.asnumpy(out)
            np.testing.assert_array_equal(host[:length], _want(graph, source, 2))
            assert (host[length:] == -7).all()
        with pytest.raises(va.ValidationError, match="Fix: "):
            await session.khop(0, 2, out=cp.zeros(graph.num_vertices, cp.int64))
        with pytest.raises(va.ValidationError, match="Fix: "):
            await session.khop(0, 2, out=cp.zeros(2 * graph.num_vertices, cp.int32)[::2])


async def test_khop_into_a_torch_tensor_stays_on_the_device(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """khop(out=torch CUDA tensor) writes the set in place, as PyG would take it."""
    if torch is None or not torch.cuda.is_available():
        pytest.skip("PyTorch with CUDA is not installed")
    graph = SHAPES["rmat15_directed"](rng)
    out = torch.full((graph.num_vertices,), -7, dtype=torch.int32, device="cuda")
    async with va.resident_graph(cuda, graph) as session:
        for source in _sources(rng, graph, 4):
            length = await session.khop(source, 2, out=out)
            np.testing.assert_array_equal(out[:length].cpu().numpy(), _want(graph, source, 2))
        with pytest.raises(va.ValidationError, match="Fix: "):
            await session.khop(0, 2, out=torch.zeros(3, dtype=torch.int32, device="cuda"))
