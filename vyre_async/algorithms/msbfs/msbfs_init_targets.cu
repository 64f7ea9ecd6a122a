#include "msbfs_prelude.cuh"

extern "C" __global__ void msbfs_init_targets(const int* __restrict__ sources,
                                              const int* __restrict__ targets,
                                              int* __restrict__ target_levels,
                                              const int* __restrict__ state,
                                              int lanes,
                                              int k,
                                              long long lk)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < lk; i += stride) {
        int value = -1;
        if (k > 0) {
            const long long lane = i / k;
            const int t = (int)(i - lane * k);
            if (lane < lanes && lane_active(state, lane) &&
                __ldg(&sources[lane]) == __ldg(&targets[t])) {
                value = 0;
            }
        }
        target_levels[i] = value;
    }
}
