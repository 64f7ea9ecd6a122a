#include "khop_prelude.cuh"

// The exclusive prefix sum of tile_counts[0, t1 - 1) in place, and the total in
// tile_counts[t1 - 1]: where each tile's reached vertices start in the output. One
// block of KHOP_SCAN_BLOCK threads walks the tiles KHOP_SCAN_BLOCK at a time.
extern "C" __global__ void khop_scan(int* __restrict__ tile_counts, long long t1)
{
    __shared__ int warp_sums[KHOP_SCAN_BLOCK / 32];
    const long long tiles = t1 - 1;
    if (blockIdx.x != 0 || blockDim.x != KHOP_SCAN_BLOCK || tiles < 0) {
        return;
    }
    const int lane = (int)(threadIdx.x & 31u);
    const int warp = (int)(threadIdx.x >> 5);
    const int warps = KHOP_SCAN_BLOCK / 32;
    int carry = 0;  // the same in every thread: the sum of the chunks before this one
    for (long long base = 0; base < tiles; base += KHOP_SCAN_BLOCK) {
        const long long i = base + threadIdx.x;
        const int value = i < tiles ? tile_counts[i] : 0;
        int inclusive = value;
        for (int offset = 1; offset < 32; offset <<= 1) {
            const int up = __shfl_up_sync(KHOP_FULL_MASK, inclusive, offset);
            if (lane >= offset) {
                inclusive += up;
            }
        }
        if (lane == 31) {
            warp_sums[warp] = inclusive;
        }
        __syncthreads();
        if (warp == 0) {
            int sums = lane < warps ? warp_sums[lane] : 0;
            for (int offset = 1; offset < 32; offset <<= 1) {
                const int up = __shfl_up_sync(KHOP_FULL_MASK, sums, offset);
                if (lane >= offset) {
                    sums += up;
                }
            }
            if (lane < warps) {
                warp_sums[lane] = sums;  // now inclusive over the warps
            }
        }
        __syncthreads();
        const int before_warp = warp > 0 ? warp_sums[warp - 1] : 0;
        if (i < tiles) {
            tile_counts[i] = carry + before_warp + inclusive - value;
        }
        carry += warp_sums[warps - 1];
        __syncthreads();  // every thread has read warp_sums before the next chunk writes it
    }
    if (threadIdx.x == 0) {
        tile_counts[tiles] = carry;
    }
}
