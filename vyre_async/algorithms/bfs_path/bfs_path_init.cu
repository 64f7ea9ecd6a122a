// Keeps the query's target on the device for bfs_path_step (a prefix step: the
// repeated steps' scalars are fixed when the sequence is prepared).
extern "C" __global__ void bfs_path_init(int* __restrict__ goal, int target)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        goal[0] = target;
    }
}
