
// levels is never read: it is bound so that n derives from its length.
extern "C" __global__ void bfs_advance(const int* __restrict__ levels,
                                       int* __restrict__ state,
                                       int n,
                                       int bottom_up)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || state[2] != 0) {
        return;
    }
    state[7] += 1;
    const int count = state[1];
    if (count == 0) {
        state[2] = 1;
        return;
    }
    state[4] += count;
    state[0] += 1;
    state[6] = count;
    state[1] = 0;
    if (state[0] >= state[5]) {
        state[2] = 1;
    }
    // Beamer's vertex-count rule with hysteresis, in exact integers: bottom-up while
    // the frontier is large, top-down again once it has shrunk well below that.
    int direction = state[3];
    if (bottom_up == 0) {
        direction = 0;
    } else if (direction == 0 && 16LL * count > (long long)n) {
        direction = 1;
    } else if (direction == 1 && 64LL * count < (long long)n) {
        direction = 0;
    }
    state[3] = direction;
}
