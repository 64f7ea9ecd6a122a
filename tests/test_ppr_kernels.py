"""The personalized PageRank kernels themselves: NVRTC builds, the #define header, the
widths a run takes, and the CUDA C run by the CPU emulator launch for launch against
each kernel's NumPy reference (what the CPU backend runs)."""

from __future__ import annotations

import ctypes
import re
import shutil
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cuda_emulator import compile_emulated
from kernel_builds import assert_builds_cleanly

from vyre_async.algorithms import ppr
from vyre_async.algorithms.ppr import _layout
from vyre_async.kernels import BufferParam, Kernel

KERNELS = (*ppr.PPR_KERNELS, *ppr.PPR_TOP_KERNELS)


@pytest.mark.usefixtures("private_kernel_cache")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_ppr_kernel_compiles_without_warnings(kernel: Kernel, arch: str) -> None:
    """Each personalized PageRank kernel builds to a CUBIN with NVRTC, without a warning."""
    assert_builds_cleanly(kernel, arch)


def test_define_header_states_the_python_constants() -> None:
    """ppr_defines.cuh and the Python layout constants agree, name for name."""
    text = resources.files("vyre_async.algorithms.ppr").joinpath("ppr_defines.cuh").read_text()
    stated = dict(re.findall(r"^#define (\w+) (\S+)$", text, re.MULTILINE))
    assert stated == {name: str(value) for name, value in _layout.CUDA_DEFINES.items()}


def test_every_count_of_seeds_gets_a_width_the_kernels_take() -> None:
    """columns_for pads 1..1024 seeds to a valid width; columns_within never rounds past
    its limit, so a count up to it rounds up to a width that fits too."""
    for count in range(1, ppr.MAX_COLUMNS + 1):
        width = ppr.columns_for(count)
        assert ppr.valid_columns(width)
        assert count <= width < max(2 * count, count + 128)
    for limit in range(1, 1200):
        widest = _layout.columns_within(limit)
        assert ppr.valid_columns(widest)
        assert widest <= limit
        assert all(ppr.columns_for(c) <= widest for c in range(1, widest + 1))
    assert [ppr.valid_columns(w) for w in (0, 3, 48, 96, 1056)] == [False] * 2 + [False, True] + [
        False
    ]


# ------------------------------------------------------------------ the emulator
#: What the kernels use beyond the emulator's shim: shuffles of any 4- or 8-byte type,
#: votes, float and int atomics, float4, and launches over a 2-D grid.
EXTRA_SHIM = r"""
#include <algorithm>
#include <cmath>
#include <cstring>
struct float4 { float x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline unsigned __float_as_uint(float x) { unsigned u; std::memcpy(&u, &x, 4); return u; }
template <typename T> static inline unsigned long long bits_of(T v) {
    unsigned long long b = 0; std::memcpy(&b, &v, sizeof(T)); return b;
}
template <typename T> static inline T of_bits(unsigned long long b) {
    T v; std::memcpy(&v, &b, sizeof(T)); return v;
}
template <typename T> static inline T exchange_from(T value, int lane, bool inside) {
    unsigned long long* slots = warp_exchange(bits_of(value));
    const T result = inside ? of_bits<T>(slots[lane]) : value;
    warp_done();
    return result;
}
template <typename T> static inline T __shfl_sync(unsigned, T value, int src) {
    return exchange_from(value, src & 31, true);
}
template <typename T> static inline T __shfl_up_sync(unsigned, T value, int delta) {
    const int lane = (int)(threadIdx.x % 32);
    return exchange_from(value, lane - delta, lane >= delta);
}
template <typename T> static inline T __shfl_down_sync(unsigned, T value, int delta) {
    const int lane = (int)(threadIdx.x % 32);
    return exchange_from(value, lane + delta, lane + delta < 32);
}
template <typename T> static inline T __shfl_xor_sync(unsigned, T value, int mask) {
    return exchange_from(value, (int)(threadIdx.x % 32) ^ mask, true);
}
static inline bool __any_sync(unsigned mask, int predicate) {
    return __ballot_sync(mask, predicate) != 0u;
}
static inline float atomicAdd(float* address, float value) {
    return std::atomic_ref<float>(*address).fetch_add(value);
}
static inline int atomicAdd(int* address, int value) {
    return std::atomic_ref<int>(*address).fetch_add(value);
}
template <typename Kernel>
static void launch_2d(unsigned gx, unsigned gy, unsigned block, Kernel body) {
    if (block % 32 != 0) return;
    gridDim.x = gx;
    gridDim.y = gy;
    blockDim.x = block;
    std::barrier<> barrier(block);
    block_barrier = &barrier;
    std::vector<std::barrier<>*> warps;
    for (unsigned w = 0; w < block / 32; ++w) warps.push_back(new std::barrier<>(32));
    warp_barriers = warps;
    for (unsigned by = 0; by < gy; ++by) {
        for (unsigned bx = 0; bx < gx; ++bx) {
            std::vector<std::thread> threads;
            for (unsigned t = 0; t < block; ++t) {
                threads.emplace_back([=] {
                    blockIdx.x = bx;
                    blockIdx.y = by;
                    threadIdx.x = t;
                    body();
                });
            }
            for (auto& thread : threads) thread.join();
        }
    }
    for (auto* w : warps) delete w;
    gridDim.y = 1;
}
"""

