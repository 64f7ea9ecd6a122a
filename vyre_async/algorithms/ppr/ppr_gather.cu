#include "ppr_prelude.cuh"

// The vertex whose in-list holds edge j: the largest v in [lo, hi] with offsets[v] <= j
// (the caller knows offsets[lo] <= j < offsets[hi + 1]).
__device__ __forceinline__ long long owning_vertex(const long long* __restrict__ offsets,
                                                   long long lo,
                                                   long long hi,
                                                   long long j)
{
    long long a = lo;
    long long b = hi + 1;
    while (b - a > 1) {
        const long long mid = (a + b) >> 1;
        if (__ldg(&offsets[mid]) <= j) {
            a = mid;
        } else {
            b = mid;
        }
    }
    return a;
}

__device__ __forceinline__ void load_row(const float* __restrict__ p, float (&x)[1])
{
    x[0] = __ldg(p);
}

__device__ __forceinline__ void load_row(const float* __restrict__ p, float (&x)[4])
{
    const float4 q = __ldg(reinterpret_cast<const float4*>(p));
    x[0] = q.x;
    x[1] = q.y;
    x[2] = q.z;
    x[3] = q.w;
}

__device__ __forceinline__ void put_row(float* __restrict__ p, const float (&x)[1], bool shared)
{
    if (shared) {
        atomicAdd(p, x[0]);
    } else {
        *p = x[0];
    }
}

__device__ __forceinline__ void put_row(float* __restrict__ p, const float (&x)[4], bool shared)
{
    if (shared) {
        atomicAdd(p, x[0]);
        atomicAdd(p + 1, x[1]);
        atomicAdd(p + 2, x[2]);
        atomicAdd(p + 3, x[3]);
    } else {
        *reinterpret_cast<float4*>(p) = make_float4(x[0], x[1], x[2], x[3]);
    }
}

// Vertex v's pulled sum over its in-edges in [cs, ce) goes to dst (zeroed by the last
// update): stored when all of v's in-edges are in the chunk (no other task writes these
// columns of v), added atomically when the list is cut between chunks.
template <int VEC>
__device__ __forceinline__ void flush_vertex(float* __restrict__ dst,
                                             long long v,
                                             long long begin,
                                             long long end,
                                             long long cs,
                                             long long ce,
                                             int cols,
                                             int col,
                                             float (&acc)[VEC])
{
    if (max(begin, cs) < min(end, ce)) {
        put_row(dst + v * cols + col, acc, begin < cs || end > ce);
    }
#pragma unroll
    for (int q = 0; q < VEC; ++q) {
        acc[q] = 0.0f;
    }
}

// W >= 32: the warp walks the chunk's edges in order, every lane adding VEC columns of
// each edge's source row (a warp reads 32 * VEC consecutive floats per edge), GATHER_UNROLL
// rows in flight; a vertex's sum is written when the walk leaves it. Vertex boundaries
// are crossed by the whole warp at once, so short lists cost no idle lanes.
template <int VEC>
__device__ void gather_wide(const long long* __restrict__ in_offsets,
                            const int* __restrict__ in_indices,
                            const float* __restrict__ shares,
                            const float* __restrict__ src,
                            float* __restrict__ dst,
                            long long n,
                            int cols,
                            long long cs,
                            long long ce,
                            int col)
{
    const unsigned lane = threadIdx.x & 31u;
    long long v = owning_vertex(in_offsets, 0, n - 1, cs);
    long long begin = __ldg(&in_offsets[v]);
    long long end = __ldg(&in_offsets[v + 1]);
    float acc[VEC];
#pragma unroll
    for (int q = 0; q < VEC; ++q) {
        acc[q] = 0.0f;
    }
    for (long long j0 = cs; j0 < ce; j0 += 32) {
        const int count = (int)min(32ll, ce - j0);
        int u = 0;
        float share = 0.0f;
        if ((int)lane < count) {
            u = __ldg(&in_indices[j0 + lane]);
            share = __ldg(&shares[j0 + lane]);
        }
        for (int k0 = 0; k0 < count; k0 += GATHER_UNROLL) {
            float x[GATHER_UNROLL][VEC];
            float s[GATHER_UNROLL];
#pragma unroll
            for (int k = 0; k < GATHER_UNROLL; ++k) {
                const int at = k0 + k;
                const int from = __shfl_sync(FULL_MASK, u, at & 31);
                s[k] = __shfl_sync(FULL_MASK, share, at & 31);
                if (at < count) {
                    load_row(src + (long long)from * cols + col, x[k]);
                } else {
#pragma unroll
                    for (int q = 0; q < VEC; ++q) {
                        x[k][q] = 0.0f;
                    }
                }
            }
#pragma unroll
            for (int k = 0; k < GATHER_UNROLL; ++k) {
                const int at = k0 + k;
                if (at < count) {  // the same for every lane
                    const long long j = j0 + at;
                    while (j >= end) {  // edge j belongs to a later vertex: v is finished
                        flush_vertex<VEC>(dst, v, begin, end, cs, ce, cols, col, acc);
                        ++v;
                        begin = end;
                        end = __ldg(&in_offsets[v + 1]);
                    }
#pragma unroll
                    for (int q = 0; q < VEC; ++q) {
                        acc[q] += x[k][q] * s[k];
                    }
                }
            }
        }
    }
    flush_vertex<VEC>(dst, v, begin, end, cs, ce, cols, col, acc);
}

