"""The shortest-path kernels themselves: NVRTC builds, #define headers, and their references
driven step by step as a resident sequence drives them (well past done)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources

import numpy as np
import pytest
from kernel_builds import assert_builds_cleanly
from sssp_references import WEIGHTED_SHAPES, WeightedGraph, scipy_distances

from vyre_async.algorithms import sssp
from vyre_async.algorithms.sssp import _layout, _many_layout
from vyre_async.kernels import Kernel


@pytest.mark.usefixtures("private_kernel_cache")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize(
    "kernel", [*sssp.SSSP_KERNELS, *sssp.SSSP_MANY_KERNELS], ids=lambda k: k.name
)
def test_sssp_kernel_compiles_without_warnings(kernel: Kernel, arch: str) -> None:
    """Each shortest-path kernel builds to a CUBIN with NVRTC, and NVRTC has nothing to say."""
    assert_builds_cleanly(kernel, arch)


@pytest.mark.parametrize(
    ("header", "constants"),
    [
        ("sssp_defines.cuh", _layout.CUDA_DEFINES),
        ("sssp_many_defines.cuh", _many_layout.MANY_CUDA_DEFINES),
    ],
)
def test_define_headers_state_the_python_constants(
    header: str, constants: Mapping[str, int]
) -> None:
    """The CUDA C's #define header and the Python constants agree, name for name."""
    text = resources.files("vyre_async.algorithms.sssp").joinpath(header).read_text("utf-8")
    stated = dict(re.findall(r"^#define (\w+) (\S+)$", text, re.MULTILINE))
    assert stated == {name: str(value) for name, value in constants.items()}


def _call(kernel: Kernel, arrays: dict[str, np.ndarray], **scalars: object) -> None:
    """One launch as the CPU backend makes it: bind (validates), zero outputs, run."""
    call = kernel.bind(arrays, scalars)
    for p in kernel.buffer_params:
        if p.role == "out":
            arrays[p.name].fill(0)
    assert kernel.reference is not None
    kernel.reference(arrays, call.scalars)


def _read_only(graph: WeightedGraph) -> dict[str, np.ndarray]:
    arrays = {"offsets": graph.offsets, "indices": graph.indices, "weights": graph.weights}
    for array in arrays.values():
        array.flags.writeable = False
    return arrays


