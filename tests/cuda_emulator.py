"""Run CUDA C kernels on the CPU: one OS thread per CUDA thread, one block at a time.

The kernel source is compiled unchanged by g++ behind a small header that defines what
the kernels use: ``threadIdx``/``blockIdx``/``blockDim``/``gridDim``, ``__shared__``
(a function-static, shared by the block's threads), ``__syncthreads``,
``__syncthreads_count`` and ``__syncthreads_or`` (a barrier over the block), the warp
intrinsics ``__shfl_up_sync``, ``__ballot_sync`` and ``__match_any_sync`` (a barrier over
the warp around an exchange of values), ``atomicAdd``, ``atomicMin`` (on ``int``),
``__ldg``, ``min``, ``max`` and ``__popc``. Each kernel gets an
``extern "C"`` launcher taking the grid and block sizes, then the kernel's arguments.

It checks the logic of the kernels (indexing, tiles, barriers, warp ranks) where no GPU
is present; the GPU tests check the real thing.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

SHIM = r"""
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <thread>
#include <vector>

struct dim3 { unsigned x = 1, y = 1, z = 1; };
static thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static std::barrier<>* block_barrier = nullptr;
static std::vector<std::barrier<>*> warp_barriers;
static unsigned long long warp_slots[32][32];
static std::atomic<int> block_count{0};

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static

static inline void __syncthreads() { block_barrier->arrive_and_wait(); }
static inline int __syncthreads_count(int predicate) {
    if (predicate) block_count.fetch_add(1);
    block_barrier->arrive_and_wait();
    const int total = block_count.load();
    block_barrier->arrive_and_wait();
    if (threadIdx.x == 0) block_count.store(0);
    block_barrier->arrive_and_wait();
    return total;
}
static inline unsigned long long* warp_exchange(unsigned long long value) {
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    warp_slots[warp][lane] = value;
    warp_barriers[warp]->arrive_and_wait();
    return warp_slots[warp];
}
static inline void warp_done() { warp_barriers[threadIdx.x / 32]->arrive_and_wait(); }
static inline unsigned __shfl_up_sync(unsigned, unsigned value, int delta) {
    const unsigned lane = threadIdx.x % 32;
    unsigned long long* slots = warp_exchange(value);
    const unsigned result = lane >= (unsigned)delta ? (unsigned)slots[lane - delta] : value;
    warp_done();
    return result;
}
static inline unsigned __ballot_sync(unsigned, int predicate) {
    unsigned long long* slots = warp_exchange(predicate ? 1 : 0);
    unsigned result = 0;
    for (int i = 0; i < 32; ++i) result |= slots[i] ? (1u << i) : 0u;
    warp_done();
    return result;
}
static inline unsigned __match_any_sync(unsigned, unsigned value) {
    unsigned long long* slots = warp_exchange(value);
    unsigned result = 0;
    for (int i = 0; i < 32; ++i) result |= slots[i] == value ? (1u << i) : 0u;
    warp_done();
    return result;
}
static inline int __syncthreads_or(int predicate) { return __syncthreads_count(predicate) != 0; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline unsigned atomicAdd(unsigned* address, unsigned value) {
    return std::atomic_ref<unsigned>(*address).fetch_add(value);
}
static inline int atomicMin(int* address, int value) {
    std::atomic_ref<int> word(*address);
    int old = word.load();
    while (value < old && !word.compare_exchange_weak(old, value)) {
    }
    return old;
}
template <typename T> static inline T __ldg(const T* address) { return *address; }
using std::max;
using std::min;

template <typename Kernel>
static void launch(unsigned grid, unsigned block, Kernel body) {
    if (block % 32 != 0) return;
    gridDim.x = grid;
    blockDim.x = block;
    std::barrier<> barrier(block);
    block_barrier = &barrier;
    std::vector<std::barrier<>*> warps;
    for (unsigned w = 0; w < block / 32; ++w) warps.push_back(new std::barrier<>(32));
    warp_barriers = warps;
    for (unsigned b = 0; b < grid; ++b) {
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block; ++t) {
            threads.emplace_back([=] {
                blockIdx.x = b;
                threadIdx.x = t;
                body();
            });
        }
        for (auto& thread : threads) thread.join();
    }
    for (auto* w : warps) delete w;
}
"""

_KERNEL = re.compile(r'extern "C" __global__ void (\w+)\((.*?)\)\s*\{', re.S)


def _launchers(source: str) -> str:
    """An ``extern "C" launch_<name>(grid, block, args...)`` for each kernel."""
    out = []
    for name, params in _KERNEL.findall(source):
        declared = [" ".join(p.split()) for p in params.split(",")]
        names = [p.replace("*", " ").split()[-1] for p in declared]
        signature = ", ".join(["unsigned grid", "unsigned block", *declared])
        call = ", ".join(names)
        out.append(
            f'extern "C" void launch_{name}({signature}) {{\n'
            f"    launch(grid, block, [=] {{ {name}({call}); }});\n}}\n"
        )
    return "\n".join(out)


def compile_emulated(source: str, defines: dict[str, int], folder: Path) -> ctypes.CDLL:
    """Compile ``source`` with the shim into a shared library in ``folder`` and load it."""
    text = SHIM + "".join(f"#define {k} {v}\n" for k, v in defines.items())
    text += source.replace("__restrict__", "__restrict") + _launchers(source)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    library = folder / f"emulated-{digest}.so"
    if not library.exists():
        cpp = folder / f"emulated-{digest}.cpp"
        cpp.write_text(text)
        compiler = shutil.which("g++")
        if compiler is None:
            raise RuntimeError("g++ is not installed")
        subprocess.run(  # noqa: S603 - a fixed compiler on a file this function wrote
            [compiler, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-o", library, cpp],
            check=True,
            capture_output=True,
            text=True,
        )
    return ctypes.CDLL(str(library))


def emulator_folder() -> Path:
    """A folder for compiled libraries, private to this process."""
    return Path(tempfile.mkdtemp(prefix="vyre-cuda-emulator-"))
