#define FULL_MASK 0xffffffffu

// The sum of the edge weights (float64) and the largest out-degree, for choosing delta.
// Outputs arrive zeroed; one atomic per block and output.
extern "C" __global__ void sssp_graph_stats(const long long* __restrict__ offsets,
                                            const float* __restrict__ weights,
                                            double* __restrict__ weight_sum,
                                            unsigned long long* __restrict__ max_degree,
                                            long long n1,
                                            long long e)
{
    const long long n = n1 - 1;
    __shared__ double sums[32];
    __shared__ unsigned long long maxima[32];
    double sum = 0.0;
    unsigned long long degree = 0ull;
    const long long stride = (long long)blockDim.x * gridDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long j = first; j < e; j += stride) {
        sum += (double)__ldg(&weights[j]);
    }
    for (long long v = first; v < n; v += stride) {
        const unsigned long long d = (unsigned long long)(__ldg(&offsets[v + 1]) - __ldg(&offsets[v]));
        degree = d > degree ? d : degree;
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_down_sync(FULL_MASK, sum, offset);
        const unsigned long long other = __shfl_down_sync(FULL_MASK, degree, offset);
        degree = other > degree ? other : degree;
    }
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    if (lane == 0u) {
        sums[warp] = sum;
        maxima[warp] = degree;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (unsigned w = 1; w < (blockDim.x + 31u) >> 5; ++w) {
            sum += sums[w];
            degree = maxima[w] > degree ? maxima[w] : degree;
        }
        if (sum != 0.0) {
            atomicAdd(weight_sum, sum);
        }
        if (degree != 0ull) {
            atomicMax(max_degree, degree);
        }
    }
}