_ENTRY = re.compile(r'extern "C" __global__ void (\w+)\((.*?)\)\s*\{', re.S)
_CTYPES: dict[str, type[Any]] = {
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint32": ctypes.c_uint32,
    "float32": ctypes.c_float,
}


def _grid_launcher(source: str) -> str:
    """``extern "C" grid2_<name>(gx, gy, block, args...)`` for the kernel in ``source``."""
    name, params = _ENTRY.findall(source)[0]
    declared = [
        " ".join(p.split()).replace("__restrict__", "__restrict") for p in params.split(",")
    ]
    names = [p.replace("*", " ").split()[-1] for p in declared]
    signature = ", ".join(["unsigned gx", "unsigned gy", "unsigned block", *declared])
    return (
        f'extern "C" void grid2_{name}({signature}) {{\n'
        f"    launch_2d(gx, gy, block, [=] {{ {name}({', '.join(names)}); }});\n}}\n"
    )


class Emulated:
    """Each kernel's CUDA C compiled for the CPU emulator, launched as the backend would:
    the bound launch shape and the argument block in signature order."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._libraries: dict[str, ctypes.CDLL] = {}

    def _library(self, kernel: Kernel) -> ctypes.CDLL:
        if kernel.name not in self._libraries:
            source = EXTRA_SHIM + kernel.source + _grid_launcher(kernel.source)
            self._libraries[kernel.name] = compile_emulated(source, {}, self._folder)
        return self._libraries[kernel.name]

    def launch(self, kernel: Kernel, arrays: Mapping[str, np.ndarray], **scalars: object) -> None:
        call = kernel.bind(arrays, scalars)
        shape = call.launch
        if shape.empty:
            return
        args: list[Any] = []
        for p in kernel.params:
            if isinstance(p, BufferParam):
                args.append(ctypes.c_void_p(arrays[p.name].ctypes.data))
            else:
                args.append(_CTYPES[p.dtype.name](call.scalars[p.name].item()))
        launcher = getattr(self._library(kernel), f"grid2_{kernel.entry}")
        launcher(
            ctypes.c_uint(shape.grid[0]),
            ctypes.c_uint(shape.grid[1]),
            ctypes.c_uint(shape.block[0]),
            *args,
        )


@pytest.fixture(scope="module")
def emulated(tmp_path_factory: pytest.TempPathFactory) -> Emulated:
    """The kernels' CUDA C on the emulator (one library per kernel, compiled once)."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed: the CUDA C emulator needs it")
    return Emulated(tmp_path_factory.mktemp("ppr-emulator"))


def _reference(kernel: Kernel, arrays: dict[str, np.ndarray], **scalars: object) -> None:
    call = kernel.bind(arrays, scalars)
    assert kernel.reference is not None
    kernel.reference(arrays, call.scalars)


def _graph(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """A directed graph's in-lists with a hub whose list spans several gather chunks, self
    loops, vertices without in-edges and vertices without out-edges."""
    src = np.concatenate([rng.integers(0, n, 400), rng.integers(0, n, 300), np.arange(0, n, 7)])
    dst = np.concatenate([rng.integers(0, n, 400), np.full(300, 3), np.arange(0, n, 7)])
    keep = ~np.isin(dst, [5, 6]) & ~np.isin(src, [9, 10, 11])
    pairs = np.unique(np.stack([dst[keep], src[keep]], axis=1), axis=0)
    hub = np.stack([np.full(300, 3), rng.integers(12, n, 300)], axis=1)
    pairs = np.concatenate([pairs, hub])  # repeated edges into the hub count as edges
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    in_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(pairs[:, 0], minlength=n), out=in_offsets[1:])
    return {
        "in_offsets": in_offsets,
        "in_indices": pairs[:, 1].astype(np.int32),
        "out_degree": np.bincount(pairs[:, 1], minlength=n).astype(np.int32),
    }


