"""CUDA C sources of the e-graph signature and merge kernels (see :mod:`._egraph`)."""

from __future__ import annotations

from ._cuda import DEFINES, UNION_FIND

#: The signature hash; ``_egraph_reference.row_signatures`` is its NumPy twin.
HASH = r"""
__device__ __forceinline__ unsigned fmix32(unsigned h)
{
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

// A sum of per-child terms (each mixing the child with its position), so the
// host reference can add them in any order and land on the same bits.
__device__ __forceinline__ unsigned row_signature(unsigned op, unsigned len,
                                                  const unsigned* __restrict__ canon,
                                                  unsigned long long start)
{
    unsigned acc = fmix32(op * 0xC2B2AE3Du + len * 0x27D4EB2Fu + 0x165667B1u);
    for (unsigned j = 0; j < len; ++j) {
        acc += fmix32((canon[start + j] ^ fmix32(j + 0x61C88647u)) * 0x9E3779B1u);
    }
    return fmix32(acc);
}
"""

SIGNATURES_SOURCE = (
    DEFINES
    + HASH
    + r"""
extern "C" __global__ void egraph_signatures(const unsigned* __restrict__ image,
                                             const unsigned* __restrict__ canon,
                                             unsigned* __restrict__ signatures,
                                             const int* __restrict__ state,
                                             long long ops_at,
                                             long long starts_at,
                                             long long lens_at,
                                             long long num_rows)
{
    if (state[S_DONE] != 0) {
        return;
    }
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < num_rows;
         r += stride) {
        signatures[r] = row_signature(__ldg(&image[ops_at + r]), __ldg(&image[lens_at + r]),
                                      canon, __ldg(&image[starts_at + r]));
    }
}
"""
)

MERGE_SOURCE = (
    DEFINES
    + UNION_FIND
    + r"""
// Rows a and b have the same operator and the same canonical children (the keys
// themselves, not only their hashes).
__device__ __forceinline__ bool same_key(const unsigned* image, const unsigned* canon,
                                         const unsigned* signatures, long long ops_at,
                                         long long starts_at, long long lens_at,
                                         unsigned a, unsigned b)
{
    if (signatures[a] != signatures[b] || image[ops_at + a] != image[ops_at + b]) {
        return false;
    }
    const unsigned len = image[lens_at + a];
    if (image[lens_at + b] != len) {
        return false;
    }
    const unsigned long long sa = image[starts_at + a];
    const unsigned long long sb = image[starts_at + b];
    for (unsigned j = 0; j < len; ++j) {
        if (canon[sa + j] != canon[sb + j]) {
            return false;
        }
    }
    return true;
}

// One insert per row into an open-addressing table keyed by signature (linear
// probing, verified keys). The first row of a key claims a slot; every later row of
// that key meets it on its probe path and merges their e-classes. Slots only ever
// go from empty to taken, so two rows of one key cannot miss each other.
extern "C" __global__ void egraph_merge(const unsigned* __restrict__ image,
                                        unsigned* __restrict__ parent,
                                        const unsigned* __restrict__ canon,
                                        const unsigned* __restrict__ signatures,
                                        unsigned* __restrict__ table,
                                        int* __restrict__ state,
                                        long long eclass_at,
                                        long long ops_at,
                                        long long starts_at,
                                        long long lens_at,
                                        long long num_rows,
                                        long long table_size)
{
    if (state[S_DONE] != 0) {
        return;
    }
    const unsigned long long mask = (unsigned long long)table_size - 1ull;
    int merges = 0;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < num_rows;
         r += stride) {
        unsigned long long slot = signatures[r] & mask;
        while (true) {
            const unsigned held = atomicCAS(&table[slot], EMPTY_SLOT, (unsigned)r);
            if (held == EMPTY_SLOT) {
                break;
            }
            if (same_key(image, canon, signatures, ops_at, starts_at, lens_at, held,
                         (unsigned)r)) {
                if (hook(parent, image[eclass_at + held], image[eclass_at + r])) {
                    ++merges;
                }
                break;
            }
            slot = (slot + 1ull) & mask;
        }
    }
    if (merges != 0) {
        atomicAdd(&state[S_MERGES], merges);
        atomicExch(&state[S_CHANGED], 1);
    }
}
"""
)
