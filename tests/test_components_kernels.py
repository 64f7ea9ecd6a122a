"""The connected-components kernels themselves: NVRTC builds, the #define header, their
references stepped as a resident sequence steps them, their CUDA C on the CPU emulator,
and the claim that any order of the updates ends at the same labels."""

from __future__ import annotations

import ctypes
import re
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from components_references import SHAPES, scipy_labels
from cuda_emulator import compile_emulated
from kernel_builds import assert_builds_cleanly

import vyre_async as va
from vyre_async.algorithms import components
from vyre_async.algorithms.components import _layout
from vyre_async.kernels import Kernel

#: Rounds after done that must change nothing.
PAST_DONE = 3


@pytest.mark.usefixtures("private_kernel_cache")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kernel", components.COMPONENTS_KERNELS, ids=lambda k: k.name)
def test_components_kernel_compiles_without_warnings(kernel: Kernel, arch: str) -> None:
    """Each components kernel builds to a CUBIN with NVRTC, and NVRTC has nothing to say."""
    assert_builds_cleanly(kernel, arch)


def test_define_header_states_the_python_constants() -> None:
    """The CUDA C's #define header and the Python constants agree, name for name."""
    folder = resources.files("vyre_async.algorithms.components")
    text = folder.joinpath("components_defines.cuh").read_text("utf-8")
    stated = dict(re.findall(r"^#define (\w+) (\S+)$", text, re.MULTILINE))
    assert stated == {name: str(value) for name, value in _layout.CUDA_DEFINES.items()}


def _call(kernel: Kernel, arrays: dict[str, np.ndarray], **scalars: object) -> None:
    """One launch as the CPU backend makes it: bind (validates), then the reference."""
    names = {p.name for p in kernel.buffer_params}
    call = kernel.bind({k: v for k, v in arrays.items() if k in names}, scalars)
    assert kernel.reference is not None
    kernel.reference(arrays, call.scalars)


def _poisoned(graph: va.graphs.CsrGraph) -> dict[str, np.ndarray]:
    """The graph (read-only, offsets int64 as a replica holds them) and garbage scratch."""
    offsets = graph.offsets.astype(np.int64)
    offsets.flags.writeable = False
    return {
        "offsets": offsets,
        "indices": graph.indices,
        "parent": np.full(graph.num_vertices, -7, np.int32),
        "state": np.full(components.COMPONENTS_STATE_WORDS, 77, np.int32),
    }


def _round(arrays: dict[str, np.ndarray], skip_reverse: bool) -> None:
    _call(components.cc_hook, arrays, skip_reverse=int(skip_reverse))
    for _ in range(components.JUMPS_PER_ROUND):
        _call(components.cc_jump, arrays)
    _call(components.cc_check, arrays)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_references_stepped_to_done_give_scipys_components(
    rng: np.random.Generator, shape: str
) -> None:
    """init then rounds until done: the smallest id of each weak component (SciPy's
    components), on poisoned scratch; rounds past done change nothing."""
    graph = SHAPES[shape](rng)
    arrays = _poisoned(graph)
    _call(components.cc_init, arrays)
    rounds = 0
    while not arrays["state"][components.STATE_DONE]:
        _round(arrays, graph.symmetric)
        rounds += 1
        assert rounds <= graph.num_vertices + 1, "the rounds do not end"
    np.testing.assert_array_equal(arrays["parent"], scipy_labels(graph))
    assert arrays["state"][components.STATE_ROUNDS] == rounds
    settled = {name: array.copy() for name, array in arrays.items()}
    for _ in range(PAST_DONE):
        _round(arrays, graph.symmetric)
    for name, array in arrays.items():
        np.testing.assert_array_equal(array, settled[name], err_msg=name)


def test_skipping_reverse_edges_of_a_symmetric_graph_gives_the_same_labels(
    rng: np.random.Generator,
) -> None:
    """On a symmetric graph, hooking each edge one way gives what hooking both ways gives."""
    graph = SHAPES["many_parts_symmetric"](rng)
    labels = []
    for skip in (False, True):
        arrays = _poisoned(graph)
        _call(components.cc_init, arrays)
        while not arrays["state"][components.STATE_DONE]:
            _round(arrays, skip)
        labels.append(arrays["parent"])
    np.testing.assert_array_equal(labels[0], labels[1])
    np.testing.assert_array_equal(labels[1], scipy_labels(graph))