def _both(
    emulated: Emulated,
    kernel: Kernel,
    device: dict[str, np.ndarray],
    host: dict[str, np.ndarray],
    **scalars: object,
) -> None:
    emulated.launch(kernel, device, **scalars)
    _reference(kernel, host, **scalars)


def _assert_same(device: dict[str, np.ndarray], host: dict[str, np.ndarray], *names: str) -> None:
    """Equal arrays; float ones to float32 rounding (an L1 change sums differences of
    nearly equal ranks, so a few ulps of each rank count in absolute terms)."""
    for name in names:
        if device[name].dtype.kind == "f":
            atol = 2e-6 if name == "diff" else 1e-7
            np.testing.assert_allclose(device[name], host[name], rtol=2e-5, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(device[name], host[name], err_msg=name)


@pytest.mark.parametrize(
    ("width", "count", "dense"),
    [
        (1, 1, False),
        (1, 1, True),
        (4, 3, False),
        (32, 32, False),
        (64, 33, False),
        (128, 100, False),
    ],
)
def test_iteration_kernels_on_the_emulator_equal_their_references(
    emulated: Emulated, rng: np.random.Generator, width: int, count: int, dense: bool
) -> None:
    """init, then gather/update/check for several iterations, then rows: the CUDA C and
    the NumPy references leave the same arrays, for narrow, wide and float4 widths and a
    dense personalization, with columns that stop early (and, at width 64, a tile of
    columns that all stopped)."""
    n = 40
    graph = _graph(rng, n)
    seeds = np.full(width, -1, np.int32)
    seeds[:count] = rng.integers(0, n, count)
    seeds[0] = 5  # no in-edges
    seeds[count - 1] = 9  # no out-edges: its ranks never change, so it stops at once
    personal = np.zeros(1, np.float32)
    if dense:
        personal = (rng.random(n) * (rng.random(n) < 0.5)).astype(np.float32)
        personal /= personal.sum()
    arrays: dict[str, np.ndarray] = {
        **graph,
        "shares": np.full(graph["in_indices"].size, -3.0, np.float32),
        "seeds": seeds,
        "personal": personal,
        "rank_a": np.full(n * width, -5.0, np.float32),
        "rank_b": np.full(n * width, -6.0, np.float32),
        "mass": np.full(width, -1.0, np.float32),
        "mass_next": np.full(width, -1.0, np.float32),
        "diff": np.full(width, -1.0, np.float32),
        "active": np.full(width, 7, np.int32),
        "state": np.full(ppr.STATE_WORDS, -1.0, np.float32),
        "rows": np.full(n * width, -8.0, np.float32),
    }
    device = {k: v.copy() for k, v in arrays.items()}
    host = {k: v.copy() for k, v in arrays.items()}
    shares = {"in_indices", "out_degree", "shares"}
    _both(emulated, ppr.ppr_shares, *({k: d[k] for k in shares} for d in (device, host)))
    _assert_same(device, host, "shares")
    per_column = ("mass", "mass_next", "diff", "active")
    init = ("out_degree", "seeds", "personal", *per_column, "state")

    def bound(arrays: dict[str, np.ndarray], step: str, src: str, dst: str) -> dict[str, Any]:
        if step == "init":
            return {k: arrays[k] for k in init} | {"rank": arrays[src], "other": arrays[dst]}
        if step == "gather":
            names = ("in_offsets", "in_indices", "shares", "active", "state")
            return {k: arrays[k] for k in names} | {"src": arrays[src], "dst": arrays[dst]}
        if step == "update":
            names = ("out_degree", "seeds", "personal", *per_column, "state")
            return {k: arrays[k] for k in names} | {
                "rank_in": arrays[src],
                "rank_out": arrays[dst],
            }
        return {k: arrays[k] for k in (*per_column, "state")}

    dangling = float(personal[graph["out_degree"] == 0].sum()) if dense else 0.0
    scalars = {"damping": 0.85, "tol": 1e-4, "max_iter": 40, "dense": int(dense)}
    scalars["dense_mass"] = dangling
    _both(emulated, ppr.ppr_init, bound(device, "init", "rank_a", "rank_b"),
          bound(host, "init", "rank_a", "rank_b"), **scalars)  # fmt: skip
    _assert_same(device, host, "rank_a", "rank_b", *per_column, "state")
    src, dst = "rank_a", "rank_b"
    for _ in range(12):
        for step, kernel in (("gather", ppr.ppr_gather), ("update", ppr.ppr_update)):
            _both(emulated, kernel, bound(device, step, src, dst), bound(host, step, src, dst))
            _assert_same(device, host, src, dst, *per_column)
            # Each kernel starts from the same arrays on both sides, so float32 rounding
            # never decides a column's stop differently.
            for name in (src, dst, *per_column):
                device[name][:] = host[name]
        _both(emulated, ppr.ppr_check, bound(device, "check", src, dst),
              bound(host, "check", src, dst))  # fmt: skip
        _assert_same(device, host, *per_column, "state")
        src, dst = dst, src
    rows = {"ranks": host[src], "seeds": host["seeds"]}
    _both(emulated, ppr.ppr_rows, rows | {"rows": device["rows"]}, rows | {"rows": host["rows"]},
          count=count)  # fmt: skip
    np.testing.assert_array_equal(device["rows"], host["rows"])
    if not dense:
        assert host["active"][count - 1 :].sum() == 0  # stopped, and padding never iterates
    assert host["state"][ppr.STATE_ITERATIONS] >= 1


def _select(
    run: Any, ranks: np.ndarray, count: int, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A top-k select of ``count`` columns of ``ranks`` (n, W), launch for launch."""
    n, width = ranks.shape
    arrays = {
        "ranks": ranks.ravel(),
        "prefix": np.full(width, 5, np.uint64),
        "need": np.full(width, -2, np.int32),
        "shift": np.full(width, 99, np.int32),
        "taken": np.full(width, -4, np.int32),
        "hist": np.full(width * 256, 9, np.uint32),
        "top_vertex": np.full(width * k, -1, np.int32),
        "top_rank": np.full(width * k, -1.0, np.float32),
    }
    select = {name: arrays[name] for name in ("prefix", "need", "shift", "hist")}
    run(ppr.ppr_top_init, {**select, "taken": arrays["taken"]}, count=count, k=k)
    hist = {name: arrays[name] for name in ("ranks", "prefix", "shift", "hist")}
    for _ in range(ppr.top_passes(n)):
        run(ppr.ppr_top_hist, hist)
        run(ppr.ppr_top_select, select, id_shift=_layout.id_shift(n))
    collect = ("ranks", "prefix", "taken", "top_vertex", "top_rank")
    run(ppr.ppr_top_collect, {name: arrays[name] for name in collect}, count=count, k=k)
    return arrays["taken"], arrays["top_vertex"], arrays["top_rank"]


def _tied_ranks(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    """Ranks in six levels (many exact ties), zeros among them, and a negative zero."""
    ranks = (rng.integers(0, 6, (n, width)) / 7).astype(np.float32)
    ranks[rng.random((n, width)) < 0.3] = 0.0
    ranks[n // 2 :, 0] = -0.0
    return ranks


def _check_select(run: Any, ranks: np.ndarray, count: int, k: int) -> None:
    width = ranks.shape[1]
    want = np.argsort(-np.abs(ranks), axis=0, kind="stable")[:k].T
    taken, vertices, values = _select(run, ranks.copy(), count, k)
    assert taken[:count].tolist() == [k] * count
    assert taken[count:].tolist() == [0] * (width - count)
    packed = ppr.pack_top(vertices.reshape(width, k)[:count], values.reshape(width, k)[:count])
    found = ppr.top_ranks(packed)
    np.testing.assert_array_equal(found.vertices, want[:count])
    np.testing.assert_array_equal(
        np.abs(found.ranks), np.abs(ranks[want[:count], np.arange(count)[:, None]])
    )


@pytest.mark.parametrize(
    ("n", "width", "count", "k"), [(1, 1, 1, 1), (300, 4, 3, 7), (300, 32, 20, 50), (40, 2, 2, 40)]
)
def test_top_select_on_the_emulator_finds_the_k_largest_ties_to_smaller_vertices(
    emulated: Emulated, rng: np.random.Generator, n: int, width: int, count: int, k: int
) -> None:
    """Ranks with many exact ties: the CUDA C collects exactly k per column (none for
    padding columns), and sorted they are NumPy's k largest, ties to the smaller vertex."""
    _check_select(emulated.launch, _tied_ranks(rng, n, width), count, k)


@pytest.mark.parametrize(
    ("n", "width", "count", "k"),
    [(1, 1, 1, 1), (300, 4, 3, 7), (300, 32, 20, 50), (40, 2, 2, 40), (70_000, 2, 2, 20)],
)
def test_top_select_reference_finds_the_k_largest_ties_to_smaller_vertices(
    rng: np.random.Generator, n: int, width: int, count: int, k: int
) -> None:
    """The same for the NumPy references, up to a graph whose vertex numbers take three
    digits (the skipped top digit of the vertex number included)."""
    _check_select(_reference, _tied_ranks(rng, n, width), count, k)
