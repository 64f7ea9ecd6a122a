
extern "C" __global__ void pr_init(float* __restrict__ rank,
                                   float* __restrict__ other,
                                   float* __restrict__ contrib,
                                   const int* __restrict__ out_degree,
                                   const int* __restrict__ rank_of,
                                   float* __restrict__ state,
                                   float tol,
                                   int max_iter,
                                   int n)
{
    const float uniform = n > 0 ? 1.0f / (float)n : 0.0f;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        rank[i] = uniform;
        other[i] = 0.0f;  // the first pr_gather accumulates into it
        const int degree = __ldg(&out_degree[i]);
        contrib[__ldg(&rank_of[i])] = degree > 0 ? uniform / (float)degree : 0.0f;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        state[0] = 0.0f;
        state[1] = 0.0f;
        state[2] = (max_iter <= 0 || n <= 0) ? 1.0f : 0.0f;
        state[3] = 0.0f;
        state[4] = tol;
        state[5] = (float)min(max_iter, 1 << 24);
        state[6] = 0.0f;
        state[7] = 0.0f;
    }
}
