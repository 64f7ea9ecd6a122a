
typedef unsigned long long u64;
typedef unsigned int u32;

#define BLOCK 256
#define WARPS (BLOCK / 32)
#define RADIX 256
#ifndef TILE
#define TILE 65536
#endif
#define SCAN_BLOCK 1024
#define PERMUTE_ROUNDS 3
#define GOLDEN 0x9E3779B97F4A7C15ull
#define MIX1 0xBF58476D1CE4E5B9ull
#define MIX2 0x94D049BB133111EBull

__device__ __forceinline__ u64 mix64(u64 z)
{
    z = (z ^ (z >> 30)) * MIX1;
    z = (z ^ (z >> 27)) * MIX2;
    return z ^ (z >> 31);
}

/* The seeded bijection of scale-bit ids (all arithmetic modulo 2**32, then masked). */
__device__ __forceinline__ u32 relabel(u32 x, const u64* __restrict__ stream_keys,
                                       u32 mask, u32 half)
{
    for (int i = 0; i < PERMUTE_ROUNDS; ++i) {
        const u32 m = (u32)stream_keys[1 + 2 * i] | 1u;
        const u32 k = (u32)stream_keys[2 + 2 * i];
        x = (x * m + k) & mask;
        x ^= x >> half;
    }
    return x;
}

__device__ __forceinline__ long long tile_stop(long long start, long long n)
{
    return start + TILE < n ? start + TILE : n;
}

/* Edge e becomes the keys (u << scale | v) at 2e and (v << scale | u) at 2e + 1. */
extern "C" __global__ void rmat_edge_keys(const u32* __restrict__ thresholds,
                                          const u32* __restrict__ pairs,
                                          const u64* __restrict__ stream_keys,
                                          u64* __restrict__ keys,
                                          int scale,
                                          int permute,
                                          long long n2)
{
    const long long edges = n2 / 2;
    const int draws = (scale + 7) / 8;
    const u32 drop = (u32)(8 * draws - scale);
    const u32 mask = (u32)((1ull << scale) - 1ull);
    const u32 half = (u32)(scale / 2 + 1);
    const u64 key = stream_keys[0];
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < edges;
         e += stride) {
        u32 src = 0u, dst = 0u;
        for (int j = 0; j < draws; ++j) {
            const u64 word = mix64(key + GOLDEN * ((u64)e * (u64)draws + (u64)(j + 1)));
            const u32 column = (u32)(word >> 48);
            const u32 uniform = (u32)(word >> 16);
            const u32 packed = pairs[column];
            const u32 bits = uniform < thresholds[column] ? (packed & 0xFFFFu) : (packed >> 16);
            src = (src << 8) | (bits & 0xFFu);
            dst = (dst << 8) | (bits >> 8);
        }
        src >>= drop;
        dst >>= drop;
        if (permute) {
            src = relabel(src, stream_keys, mask, half);
            dst = relabel(dst, stream_keys, mask, half);
        }
        keys[2 * e] = ((u64)src << scale) | (u64)dst;
        keys[2 * e + 1] = ((u64)dst << scale) | (u64)src;
    }
}

/* counts[d * tiles + tile] = keys of the tile whose digit at `shift` is d. */
extern "C" __global__ void radix_histogram(const u64* __restrict__ keys,
                                           u32* __restrict__ counts,
                                           int shift,
                                           long long n,
                                           long long h)
{
    __shared__ u32 local[RADIX];
    const long long tiles = gridDim.x;
    if ((long long)RADIX * tiles > h) return;
    local[threadIdx.x] = 0u;
    __syncthreads();
    const long long start = (long long)blockIdx.x * TILE;
    const long long stop = tile_stop(start, n);
    for (long long i = start + threadIdx.x; i < stop; i += BLOCK) {
        atomicAdd(&local[(u32)(keys[i] >> shift) & (RADIX - 1)], 1u);
    }
    __syncthreads();
    counts[(long long)threadIdx.x * tiles + blockIdx.x] = local[threadIdx.x];
}

/* Exclusive prefix sum of data[0..m) in place, by one block. */
extern "C" __global__ void scan_exclusive(u32* __restrict__ data, long long m)
{
    __shared__ u32 warp_sums[SCAN_BLOCK / 32];
    __shared__ u32 carry_in;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) carry_in = 0u;
    __syncthreads();
    for (long long base = 0; base < m; base += SCAN_BLOCK) {
        const long long i = base + threadIdx.x;
        const u32 value = i < m ? data[i] : 0u;
        u32 inclusive = value;
        for (int d = 1; d < 32; d <<= 1) {
            const u32 other = __shfl_up_sync(0xFFFFFFFFu, inclusive, d);
            if (lane >= d) inclusive += other;
        }
        if (lane == 31) warp_sums[warp] = inclusive;
        __syncthreads();
        if (warp == 0) {
            u32 sum = warp_sums[lane];
            for (int d = 1; d < 32; d <<= 1) {
                const u32 other = __shfl_up_sync(0xFFFFFFFFu, sum, d);
                if (lane >= d) sum += other;
            }
            warp_sums[lane] = sum;
        }
        __syncthreads();
        const u32 carry = carry_in;
        const u32 before = warp == 0 ? 0u : warp_sums[warp - 1];
        if (i < m) data[i] = carry + before + inclusive - value;
        __syncthreads();
        if (threadIdx.x == SCAN_BLOCK - 1) carry_in = carry + warp_sums[SCAN_BLOCK / 32 - 1];
        __syncthreads();
    }
}

