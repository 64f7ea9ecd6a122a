"""The device R-MAT builder: its pipeline on the CPU backend, its CUDA C compiled by NVRTC,
and its CUDA C run by a CPU emulator, each against the host generator."""

from __future__ import annotations

import ctypes
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from cuda_emulator import compile_emulated
from numpy.testing import assert_array_equal

import vyre_async as va
from vyre_async.algorithms.rmat import (
    MAX_DEVICE_RMAT_KEYS,
    RMAT_KERNELS,
    device_rmat_bytes,
    rmat_edge_keys,
    rmat_on_device,
)
from vyre_async.errors import UnsupportedFeatureError
from vyre_async.graphs import RmatParams, rmat, rmat_params
from vyre_async.kernels import Kernel, _compile, compile_kernel

ELF_MAGIC = b"\x7fELF"


@pytest.fixture
def kernel_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An empty kernel cache of this test's own."""
    monkeypatch.setenv("VYRE_ASYNC_CACHE_DIR", str(tmp_path / "cache"))
    _compile.clear_memory_cache()
    yield
    _compile.clear_memory_cache()


@pytest.mark.parametrize(("scale", "edge_factor"), [(0, 3), (1, 2), (6, 5), (13, 8)])
async def test_cpu_backend_build_equals_the_host_generator(
    scale: int, edge_factor: int, rng: np.random.Generator
) -> None:
    """rmat_on_device on the CPU backend (the kernels' references, two tiles at scale 13)
    gives rmat()'s arrays."""
    seed = int(rng.integers(1 << 62))
    async with va.open_backend("cpu") as backend:
        graph = await rmat_on_device(backend, rmat_params(scale, edge_factor, seed))
        assert backend.telemetry().resident_buffers_live == 0
    want = rmat(scale, edge_factor, seed)
    assert_array_equal(graph.offsets, want.offsets)
    assert_array_equal(graph.indices, want.indices)
    assert graph.symmetric


async def test_a_graph_beyond_the_builder_is_refused_with_a_fix() -> None:
    """More than MAX_DEVICE_RMAT_KEYS keys: UnsupportedFeatureError naming both numbers."""
    params = RmatParams(26, 32)  # 2 * 32 * 2**26 = 2**32 keys
    async with va.open_backend("cpu") as backend:
        with pytest.raises(UnsupportedFeatureError, match=rf"{2**32} keys.*{MAX_DEVICE_RMAT_KEYS}"):
            await rmat_on_device(backend, params)


def test_device_bytes_are_20_per_key_plus_the_small_arrays() -> None:
    """Scale 22, edge factor 16: 20 bytes per key for 2**27 keys, plus counts and offsets."""
    keys = 2 * 16 * 2**22
    tiles = keys // 65536
    assert device_rmat_bytes(RmatParams(22, 16)) == 20 * keys + 4 * (
        256 * tiles + tiles + 1 + 2**22 + 1
    )


@pytest.mark.usefixtures("kernel_cache")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kernel", RMAT_KERNELS, ids=lambda k: k.name)
def test_every_builder_kernel_compiles_to_a_cuda_elf_image(kernel: Kernel, arch: str) -> None:
    """NVRTC builds each device R-MAT kernel to a CUBIN for Ampere and Hopper."""
    compiled = compile_kernel(kernel, arch)
    assert compiled.image[:4] == ELF_MAGIC
    assert kernel.entry.encode() in compiled.image


