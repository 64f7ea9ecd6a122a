#include "egraph_defines.cuh"
#include "egraph_union_find.cuh"

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