/* Stable scatter of the tile's keys to the positions the scanned counts give. */
extern "C" __global__ void radix_scatter(const u64* __restrict__ keys_in,
                                         u64* __restrict__ keys_out,
                                         const u32* __restrict__ starts,
                                         int shift,
                                         long long n,
                                         long long h)
{
    __shared__ u32 next[RADIX];
    __shared__ u32 warp_counts[WARPS][RADIX];
    const long long tiles = gridDim.x;
    if ((long long)RADIX * tiles > h) return;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const u32 lower = (1u << lane) - 1u;
    next[threadIdx.x] = starts[(long long)threadIdx.x * tiles + blockIdx.x];
    const long long start = (long long)blockIdx.x * TILE;
    const long long stop = tile_stop(start, n);
    for (long long chunk = start; chunk < stop; chunk += BLOCK) {
        for (int w = 0; w < WARPS; ++w) warp_counts[w][threadIdx.x] = 0u;
        __syncthreads();
        const long long i = chunk + threadIdx.x;
        const bool valid = i < stop;
        const u64 key = valid ? keys_in[i] : 0ull;
        const u32 digit = valid ? ((u32)(key >> shift) & (RADIX - 1)) : (u32)RADIX;
        const u32 peers = __match_any_sync(0xFFFFFFFFu, digit);
        const u32 rank = __popc(peers & lower);
        if (valid && rank == 0u) warp_counts[warp][digit] = __popc(peers);
        __syncthreads();
        if (valid) {
            u32 position = next[digit] + rank;
            for (int w = 0; w < warp; ++w) position += warp_counts[w][digit];
            keys_out[position] = key;
        }
        __syncthreads();
        u32 total = 0u;
        for (int w = 0; w < WARPS; ++w) total += warp_counts[w][threadIdx.x];
        next[threadIdx.x] += total;
        __syncthreads();
    }
}

/* counts[tile] = keys of the tile that differ from the key before them. */
extern "C" __global__ void unique_count(const u64* __restrict__ keys,
                                        u32* __restrict__ counts,
                                        long long n,
                                        long long c)
{
    const long long start = (long long)blockIdx.x * TILE;
    const long long stop = tile_stop(start, n);
    u32 total = 0u;
    for (long long chunk = start; chunk < stop; chunk += BLOCK) {
        const long long i = chunk + threadIdx.x;
        const int first = i < stop && (i == 0 || keys[i] != keys[i - 1]);
        total += (u32)__syncthreads_count(first);
    }
    if (threadIdx.x == 0 && (long long)blockIdx.x < c) counts[blockIdx.x] = total;
}

/* Distinct sorted keys to CSR: indices[p] = column, offsets[row] = first p of the row.
   starts[tile] is the tile's first output position and starts[tiles] the total. */
extern "C" __global__ void unique_compact(const u64* __restrict__ keys,
                                          const u32* __restrict__ starts,
                                          int* __restrict__ offsets,
                                          int* __restrict__ indices,
                                          int scale,
                                          long long n,
                                          long long c,
                                          long long v1)
{
    __shared__ u32 warp_totals[WARPS];
    __shared__ u32 running;
    const long long tiles = gridDim.x;
    if (tiles + 1 > c) return;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const u32 lower = (1u << lane) - 1u;
    const u64 column_mask = (1ull << scale) - 1ull;
    const long long vertices = v1 - 1;
    if (threadIdx.x == 0) running = starts[blockIdx.x];
    __syncthreads();
    const long long start = (long long)blockIdx.x * TILE;
    const long long stop = tile_stop(start, n);
    for (long long chunk = start; chunk < stop; chunk += BLOCK) {
        const long long i = chunk + threadIdx.x;
        const bool valid = i < stop;
        const u64 key = valid ? keys[i] : 0ull;
        const u64 previous = valid && i > 0 ? keys[i - 1] : 0ull;
        const bool first = valid && (i == 0 || key != previous);
        const u32 ballot = __ballot_sync(0xFFFFFFFFu, first);
        if (lane == 0) warp_totals[warp] = __popc(ballot);
        __syncthreads();
        u32 position = running + __popc(ballot & lower);
        for (int w = 0; w < warp; ++w) position += warp_totals[w];
        if (first) {
            indices[position] = (int)(key & column_mask);
            const long long row = (long long)(key >> scale);
            const long long previous_row = i == 0 ? -1 : (long long)(previous >> scale);
            for (long long r = previous_row + 1; r <= row; ++r) offsets[r] = (int)position;
        }
        if (valid && i == n - 1) {
            const int total = (int)starts[tiles];
            for (long long r = (long long)(key >> scale) + 1; r <= vertices; ++r) {
                offsets[r] = total;
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            u32 sum = 0u;
            for (int w = 0; w < WARPS; ++w) sum += warp_totals[w];
            running += sum;
        }
        __syncthreads();
    }
}
