#include "pagerank_part_prelude.cuh"

// One thread: this device's dangling mass and last L1 change into the header of its
// send slot and of its own slot of recv.
extern "C" __global__ void pr_part_header(float* __restrict__ send,
                                          float* __restrict__ recv,
                                          const float* __restrict__ state,
                                          int parts,
                                          int part,
                                          long long chunk,
                                          long long sl,
                                          long long gl)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || state[PR_PART_DONE] != 0.0f || parts < 1 ||
        part < 0 || part >= parts || chunk < 1 || sl < chunk + PR_PART_HEADER ||
        gl < (long long)parts * (chunk + PR_PART_HEADER)) {
        return;
    }
    float* own = recv + (long long)part * (chunk + PR_PART_HEADER);
    send[chunk] = state[PR_PART_LOCAL_DANGLING];
    send[chunk + 1] = state[PR_PART_LOCAL_DIFF];
    own[chunk] = state[PR_PART_LOCAL_DANGLING];
    own[chunk + 1] = state[PR_PART_LOCAL_DIFF];
}
