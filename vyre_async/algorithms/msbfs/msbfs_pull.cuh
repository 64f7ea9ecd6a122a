
// ORs word w of the frontier over the in-list [first, last) of one vertex with the
// whole warp: 32 / group neighbours per pass, a team of `group` lanes reading one
// neighbour's consecutive words. Stops once every lane's `need` bits are found. Every
// lane returns the OR for its word across the warp. All 32 lanes must call it.
__device__ __forceinline__ unsigned long long warp_pull(
    long long first,
    long long last,
    const int* __restrict__ in_indices,
    const unsigned long long* __restrict__ frontier,
    unsigned long long need,
    int words,
    int group,
    int slot,
    int w)
{
    const long long slots = 32 / group;
    unsigned long long acc = 0ull;
    for (long long base = first; base < last; base += UNROLL * slots) {
        int u[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            const long long j = base + k * slots + slot;
            u[k] = j < last ? __ldg(&in_indices[j]) : -1;
        }
        if (w < words) {
#pragma unroll
            for (int k = 0; k < UNROLL; ++k) {
                if (u[k] >= 0) {
                    acc |= __ldg(&frontier[(long long)u[k] * words + w]);
                }
            }
        }
        // Lanes of one word sit `group` apart: the butterfly leaves each with their OR.
        for (int offset = group; offset < 32; offset <<= 1) {
            acc |= __shfl_xor_sync(FULL_MASK, acc, offset);
        }
        if (__all_sync(FULL_MASK, (acc & need) == need)) {
            break;
        }
    }
    return acc;
}

// Adds the pairs found and the lanes gained to the state with one atomic per block
// and word. Every thread of the block must call it; lane l < words holds word l.
__device__ __forceinline__ void flush_progress(unsigned long long found,
                                               unsigned long long gained,
                                               int group,
                                               int words,
                                               int* state)
{
    __shared__ unsigned long long block_found;
    __shared__ unsigned long long block_gained[MAX_WORDS];
    if (threadIdx.x < MAX_WORDS) {
        block_gained[threadIdx.x] = 0ull;
    }
    if (threadIdx.x == 0) {
        block_found = 0ull;
    }
    __syncthreads();
    for (int offset = 16; offset > 0; offset >>= 1) {
        found += __shfl_down_sync(FULL_MASK, found, offset);
    }
    for (int offset = group; offset < 32; offset <<= 1) {
        gained |= __shfl_xor_sync(FULL_MASK, gained, offset);
    }
    const int lane = (int)(threadIdx.x & 31u);
    if (lane == 0 && found != 0ull) {
        atomicAdd(&block_found, found);
    }
    if (lane < words && gained != 0ull) {
        atomicOr(&block_gained[lane], gained);
    }
    __syncthreads();
    if (threadIdx.x == 0 && block_found != 0ull) {
        atomicAdd(state_u64(state, STATE_DISCOVERED), block_found);
    }
    if ((int)threadIdx.x < words && block_gained[threadIdx.x] != 0ull) {
        atomicOr(state_u64(state, STATE_NEXT_LIVE) + threadIdx.x, block_gained[threadIdx.x]);
    }
}
