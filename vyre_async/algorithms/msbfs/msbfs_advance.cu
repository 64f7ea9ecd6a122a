#include "msbfs_prelude.cuh"

extern "C" __global__ void msbfs_advance(int* __restrict__ state)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || state[STATE_DONE] != 0) {
        return;
    }
    state[STATE_LEVELS_RUN] += 1;
    unsigned long long* discovered = state_u64(state, STATE_DISCOVERED);
    if (*discovered == 0ull) {
        state[STATE_DONE] = 1;
        return;
    }
    *state_u64(state, STATE_REACHED) += *discovered;
    *discovered = 0ull;
    state[STATE_LEVEL] += 1;
    // All MAX_WORDS words: the state's own layout, not a width taken on trust.
    unsigned long long* live = state_u64(state, STATE_LIVE);
    unsigned long long* next_live = state_u64(state, STATE_NEXT_LIVE);
    for (int w = 0; w < MAX_WORDS; ++w) {
        live[w] = next_live[w];
        next_live[w] = 0ull;
    }
    if (state[STATE_LEVEL] >= state[STATE_MAX_LEVEL]) {
        state[STATE_DONE] = 1;
    }
}
