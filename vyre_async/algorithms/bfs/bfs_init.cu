
extern "C" __global__ void bfs_init(int* __restrict__ levels,
                                    int* __restrict__ state,
                                    int source,
                                    int max_level,
                                    int n)
{
    // An out-of-range source reaches nothing: no write lands outside levels.
    const bool valid = source >= 0 && source < n;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        levels[i] = (valid && i == source) ? 0 : -1;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        state[0] = 0;
        state[1] = 0;
        state[2] = (!valid || max_level <= 0) ? 1 : 0;
        state[3] = 0;
        state[4] = valid ? 1 : 0;
        state[5] = max_level;
        state[6] = valid ? 1 : 0;
        state[7] = 0;
    }
}
