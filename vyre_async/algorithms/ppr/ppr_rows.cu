#include "ppr_prelude.cuh"

// rows[c * n + v] = ranks[v * W + c] for the first `count` columns: the ranks one seed
// per row. A block moves 32 x 32 tiles through shared memory, so both the reads and the
// writes are coalesced. seeds is never read: it is bound so that W derives from its length.
extern "C" __global__ void ppr_rows(const float* __restrict__ ranks,
                                    float* __restrict__ rows,
                                    const int* __restrict__ seeds,
                                    int count,
                                    long long w,
                                    long long vw)
{
    __shared__ float tile[32][33];
    const long long n = w > 0 ? vw / w : 0;
    const int cols = ppr_columns(n, w, vw);
    if (cols == 0) {
        return;
    }
    count = min(count, cols);
    const long long vertex_tiles = (n + 31) / 32;
    const long long tiles = vertex_tiles * ((cols + 31) / 32);
    const int tx = (int)(threadIdx.x & 31u);
    const int ty = (int)(threadIdx.x >> 5);
    const int step = (int)(blockDim.x >> 5);
    for (long long index = blockIdx.x; index < tiles; index += gridDim.x) {
        const long long v0 = (index % vertex_tiles) * 32;
        const int c0 = (int)(index / vertex_tiles) * 32;
        for (int r = ty; r < 32; r += step) {
            const long long v = v0 + r;
            if (v < n && c0 + tx < cols) {
                tile[r][tx] = ranks[v * cols + c0 + tx];
            }
        }
        __syncthreads();
        for (int r = ty; r < 32; r += step) {
            const long long v = v0 + tx;
            if (c0 + r < count && v < n) {
                rows[(long long)(c0 + r) * n + v] = tile[tx][r];
            }
        }
        __syncthreads();
    }
}
