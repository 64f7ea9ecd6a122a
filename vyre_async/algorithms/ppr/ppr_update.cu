#include "ppr_prelude.cuh"

// One power iteration's end, for every column still iterating:
//   rank_out[v][c] = d * sums[v][c] + ((1 - d) + d * mass[c]) * p_c[v]
// where rank_out holds the gathered sums, p_c is column c's personalization (1 at its
// seed, or the dense vector) and mass[c] the rank its vertices without out-edges held,
// which goes back to the personalization. A converged column copies its ranks. The
// column's L1 change goes to diff[c] and the new ranks of vertices without out-edges to
// mass_next[c]; rank_in is zeroed for the next gather into it.
extern "C" __global__ void ppr_update(float* __restrict__ rank_in,
                                      float* __restrict__ rank_out,
                                      const int* __restrict__ out_degree,
                                      const int* __restrict__ seeds,
                                      const float* __restrict__ personal,
                                      const float* __restrict__ mass,
                                      float* __restrict__ mass_next,
                                      float* __restrict__ diff,
                                      const int* __restrict__ active,
                                      const float* __restrict__ state,
                                      long long n,
                                      long long w,
                                      long long vw,
                                      long long plen)
{
    if (state[STATE_DONE] != 0.0f) {
        return;
    }
    const int cols = ppr_columns(n, w, vw);
    const bool dense = state[STATE_DENSE] != 0.0f;
    if (cols == 0 || (dense && (cols != 1 || plen != n))) {
        return;
    }
    const float damping = state[STATE_DAMPING];
    const long long threads = (long long)gridDim.x * blockDim.x;
    // A multiple of cols, so each thread keeps one column (all threads when cols < 32).
    const long long used = threads / cols * cols;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int c = (int)(t % cols);
    float change = 0.0f;
    float dangling = 0.0f;
    if (t < used) {
        const bool live = __ldg(&active[c]) != 0;
        const int seed = __ldg(&seeds[c]);
        const float teleport = (1.0f - damping) + damping * __ldg(&mass[c]);
        const long long step = used / cols;
        long long v = t / cols;
        for (long long i = t; i < vw; i += used, v += step) {
            const float old = rank_in[i];
            float fresh = old;
            if (live) {
                const float p = dense ? __ldg(&personal[v]) : (v == seed ? 1.0f : 0.0f);
                fresh = damping * rank_out[i] + teleport * p;
                change += fabsf(fresh - old);
            }
            rank_out[i] = fresh;
            rank_in[i] = 0.0f;
            if (__ldg(&out_degree[v]) == 0) {
                dangling += fresh;
            }
        }
    }
    if (cols < 32) {
        // The lanes of one column sit cols apart in every warp.
        for (int offset = 16; offset >= cols; offset >>= 1) {
            change += __shfl_xor_sync(FULL_MASK, change, offset);
            dangling += __shfl_xor_sync(FULL_MASK, dangling, offset);
        }
        if ((int)(threadIdx.x & 31u) >= cols) {
            return;
        }
    } else if (t >= used) {
        return;
    }
    if (change != 0.0f) {
        atomicAdd(&diff[c], change);
    }
    if (dangling != 0.0f) {
        atomicAdd(&mass_next[c], dangling);
    }
}
