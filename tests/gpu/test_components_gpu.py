"""Connected components on a real GPU against SciPy's weak components: sessions on every
shape, large R-MAT graphs (many threads racing on the parents), and the engine directly
on poisoned scratch."""

from __future__ import annotations

import contextlib
import importlib
from typing import Any

import anyio
import numpy as np
import pytest
from components_references import SHAPES, chain, rmat_graph, scipy_labels

import vyre_async as va
from vyre_async.algorithms import components


def _optional(name: str) -> Any:
    with contextlib.suppress(ImportError):
        return importlib.import_module(name)
    return None


# Imported at collection: a first import reads files, which the blocking-call check
# refuses inside async tests.
cp = _optional("cupy")


@pytest.fixture(scope="module", autouse=True)
def _warm_cupy() -> None:
    """Run the CuPy operations these tests use once, outside the event loop (CuPy
    compiles a kernel on its first use of each)."""
    if cp is not None:
        cp.asnumpy(cp.full(8, -7, cp.int32) + 1)


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_components_equal_scipy_on_every_shape_on_gpu(
    cuda: va.Backend, rng: np.random.Generator, shape: str
) -> None:
    """GPU labels (into a poisoned out) are SciPy's weak components, smallest id each; the
    sizes are np.bincount's."""
    graph = SHAPES[shape](rng)
    want = scipy_labels(graph)
    counts = np.bincount(want, minlength=graph.num_vertices)
    async with va.resident_graph(cuda, graph) as session:
        out = np.full(graph.num_vertices, -3, np.int32)
        assert await session.components(out=out) is out
        labels, sizes = await session.component_sizes()
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(labels, np.flatnonzero(counts))
    np.testing.assert_array_equal(sizes, counts[counts > 0])


@pytest.mark.parametrize(("scale", "symmetric"), [(20, True), (18, False)])
async def test_components_of_a_large_rmat_equal_scipy_on_gpu(
    cuda: va.Backend, rng: np.random.Generator, scale: int, symmetric: bool
) -> None:
    """R-MAT 20 (each edge hooked one way) and 18 directed: SciPy's labels, every run."""

    def build() -> tuple[va.graphs.CsrGraph, np.ndarray]:  # seconds of CPU: off the loop
        graph = rmat_graph(rng, symmetric=symmetric, scale=scale)
        return graph, scipy_labels(graph)

    graph, want = await anyio.to_thread.run_sync(build)
    async with va.resident_graph(cuda, graph) as session:
        for _ in range(3):  # the scratch and its batches are reused
            np.testing.assert_array_equal(await session.components(), want)
        stats = session.stats()
    assert stats.host_syncs < stats.levels


async def test_a_path_of_a_million_vertices_is_one_component_on_gpu(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """A path through 2**20 vertices in a random order, edges either way: all labelled 0."""
    graph = chain(rng, 1 << 20)
    async with va.resident_graph(cuda, graph) as session:
        labels = await session.components()
    np.testing.assert_array_equal(labels, np.zeros(graph.num_vertices, np.int32))


async def test_the_engine_overwrites_poisoned_scratch_on_gpu(
    cuda: va.Backend, rng: np.random.Generator
) -> None:
    """label_components on a scratch full of garbage, twice: SciPy's labels both times."""
    graph = SHAPES["many_parts"](rng)
    want = scipy_labels(graph)
    buffers = {
        "offsets": await cuda.upload(graph.offsets.astype(np.int64)),
        "indices": await cuda.upload(graph.indices),
    }
    scratch = await components.allocate_scratch(cuda, graph.num_vertices)
    try:
        for _ in range(2):
            await cuda.write(scratch.parent, np.full(graph.num_vertices, -9, np.int32))
            await cuda.write(scratch.state, np.full(components.COMPONENTS_STATE_WORDS, 5, np.int32))
            words, _ = await components.label_components(cuda, buffers, scratch)
            np.testing.assert_array_equal(await cuda.read(scratch.parent), want)
            assert words[components.STATE_ROUNDS] >= 1
    finally:
        for buffer in (*scratch.buffers, *buffers.values()):
            await cuda.free(buffer)


async def test_labels_fill_a_device_array(cuda: va.Backend, rng: np.random.Generator) -> None:
    """components(out=<CuPy array>) equals the host result, copied device to device."""
    if cp is None:
        pytest.skip("CuPy is not installed")
    graph = rmat_graph(rng, symmetric=True, scale=12)
    async with va.resident_graph(cuda, graph) as session:
        host = await session.components()
        out = cp.full(graph.num_vertices, -7, cp.int32)
        assert await session.components(out=out) is out
    np.testing.assert_array_equal(cp.asnumpy(out), host)
    np.testing.assert_array_equal(host, scipy_labels(graph))