// W < 32: the warp is 32 / W slots of W lanes (one column each); the slots take
// consecutive edges, and a segmented sum over the slots of each vertex's run leaves one
// atomic add per vertex, column and step.
__device__ void gather_narrow(const long long* __restrict__ in_offsets,
                              const int* __restrict__ in_indices,
                              const float* __restrict__ shares,
                              const float* __restrict__ src,
                              float* __restrict__ dst,
                              long long n,
                              int cols,
                              long long cs,
                              long long ce)
{
    const int lane = (int)(threadIdx.x & 31u);
    const int slots = 32 / cols;
    const int slot = lane / cols;
    const int c = lane % cols;
    const long long lo = owning_vertex(in_offsets, 0, n - 1, cs);
    const long long hi = owning_vertex(in_offsets, lo, n - 1, ce - 1);
    for (long long j0 = cs; j0 < ce; j0 += slots) {
        const long long j = j0 + slot;
        float x = 0.0f;
        long long owner = -1;
        if (j < ce) {
            const int u = __ldg(&in_indices[j]);
            x = __ldg(&src[(long long)u * cols + c]) * __ldg(&shares[j]);
            owner = owning_vertex(in_offsets, lo, hi, j);
        }
        for (int d = 1; d < slots; d <<= 1) {
            const float y = __shfl_up_sync(FULL_MASK, x, d * cols);
            const long long other = __shfl_up_sync(FULL_MASK, owner, d * cols);
            if (slot >= d && other == owner) {
                x += y;
            }
        }
        const long long next = __shfl_down_sync(FULL_MASK, owner, cols);
        if (owner >= 0 && (slot == slots - 1 || next != owner)) {
            atomicAdd(&dst[owner * cols + c], x);
        }
    }
}

// dst[v][c] += sum over in-edges (u -> v) of src[u][c] * shares[edge], for every column
// of every tile that has a column still iterating (a tile whose columns have all
// converged keeps its ranks and is skipped). A task is a chunk of GATHER_CHUNK in-edges
// and one tile of columns; tasks run tile by tile, so the warps in flight share one
// tile's rows in the L2 cache.
extern "C" __global__ void ppr_gather(const long long* __restrict__ in_offsets,
                                      const int* __restrict__ in_indices,
                                      const float* __restrict__ shares,
                                      const float* __restrict__ src,
                                      float* __restrict__ dst,
                                      const int* __restrict__ active,
                                      const float* __restrict__ state,
                                      long long n1,
                                      long long w,
                                      long long vw,
                                      long long edges)
{
    if (state[STATE_DONE] != 0.0f) {
        return;
    }
    const long long n = n1 - 1;
    const int cols = ppr_columns(n, w, vw);
    if (cols == 0 || edges <= 0 || __ldg(&in_offsets[n]) != edges) {
        return;
    }
    const int tile = ppr_tile(cols);
    const long long tiles = cols / tile;
    const long long chunks = (edges + GATHER_CHUNK - 1) / GATHER_CHUNK;
    const int lane = (int)(threadIdx.x & 31u);
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long task = warp; task < chunks * tiles; task += warps) {
        const int col0 = (int)(task / chunks) * tile;
        const long long cs = (task % chunks) * GATHER_CHUNK;
        const long long ce = min(cs + (long long)GATHER_CHUNK, edges);
        bool live = false;
        if (tile == 128) {
            const int* a = active + col0 + 4 * lane;
            live = (__ldg(a) | __ldg(a + 1) | __ldg(a + 2) | __ldg(a + 3)) != 0;
        } else if (lane < tile) {
            live = __ldg(&active[col0 + lane]) != 0;
        }
        if (!__any_sync(FULL_MASK, live)) {
            continue;
        }
        if (tile == 128) {
            gather_wide<4>(in_offsets, in_indices, shares, src, dst, n, cols, cs, ce, col0 + 4 * lane);
        } else if (cols >= 32) {
            gather_wide<1>(in_offsets, in_indices, shares, src, dst, n, cols, cs, ce, col0 + lane);
        } else {
            gather_narrow(in_offsets, in_indices, shares, src, dst, n, cols, cs, ce);
        }
    }
}
