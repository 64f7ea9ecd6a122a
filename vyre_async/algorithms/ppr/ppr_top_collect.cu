#include "ppr_prelude.cuh"

// The end of a top-k select: the k keys >= each settled column's prefix go to the
// column's k slots of top_vertex and top_rank, in no particular order (the host sorts
// each row); taken[c] counts them.
extern "C" __global__ void ppr_top_collect(const float* __restrict__ ranks,
                                           const unsigned long long* __restrict__ prefix,
                                           int* __restrict__ taken,
                                           int* __restrict__ top_vertex,
                                           float* __restrict__ top_rank,
                                           int count,
                                           int k,
                                           long long w,
                                           long long vw,
                                           long long wk)
{
    const long long n = w > 0 ? vw / w : 0;
    const int cols = ppr_columns(n, w, vw);
    if (cols == 0 || k <= 0 || wk != w * k) {
        return;
    }
    const long long threads = (long long)gridDim.x * blockDim.x;
    // A multiple of cols, so each thread keeps one column.
    const long long used = threads / cols * cols;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int c = (int)(t % cols);
    if (t >= used || c >= count) {
        return;
    }
    const unsigned long long bound = prefix[c];
    const long long step = used / cols;
    long long v = t / cols;
    for (long long i = t; i < vw; i += used, v += step) {
        const float rank = ranks[i];
        if (ppr_key(rank, v, n) >= bound) {
            const int at = atomicAdd(&taken[c], 1);
            if (at < k) {
                top_vertex[(long long)c * k + at] = (int)v;
                top_rank[(long long)c * k + at] = rank;
            }
        }
    }
}