def _shuffled_round(
    graph: va.graphs.CsrGraph, parent: np.ndarray, rng: np.random.Generator
) -> bool:
    """One round as a device may run it: each edge's hook, then each vertex's jumps, one
    at a time in a random order, every read seeing the updates made before it."""
    changed = False
    src = np.repeat(np.arange(graph.num_vertices), np.diff(graph.offsets))
    for j in rng.permutation(graph.num_edges):
        u, v = int(src[j]), int(graph.indices[j])
        pu, pv = int(parent[u]), int(parent[v])
        if pu != pv:
            lo, hi = min(pu, pv), max(pu, pv)
            parent[hi] = min(parent[hi], lo)
            end = u if pu == hi else v
            parent[end] = min(parent[end], lo)
            changed = True
    for _ in range(components.JUMPS_PER_ROUND):
        for v in rng.permutation(graph.num_vertices):
            grand = parent[parent[v]]
            if grand != parent[v]:
                parent[v] = grand
                changed = True
    return changed


@pytest.mark.parametrize("shape", ["rmat_directed", "many_parts", "chain", "self_loops"])
def test_any_order_of_the_updates_ends_at_the_smallest_ids(
    rng: np.random.Generator, shape: str
) -> None:
    """Hooks and jumps applied one by one in random orders (as the device's threads may
    interleave them) end at SciPy's components, each labelled by its smallest id."""
    graph = SHAPES[shape](rng)
    parent = np.arange(graph.num_vertices, dtype=np.int32)
    rounds = 0
    while _shuffled_round(graph, parent, rng):
        rounds += 1
        assert rounds <= graph.num_vertices + 1, "the rounds do not end"
    np.testing.assert_array_equal(parent, scipy_labels(graph))


class _Emulated:
    """The kernels' CUDA C on the CPU emulator: real threads, racing on the parents."""

    def __init__(self, folder: Path) -> None:
        source = "\n".join(kernel.source for kernel in components.COMPONENTS_KERNELS)
        self.lib = compile_emulated(source, {}, folder)

    def launch(self, name: str, grid: int, block: int, *args: object) -> None:
        converted = [
            ctypes.c_void_p(a.ctypes.data) if isinstance(a, np.ndarray) else a for a in args
        ]
        getattr(self.lib, f"launch_{name}")(ctypes.c_uint(grid), ctypes.c_uint(block), *converted)

    def label(self, graph: va.graphs.CsrGraph, skip_reverse: bool) -> tuple[np.ndarray, int]:
        """Labels and rounds, launch for launch as a run makes them (small grids, so the
        grid-stride loops take several passes)."""
        n = ctypes.c_int(graph.num_vertices)
        offsets = graph.offsets.astype(np.int64)
        indices = np.ascontiguousarray(graph.indices)
        parent = np.full(max(graph.num_vertices, 1), -7, np.int32)
        state = np.full(components.COMPONENTS_STATE_WORDS, 77, np.int32)
        self.launch("cc_init", 2, 64, parent, state, n)
        rounds = 0
        while not state[components.STATE_DONE]:
            self.launch("cc_hook", 2, 32, offsets, indices, parent, state,
                        ctypes.c_int(int(skip_reverse)), n)  # fmt: skip
            for _ in range(components.JUMPS_PER_ROUND):
                self.launch("cc_jump", 2, 64, parent, state, n)
            self.launch("cc_check", 1, 32, state)
            rounds += 1
            assert rounds <= graph.num_vertices + 1, "the rounds do not end"
        assert state[components.STATE_ROUNDS] == rounds
        return parent[: graph.num_vertices], rounds


@pytest.fixture(scope="module")
def emulated(tmp_path_factory: pytest.TempPathFactory) -> _Emulated:
    """The kernels' source compiled with the emulator."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed: the CUDA C emulator needs it")
    return _Emulated(tmp_path_factory.mktemp("emulator"))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_cuda_source_run_by_the_emulator_gives_scipys_components(
    emulated: _Emulated, rng: np.random.Generator, shape: str
) -> None:
    """The CUDA C, threads racing on the emulator, labels each weak component (SciPy's)
    with its smallest id; symmetric graphs with each edge taken one way."""
    graph = SHAPES[shape](rng)
    labels, _ = emulated.label(graph, graph.symmetric)
    np.testing.assert_array_equal(labels, scipy_labels(graph))