class _Emulated:
    """The builder's CUDA C on the CPU emulator, with tiles of ``tile`` keys."""

    def __init__(self, folder: Path, tile: int) -> None:
        self.lib = compile_emulated(rmat_edge_keys.source, {"TILE": tile}, folder)
        self.tile = tile

    def run(self, name: str, grid: int, block: int, *args: object) -> None:
        converted = [
            ctypes.c_void_p(a.ctypes.data) if isinstance(a, np.ndarray) else a for a in args
        ]
        getattr(self.lib, f"launch_{name}")(ctypes.c_uint(grid), ctypes.c_uint(block), *converted)

    def build(self, params: RmatParams) -> tuple[np.ndarray, np.ndarray]:
        """The device pipeline, launch for launch (8-bit radix passes, then compaction)."""
        i32, i64 = ctypes.c_int, ctypes.c_longlong
        thresholds, pairs = params.alias_table()
        n = 2 * params.num_edges
        keys, spare = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
        # Three blocks: the grid-stride loop covers the rest.
        self.run("rmat_edge_keys", 3, 256, thresholds, pairs, params.stream_keys(), keys,
                 i32(params.scale), i32(1), i64(n))  # fmt: skip
        tiles = -(-n // self.tile)
        counts = np.full(256 * tiles, 7, np.uint32)  # poisoned: every entry gets written
        for shift in range(0, 2 * params.scale, 8):
            self.run("radix_histogram", tiles, 256, keys, counts, i32(shift), i64(n),
                     i64(counts.size))  # fmt: skip
            self.run("scan_exclusive", 1, 1024, counts, i64(counts.size))
            self.run("radix_scatter", tiles, 256, keys, spare, counts, i32(shift), i64(n),
                     i64(counts.size))  # fmt: skip
            keys, spare = spare, keys
        starts = np.zeros(tiles + 1, np.uint32)
        offsets = np.full(params.num_vertices + 1, -9, np.int32)
        indices = np.full(n, -9, np.int32)
        self.run("unique_count", tiles, 256, keys, starts, i64(n), i64(starts.size))
        self.run("scan_exclusive", 1, 1024, starts, i64(starts.size))
        self.run("unique_compact", tiles, 256, keys, starts, offsets, indices,
                 i32(params.scale), i64(n), i64(starts.size), i64(offsets.size))  # fmt: skip
        return offsets, indices[: int(starts[tiles])]


@pytest.fixture(scope="module")
def emulated(tmp_path_factory: pytest.TempPathFactory) -> _Emulated:
    """The builder's source compiled with the emulator (tiles of 512 keys, so many tiles)."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed: the CUDA C emulator needs it")
    return _Emulated(tmp_path_factory.mktemp("emulator"), 512)


@pytest.mark.parametrize(("scale", "edge_factor"), [(0, 2), (3, 4), (8, 8)])
def test_cuda_source_run_by_the_emulator_equals_the_host_generator(
    emulated: _Emulated, scale: int, edge_factor: int, rng: np.random.Generator
) -> None:
    """The CUDA C of every builder kernel, one OS thread per CUDA thread (barriers and warp
    intrinsics emulated), builds rmat()'s arrays; scale 8 spans 16 tiles."""
    seed = int(rng.integers(1 << 62))
    offsets, indices = emulated.build(rmat_params(scale, edge_factor, seed))
    want = rmat(scale, edge_factor, seed)
    assert_array_equal(offsets, want.offsets)
    assert_array_equal(indices, want.indices)


def test_emulated_scan_of_many_blocks_is_the_exclusive_prefix_sum(
    emulated: _Emulated, rng: np.random.Generator
) -> None:
    """scan_exclusive over 3000 values (three passes of its 1024-thread block) = np.cumsum."""
    data = rng.integers(0, 1 << 20, 3000).astype(np.uint32)
    want = np.concatenate(([0], np.cumsum(data, dtype=np.uint64)[:-1])).astype(np.uint32)
    emulated.run("scan_exclusive", 1, 1024, data, ctypes.c_longlong(data.size))
    assert_array_equal(data, want)


def test_emulated_radix_pass_is_a_stable_sort_by_the_digit(
    emulated: _Emulated, rng: np.random.Generator
) -> None:
    """One histogram, scan and scatter pass orders keys by one byte, keeping ties in order."""
    keys = rng.integers(0, 1 << 40, 5000, dtype=np.uint64)
    shift = 16
    tiles = -(-keys.size // emulated.tile)
    counts = np.zeros(256 * tiles, np.uint32)
    out = np.zeros_like(keys)
    n, h = ctypes.c_longlong(keys.size), ctypes.c_longlong(counts.size)
    emulated.run("radix_histogram", tiles, 256, keys, counts, ctypes.c_int(shift), n, h)
    emulated.run("scan_exclusive", 1, 1024, counts, h)
    emulated.run("radix_scatter", tiles, 256, keys, out, counts, ctypes.c_int(shift), n, h)
    digit = (keys >> np.uint64(shift)) & np.uint64(255)
    assert_array_equal(out, keys[np.argsort(digit, kind="stable")])
