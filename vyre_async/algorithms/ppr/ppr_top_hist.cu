#include "ppr_prelude.cuh"

// One radix pass of the top-k select: for each unsettled column, count its keys whose
// digits above shift[c] equal its prefix, by their digit at shift[c] (8 bits). A block
// counts one tile of up to 32 columns over a slice of the vertices in shared memory
// (rows padded by one bin, so lanes counting the same digit hit different banks), then
// adds its counts to hist[c][digit].
extern "C" __global__ void ppr_top_hist(const float* __restrict__ ranks,
                                        const unsigned long long* __restrict__ prefix,
                                        const int* __restrict__ shift,
                                        unsigned* __restrict__ hist,
                                        long long w,
                                        long long vw,
                                        long long wh)
{
    __shared__ unsigned bins[32 * (TOP_BINS + 1)];
    const long long n = w > 0 ? vw / w : 0;
    const int cols = ppr_columns(n, w, vw);
    if (cols == 0 || wh != (long long)cols * TOP_BINS) {
        return;
    }
    const int tile = min(cols, 32);
    const int c0 = (int)blockIdx.y * tile;
    if (c0 >= cols) {
        return;
    }
    const int slot = (int)threadIdx.x % tile;
    const int row = (int)threadIdx.x / tile;
    const int rows = (int)blockDim.x / tile;
    const int c = c0 + slot;
    const int s = row < rows ? shift[c] : -1;
    if (!__syncthreads_or(s >= 0)) {
        return;  // every column of the tile is settled
    }
    for (int i = threadIdx.x; i < tile * (TOP_BINS + 1); i += blockDim.x) {
        bins[i] = 0u;
    }
    __syncthreads();
    if (s >= 0) {
        const unsigned long long want = s < 56 ? prefix[c] >> (s + 8) : 0ull;
        const long long stride = (long long)gridDim.x * rows;
        for (long long v = (long long)blockIdx.x * rows + row; v < n; v += stride) {
            const unsigned long long key = ppr_key(ranks[v * cols + c], v, n);
            if (s == 56 || (key >> (s + 8)) == want) {
                atomicAdd(&bins[slot * (TOP_BINS + 1) + (int)((key >> s) & 255ull)], 1u);
            }
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < tile * TOP_BINS; i += blockDim.x) {
        const unsigned found = bins[(i / TOP_BINS) * (TOP_BINS + 1) + i % TOP_BINS];
        if (found != 0u) {
            atomicAdd(&hist[(long long)c0 * TOP_BINS + i], found);
        }
    }
}
