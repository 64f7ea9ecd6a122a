#include "msbfs_prelude.cuh"

// offsets is never read: it is bound so that n derives from its length.
extern "C" __global__ void msbfs_init_levels(const long long* __restrict__ offsets,
                                             const int* __restrict__ sources,
                                             int* __restrict__ levels,
                                             const int* __restrict__ state,
                                             long long n1,
                                             int lanes,
                                             long long lv)
{
    const long long n = n1 - 1;
    const long long stride = (long long)blockDim.x * gridDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (n <= 0) {
        for (long long i = first; i < lv; i += stride) {
            levels[i] = -1;
        }
        return;
    }
    // Row (lane) and column (vertex) advance by fixed steps: one division per thread,
    // not one per element of a lanes * V array.
    const long long row_step = stride / n;
    const long long col_step = stride - row_step * n;
    long long lane = first / n;
    long long v = first - lane * n;
    for (long long i = first; i < lv; i += stride) {
        const bool source = lane < lanes && lane_active(state, lane) && __ldg(&sources[lane]) == v;
        levels[i] = source ? 0 : -1;
        lane += row_step;
        v += col_step;
        if (v >= n) {
            v -= n;
            lane += 1;
        }
    }
}
