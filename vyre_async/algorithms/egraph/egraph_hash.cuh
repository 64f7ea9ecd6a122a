
__device__ __forceinline__ unsigned fmix32(unsigned h)
{
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

// A sum of per-child terms (each mixing the child with its position), so the
// host reference can add them in any order and land on the same bits.
__device__ __forceinline__ unsigned row_signature(unsigned op, unsigned len,
                                                  const unsigned* __restrict__ canon,
                                                  unsigned long long start)
{
    unsigned acc = fmix32(op * 0xC2B2AE3Du + len * 0x27D4EB2Fu + 0x165667B1u);
    for (unsigned j = 0; j < len; ++j) {
        acc += fmix32((canon[start + j] ^ fmix32(j + 0x61C88647u)) * 0x9E3779B1u);
    }
    return fmix32(acc);
}
