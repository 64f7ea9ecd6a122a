
extern "C" __global__ void pr_check(float* __restrict__ state)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || state[2] != 0.0f) {
        return;
    }
    state[3] += 1.0f;
    state[6] = state[1];
    if (state[1] < state[4] || state[3] >= state[5]) {
        state[2] = 1.0f;
    }
    state[0] = 0.0f;
    state[1] = 0.0f;
}