def _single_arrays(graph: WeightedGraph, delta: float) -> dict[str, np.ndarray]:
    """The graph (read-only), its light graph, and garbage-filled scratch lists."""
    n, e = graph.num_vertices, graph.num_edges
    light = graph.weights < np.float32(delta)
    rows = np.repeat(np.arange(n), np.diff(graph.offsets))
    light_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows[light], minlength=n), out=light_offsets[1:])
    capacity = _layout.chunk_capacity(e)
    garbage = {
        "dist": np.full(n, 7.5, np.float32),
        "stamp": np.full(n, 3, np.int32),
        "far": np.full(-(-n // 4), 0x01010101, np.uint32),
        "queue_a": np.full(n, 9, np.int32),
        "queue_b": np.full(n, 9, np.int32),
        "chunks_a": np.full(capacity, 5, np.int64),
        "chunks_b": np.full(capacity, 5, np.int64),
        "members": np.full(n, 9, np.int32),
        "heavy": np.full(capacity, 5, np.int64),
        "state": np.full(sssp.SSSP_STATE_WORDS, 77, np.int32),
    }
    return {
        **_read_only(graph),
        "light_offsets": light_offsets,
        "light_indices": graph.indices[light].copy(),
        "light_weights": graph.weights[light].copy(),
        **garbage,
    }


def _step(arrays: dict[str, np.ndarray]) -> None:
    _call(sssp.sssp_step, {name: arrays[name] for name in _STEP_NAMES})


_STEP_NAMES = [p.name for p in sssp.sssp_step.buffer_params]
_INIT_NAMES = [p.name for p in sssp.sssp_init.buffer_params]


def test_single_source_steps_past_done_change_nothing(rng: np.random.Generator) -> None:
    """init then steps until done give SciPy's distances; more steps leave every array as is."""
    graph = WEIGHTED_SHAPES["zero_weights"](rng, True)
    delta = 0.2
    arrays = _single_arrays(graph, delta)
    source = int(rng.integers(0, graph.num_vertices))
    _call(
        sssp.sssp_init,
        {name: arrays[name] for name in _INIT_NAMES},
        source=source,
        delta=delta,
        max_distance=sssp.SSSP_UNBOUNDED,
        heavy_edges=1,
    )
    steps = 0
    while not arrays["state"][sssp.STATE_DONE]:
        assert steps <= 4 * graph.num_vertices + 10, "the run did not finish"
        _step(arrays)
        steps += 1
    done = {name: array.copy() for name, array in arrays.items()}
    for _ in range(3):  # a repeated sequence overshoots: that must be harmless
        _step(arrays)
    for name, array in arrays.items():
        np.testing.assert_array_equal(array, done[name], err_msg=name)
    expected = scipy_distances(graph, [source])[0]
    np.testing.assert_allclose(arrays["dist"], expected, rtol=1e-5)
    assert (
        arrays["state"][sssp.STATE_LIGHT_ROUNDS] + arrays["state"][sssp.STATE_HEAVY_ROUNDS]
        == arrays["state"][sssp.STATE_ROUND]
    )


def test_offsets_of_another_length_run_nothing(rng: np.random.Generator) -> None:
    """Offsets longer than the distances + 1 leave the state done and flagged, dist untouched."""
    graph = WEIGHTED_SHAPES["grid"](rng, True)
    arrays = _single_arrays(graph, 0.5)
    arrays["offsets"] = np.append(graph.offsets, graph.offsets[-1])
    arrays["light_offsets"] = np.append(arrays["light_offsets"], arrays["light_offsets"][-1])
    _call(
        sssp.sssp_init,
        {name: arrays[name] for name in _INIT_NAMES},
        source=0,
        delta=0.5,
        max_distance=sssp.SSSP_UNBOUNDED,
        heavy_edges=1,
    )
    assert arrays["state"][sssp.STATE_DONE] == 1
    assert arrays["state"][_layout.STATE_OVERFLOW] == 2
    before = arrays["dist"].copy()
    _step(arrays)
    np.testing.assert_array_equal(arrays["dist"], before)


def test_many_source_steps_past_done_change_nothing(rng: np.random.Generator) -> None:
    """init, seed, steps until done: SciPy's distances per lane; more steps change nothing."""
    graph = WEIGHTED_SHAPES["self_loops"](rng, False)
    n, lanes = graph.num_vertices, 4
    capacity = _many_layout.item_capacity(n, graph.num_edges)
    sources = np.array([int(rng.integers(0, n)), -1, int(rng.integers(0, n)), n], np.int32)
    arrays = {
        **_read_only(graph),
        "sources": sources,
        "dist": np.full(n * lanes, 3.0, np.float32),
        "masks_a": np.full(n, 12, np.uint64),
        "masks_b": np.full(n, 12, np.uint64),
        "far": np.full(n, 6, np.uint32),
        "items_a": np.full(capacity, 8, np.int64),
        "items_b": np.full(capacity, 8, np.int64),
        "state": np.full(_many_layout.MANY_STATE_WORDS, 55, np.int32),
    }

    def call(kernel: Kernel, **scalars: object) -> None:
        _call(kernel, {p.name: arrays[p.name] for p in kernel.buffer_params}, **scalars)

    call(sssp.sssp_many_init)
    call(sssp.sssp_many_seed, delta=0.15, max_distance=sssp.SSSP_UNBOUNDED)
    steps = 0
    while not arrays["state"][_many_layout.MANY_STATE_DONE]:
        assert steps <= 4 * n + 10, "the traversal did not finish"
        call(sssp.sssp_many_step)
        steps += 1
    done = {name: array.copy() for name, array in arrays.items()}
    for _ in range(3):
        call(sssp.sssp_many_step)
    for name, array in arrays.items():
        np.testing.assert_array_equal(array, done[name], err_msg=name)
    rows = arrays["dist"].reshape(n, lanes).T
    expected = scipy_distances(graph, [int(sources[0]), int(sources[2])])
    np.testing.assert_allclose(rows[[0, 2]], expected, rtol=1e-5)
    assert np.isinf(rows[[1, 3]]).all()
    assert arrays["state"][_many_layout.MANY_STATE_LANES] == 2


def test_sources_of_another_width_run_nothing(rng: np.random.Generator) -> None:
    """Sources whose count is not the lanes the distances hold leave the traversal done."""
    graph = WEIGHTED_SHAPES["grid"](rng, True)
    n = graph.num_vertices
    arrays = {
        "offsets": graph.offsets,
        "sources": np.zeros(3, np.int32),
        "dist": np.full(n * 4, 1.0, np.float32),
        "masks_a": np.zeros(n, np.uint64),
        "items_a": np.zeros(_many_layout.item_capacity(n, graph.num_edges), np.int64),
        "state": np.zeros(_many_layout.MANY_STATE_WORDS, np.int32),
    }
    _call(sssp.sssp_many_seed, arrays, delta=0.5, max_distance=1.0)
    assert arrays["state"][_many_layout.MANY_STATE_DONE] == 1
    assert arrays["state"][_many_layout.MANY_STATE_WIDTH] == 0
