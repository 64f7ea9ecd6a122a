#include "ppr_prelude.cuh"

// The start of a top-k select: each of the first `count` columns wants its k largest
// keys (rank, then the smaller vertex), starting at the top digit; the other columns
// (padding) are settled with a prefix no key reaches. The histograms start at zero.
extern "C" __global__ void ppr_top_init(unsigned long long* __restrict__ prefix,
                                        int* __restrict__ need,
                                        int* __restrict__ shift,
                                        int* __restrict__ taken,
                                        unsigned* __restrict__ hist,
                                        int count,
                                        int k,
                                        long long w,
                                        long long wh)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long i = t; i < wh; i += stride) {
        hist[i] = 0u;
    }
    const bool shaped = k > 0 && wh == w * TOP_BINS;
    for (long long c = t; c < w; c += stride) {
        const bool real = shaped && c < count;
        prefix[c] = real ? 0ull : ~0ull;
        need[c] = real ? k : 0;
        shift[c] = real ? 56 : -1;
        taken[c] = 0;
    }
}
