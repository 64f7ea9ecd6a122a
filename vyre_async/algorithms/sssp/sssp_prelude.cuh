#include "sssp_defines.cuh"
#include "sssp_warp.cuh"

// What relaxing one edge asks of the warp: the target was scheduled for the next
// step, and (FIRST) it was never scheduled before in this run.
#define SCHEDULED 1
#define FIRST 2

// What each thread counts, reduced per block once at the end of a step.
struct Tally {
    int reached;
    float far_min;
    unsigned long long scanned;
    unsigned long long relaxed;
};

__device__ __forceinline__ Tally fresh_tally()
{
    Tally t;
    t.reached = 0;
    t.far_min = __int_as_float(INF_BITS);
    t.scanned = 0ull;
    t.relaxed = 0ull;
    return t;
}

// Sums every thread's tallies per block (shuffles, then shared memory) and adds them
// to the state with one atomic each from thread 0. Every thread of the block must call it.
__device__ __forceinline__ void block_add_tally(Tally t, int* state)
{
    __shared__ int reached[WARPS];
    __shared__ float far_min[WARPS];
    __shared__ unsigned long long scanned[WARPS];
    __shared__ unsigned long long relaxed[WARPS];
    for (int offset = 16; offset > 0; offset >>= 1) {
        t.reached += __shfl_down_sync(FULL_MASK, t.reached, offset);
        t.far_min = fminf(t.far_min, __shfl_down_sync(FULL_MASK, t.far_min, offset));
        t.scanned += __shfl_down_sync(FULL_MASK, t.scanned, offset);
        t.relaxed += __shfl_down_sync(FULL_MASK, t.relaxed, offset);
    }
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    if (lane == 0u) {
        reached[warp] = t.reached;
        far_min[warp] = t.far_min;
        scanned[warp] = t.scanned;
        relaxed[warp] = t.relaxed;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < WARPS; ++w) {
            t.reached += reached[w];
            t.far_min = fminf(t.far_min, far_min[w]);
            t.scanned += scanned[w];
            t.relaxed += relaxed[w];
        }
        if (t.reached != 0) {
            atomicAdd(&state[STATE_REACHED], t.reached);
        }
        if (__float_as_int(t.far_min) != INF_BITS) {
            atomicMin(&state[STATE_FAR_MIN], __float_as_int(t.far_min));
        }
        if (t.scanned != 0ull) {
            atomicAdd(reinterpret_cast<unsigned long long*>(&state[STATE_SCANNED]), t.scanned);
        }
        if (t.relaxed != 0ull) {
            atomicAdd(reinterpret_cast<unsigned long long*>(&state[STATE_RELAXED]), t.relaxed);
        }
    }
}

