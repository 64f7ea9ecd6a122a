#include "ppr_prelude.cuh"

// After a pass: each unsettled column finds the digit where its wanted count falls
// (from the largest digit down) and appends it to its prefix. When that digit's keys
// are exactly the ones still wanted, or no digit is left, every key >= prefix is taken
// and the column is settled; else the next pass looks at the next digit (after the
// rank's four, the vertex number's top nonzero digit, id_shift; -1: none). The
// histogram row is zeroed for the next pass.
extern "C" __global__ void ppr_top_select(unsigned long long* __restrict__ prefix,
                                          int* __restrict__ need,
                                          int* __restrict__ shift,
                                          unsigned* __restrict__ hist,
                                          int id_shift,
                                          long long w,
                                          long long wh)
{
    if (wh != w * TOP_BINS) {
        return;
    }
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < w; c += stride) {
        const int s = shift[c];
        if (s < 0) {
            continue;
        }
        unsigned* row = hist + c * TOP_BINS;
        const long long wanted = need[c];
        long long above = 0;
        long long in_digit = 0;
        int digit = -1;
        for (int d = TOP_BINS - 1; d >= 0; --d) {
            const long long found = row[d];
            if (digit < 0) {
                if (above + found >= wanted) {
                    digit = d;
                    in_digit = found;
                } else {
                    above += found;
                }
            }
            row[d] = 0u;
        }
        if (digit < 0) {  // fewer keys than wanted (never with k <= V): take them all
            prefix[c] = 0ull;
            shift[c] = -1;
            continue;
        }
        prefix[c] |= (unsigned long long)digit << s;
        const long long rest = wanted - above;
        const int next = s == 32 ? id_shift : s - 8;
        if (in_digit == rest || next < 0) {
            shift[c] = -1;
        } else {
            need[c] = (int)rest;
            shift[c] = next;
        }
    }
}
