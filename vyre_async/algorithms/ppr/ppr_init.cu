#include "ppr_prelude.cuh"

// The start of a run: column c's ranks are its personalization (1 at its seed, or the
// dense vector), the second buffer is zeroed for the first gather, and each column's
// dangling mass is what its personalization puts on vertices without out-edges. A
// seed outside [0, n) (a padding column) stays inactive with all-zero ranks.
extern "C" __global__ void ppr_init(const int* __restrict__ out_degree,
                                    const int* __restrict__ seeds,
                                    const float* __restrict__ personal,
                                    float* __restrict__ rank,
                                    float* __restrict__ other,
                                    float* __restrict__ mass,
                                    float* __restrict__ mass_next,
                                    float* __restrict__ diff,
                                    int* __restrict__ active,
                                    float* __restrict__ state,
                                    float damping,
                                    float tol,
                                    int max_iter,
                                    int dense,
                                    float dense_mass,
                                    long long n,
                                    long long w,
                                    long long vw,
                                    long long plen)
{
    const int cols = ppr_columns(n, w, vw);
    const bool use_dense = dense != 0 && cols == 1 && plen == n;
    const long long threads = (long long)blockDim.x * gridDim.x;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t == 0) {
        const bool broken = cols == 0 || (dense != 0 && !use_dense);
        state[STATE_DONE] = (broken || max_iter <= 0) ? 1.0f : 0.0f;
        state[STATE_ITERATIONS] = 0.0f;
        state[STATE_MAX_ITER] = (float)min(max_iter, 1 << 24);
        state[STATE_TOL] = tol;
        state[STATE_DAMPING] = damping;
        state[STATE_ACTIVE] = (float)cols;
        state[STATE_DENSE] = use_dense ? 1.0f : 0.0f;
        state[7] = 0.0f;
    }
    if (cols == 0) {
        return;
    }
    // A multiple of cols, so each thread keeps one column.
    const long long used = threads / cols * cols;
    if (t < used) {
        const int c = (int)(t % cols);
        const int seed = __ldg(&seeds[c]);
        const long long step = used / cols;
        long long v = t / cols;
        for (long long i = t; i < vw; i += used, v += step) {
            rank[i] = use_dense ? __ldg(&personal[v]) : (v == seed ? 1.0f : 0.0f);
            other[i] = 0.0f;
        }
    }
    for (long long c = t; c < cols; c += threads) {
        const int seed = __ldg(&seeds[c]);
        const bool live = use_dense || (seed >= 0 && seed < n);
        active[c] = live ? 1 : 0;
        mass[c] = use_dense ? dense_mass : ((live && __ldg(&out_degree[seed]) == 0) ? 1.0f : 0.0f);
        mass_next[c] = 0.0f;
        diff[c] = 0.0f;
    }
}
