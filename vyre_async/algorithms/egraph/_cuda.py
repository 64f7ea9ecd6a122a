"""CUDA C sources of the e-graph bookkeeping kernels (see :mod:`._egraph`).

Every kernel reads the packed e-graph image (one ``u32`` array) through word offsets
passed as scalars; the session resolves and checks those offsets against the
resident buffer before it launches anything.
"""

from __future__ import annotations

from ._state import (
    EMPTY_SLOT,
    STATE_CHANGED,
    STATE_CONVERGED,
    STATE_DONE,
    STATE_MAX_ROUNDS,
    STATE_MERGES,
    STATE_ROUNDS,
)

DEFINES = "".join(
    f"#define {name} {value}\n"
    for name, value in (
        ("EMPTY_SLOT", f"{EMPTY_SLOT}u"),
        ("S_DONE", STATE_DONE),
        ("S_CHANGED", STATE_CHANGED),
        ("S_ROUNDS", STATE_ROUNDS),
        ("S_MAX_ROUNDS", STATE_MAX_ROUNDS),
        ("S_MERGES", STATE_MERGES),
        ("S_CONVERGED", STATE_CONVERGED),
    )
)

#: Union-find on the ``parent`` array: roots point at themselves, every hook points a
#: larger root at a smaller one, so a class's root is always its smallest member.
UNION_FIND = r"""
__device__ __forceinline__ unsigned load_parent(const unsigned* parent, unsigned x)
{
    // Other threads hook roots during the launch: always read the current word.
    return *((volatile const unsigned*)&parent[x]);
}

__device__ __forceinline__ unsigned find_root(const unsigned* parent, unsigned x)
{
    unsigned p = load_parent(parent, x);
    while (p != x) {
        x = p;
        p = load_parent(parent, x);
    }
    return x;
}

// Merges the classes of a and b; true when this call made the merge.
__device__ __forceinline__ bool hook(unsigned* parent, unsigned a, unsigned b)
{
    while (true) {
        a = find_root(parent, a);
        b = find_root(parent, b);
        if (a == b) {
            return false;
        }
        if (a < b) {
            const unsigned t = a;
            a = b;
            b = t;
        }
        // a > b: a lost its root status only if another thread hooked it meanwhile.
        if (atomicCAS(&parent[a], a, b) == a) {
            return true;
        }
    }
}
"""

INIT_SOURCE = (
    DEFINES
    + r"""
extern "C" __global__ void egraph_init(unsigned* __restrict__ parent,
                                       int* __restrict__ state,
                                       int max_rounds,
                                       long long num_classes)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < num_classes;
         c += stride) {
        parent[c] = (unsigned)c;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        for (int i = 0; i < 8; ++i) {
            state[i] = 0;
        }
        state[S_MAX_ROUNDS] = max_rounds;
        state[S_DONE] = max_rounds <= 0 ? 1 : 0;
    }
}
"""
)

COMPRESS_SOURCE = (
    DEFINES
    + UNION_FIND
    + r"""
extern "C" __global__ void egraph_compress(unsigned* __restrict__ parent,
                                           const int* __restrict__ state,
                                           int force,
                                           long long num_classes)
{
    if (state[S_DONE] != 0 && force == 0) {
        return;
    }
    // No hooks run during this launch: concurrent writes only shortcut a class to
    // its root, so every path still ends at the same root.
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < num_classes;
         c += stride) {
        parent[c] = find_root(parent, (unsigned)c);
    }
}
"""
)

REWRITE_SOURCE = (
    DEFINES
    + r"""
extern "C" __global__ void egraph_rewrite(const unsigned* __restrict__ image,
                                          const unsigned* __restrict__ parent,
                                          unsigned* __restrict__ canon,
                                          const int* __restrict__ state,
                                          long long children_at,
                                          long long num_children)
{
    if (state[S_DONE] != 0) {
        return;
    }
    const unsigned* children = image + children_at;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < num_children;
         j += stride) {
        canon[j] = __ldg(&parent[__ldg(&children[j])]);
    }
}
"""
)

CLEAR_SOURCE = (
    DEFINES
    + r"""
extern "C" __global__ void egraph_clear(unsigned* __restrict__ table,
                                        const int* __restrict__ state,
                                        long long table_size)
{
    if (state[S_DONE] != 0) {
        return;
    }
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < table_size;
         i += stride) {
        table[i] = EMPTY_SLOT;
    }
}
"""
)

CHECK_SOURCE = (
    DEFINES
    + r"""
extern "C" __global__ void egraph_check(int* __restrict__ state)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || state[S_DONE] != 0) {
        return;
    }
    state[S_ROUNDS] += 1;
    const int changed = state[S_CHANGED];
    state[S_CHANGED] = 0;
    state[S_CONVERGED] = changed == 0 ? 1 : 0;
    if (changed == 0 || state[S_ROUNDS] >= state[S_MAX_ROUNDS]) {
        state[S_DONE] = 1;
    }
}
"""
)
