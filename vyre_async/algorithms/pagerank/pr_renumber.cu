
extern "C" __global__ void pr_renumber(const int* __restrict__ in_indices,
                                       const int* __restrict__ rank_of,
                                       int* __restrict__ renumbered,
                                       long long edges)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < edges; j += stride) {
        renumbered[j] = __ldg(&rank_of[__ldg(&in_indices[j])]);
    }
}
