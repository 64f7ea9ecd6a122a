#ifndef MSBFS_PART_LISTS
#define MSBFS_PART_LISTS
#include "msbfs_part_prelude.cuh"

// Walking adjacency lists on a split graph with the lists' edges, not only their
// vertices, spread over the grid, as the single-device msbfs_expand does. A team of
// `group` lanes (the word count rounded up to a power of two) works on one vertex or
// edge, lane w of the team on its word w, so a team reads and writes a vertex's
// consecutive words. Three sizes of list:
// - narrow (fewer than PART_WIDE_MIN_DEGREE edges): the vertex's team walks it;
// - wide (up to the hub degree): the whole warp walks it, 32 / group edges a pass;
// - hub (PART_HUB_LANE_EDGES / group edges or more): cut into chunks of that many
//   edges over the whole edge array, one warp a chunk (the *_hubs kernels).

#define PART_FULL_MASK 0xffffffffu

__device__ __forceinline__ int part_group(int words)
{
    int group = 1;
    while (group < words) {
        group <<= 1;
    }
    return group;
}

// Edges from which a list is a hub's, for `group` lanes per team.
__device__ __forceinline__ long long part_hub_min(int group)
{
    return PART_HUB_LANE_EDGES / group;
}

// The lanes of the calling lane's team (lanes slot * group .. slot * group + group - 1).
__device__ __forceinline__ unsigned part_team_mask(int group, int slot)
{
    return group == 32 ? PART_FULL_MASK : ((1u << group) - 1u) << (slot * group);
}

// i = t / words and *w = t % words, with a 32-bit division while t fits 32 bits (a
// part of 2^27 vertices of 16 words does) instead of a 64-bit one.
__device__ __forceinline__ long long part_split(long long t, int words, int* w)
{
    if (t >= 0 && t < 0x100000000LL) {
        const unsigned q = (unsigned)t / (unsigned)words;
        *w = (int)((unsigned)t - q * (unsigned)words);
        return (long long)q;
    }
    const long long q = t / words;
    *w = (int)(t - q * words);
    return q;
}

// The vertex whose list holds edge j, given offsets[lo] <= j and j < offsets[hi] (or
// hi the vertex count): a 32-way search, one probe per lane. Always in [lo, hi).
// All 32 lanes must call it with the same arguments.
__device__ __forceinline__ long long part_owner_vertex(const long long* __restrict__ offsets,
                                                       long long lo,
                                                       long long hi,
                                                       long long j,
                                                       int lane)
{
    while (hi - lo > 1) {
        const long long step = (hi - lo + 31) / 32;
        const long long probe = lo + lane * step;
        const bool below = probe < hi && __ldg(&offsets[probe]) <= j;
        const unsigned ballot = __ballot_sync(PART_FULL_MASK, below);
        if (ballot == 0u) {
            break;  // offsets[lo] > j: only a corrupt list gets here; stay at lo
        }
        lo += (31 - __clz(ballot)) * step;
        hi = min(lo + step, hi);
    }
    return lo;
}

// ORs word w of the frontier (recv, every vertex at its global place) over the in-list
// edges [first, last) with the whole warp, 32 / group neighbours a pass, and stops once
// every lane's `need` bits are found. Every lane returns the OR for its word across the
// warp. All 32 lanes must call it with the same first and last.
__device__ __forceinline__ unsigned long long part_warp_pull(
    long long first,
    long long last,
    const int* __restrict__ in_indices,
    const unsigned long long* __restrict__ recv,
    unsigned long long need,
    int words,
    int group,
    int slot,
    int w,
    long long n_total)
{
    const long long slots = 32 / group;
    unsigned long long acc = 0ull;
    for (long long base = first; base < last; base += PART_UNROLL * slots) {
        int u[PART_UNROLL];
#pragma unroll
        for (int k = 0; k < PART_UNROLL; ++k) {
            const long long j = base + k * slots + slot;
            u[k] = j < last ? __ldg(&in_indices[j]) : -1;
        }
        if (w < words) {
#pragma unroll
            for (int k = 0; k < PART_UNROLL; ++k) {
                if (u[k] >= 0 && (long long)u[k] < n_total) {
                    acc |= __ldg(&recv[(long long)u[k] * words + w]);
                }
            }
        }
        // Lanes of one word sit `group` apart: the butterfly leaves each with their OR.
        for (int offset = group; offset < 32; offset <<= 1) {
            acc |= __shfl_xor_sync(PART_FULL_MASK, acc, offset);
        }
        if (__all_sync(PART_FULL_MASK, (acc & need) == need)) {
            break;
        }
    }
    return acc;
}

// ORs `bits` (word w of one frontier vertex) into the outbox word w of each out-
// neighbour in the out-list edges [first, last): the whole warp, 32 / group edges a
// pass, one atomic per (edge, word) with bits.
__device__ __forceinline__ void part_warp_push(long long first,
                                               long long last,
                                               const int* __restrict__ indices,
                                               unsigned long long* __restrict__ send,
                                               unsigned long long bits,
                                               int words,
                                               int group,
                                               int slot,
                                               int w,
                                               long long n_total)
{
    if (bits == 0ull || w >= words) {
        return;
    }
    const long long slots = 32 / group;
    for (long long base = first; base < last; base += PART_UNROLL * slots) {
        int v[PART_UNROLL];
#pragma unroll
        for (int k = 0; k < PART_UNROLL; ++k) {
            const long long j = base + k * slots + slot;
            v[k] = j < last ? __ldg(&indices[j]) : -1;
        }
#pragma unroll
        for (int k = 0; k < PART_UNROLL; ++k) {
            if (v[k] >= 0 && (long long)v[k] < n_total) {
                atomicOr(&send[(long long)v[k] * words + w], bits);
            }
        }
    }
}
#endif
