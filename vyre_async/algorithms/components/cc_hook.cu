#include "components_defines.cuh"

// The vertex whose out-list holds edge j: the largest v with offsets[v] <= j.
__device__ __forceinline__ int owning_vertex(const long long* __restrict__ offsets, int n,
                                             long long j)
{
    int lo = 0;
    int hi = n;  // offsets[n] = E > j for any edge j
    while (hi - lo > 1) {
        const int mid = lo + ((hi - lo) >> 1);
        if (__ldg(&offsets[mid]) <= j) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// One edge u - v (either direction: components are weak). Where the parents differ,
// the larger parent is hooked under the smaller one, and so is the end point that
// pointed at the larger one. Parents only ever fall, and only to a vertex of the same
// component, so no cycle forms and any order of these updates is as good as another;
// a value read here may be stale (another thread lowered it since), which is as valid.
// Returns whether the parents differed: then some parent fell during this launch.
__device__ __forceinline__ bool hook_edge(int u, int v, int* parent)
{
    const int pu = parent[u];
    const int pv = parent[v];
    if (pu == pv) {
        return false;
    }
    const int lo = min(pu, pv);
    const int hi = max(pu, pv);
    if (lo < parent[hi]) {  // read first: most hooks find the parent as low already
        atomicMin(&parent[hi], lo);
    }
    const int end = pu == hi ? u : v;
    if (lo < parent[end]) {
        atomicMin(&parent[end], lo);
    }
    return true;
}

// Every edge once: each thread takes CC_EDGES_PER_THREAD consecutive edges per pass
// (edges, not vertices, are spread over the grid, so a hub's list is shared by many
// threads), finds the first one's source by binary search and walks the offsets for
// the rest. With skip_reverse (a symmetric graph, each edge stored both ways) only
// edges u -> v with v < u are taken.
extern "C" __global__ void cc_hook(const long long* __restrict__ offsets,
                                   const int* __restrict__ indices,
                                   int* parent,
                                   int* __restrict__ state,
                                   int skip_reverse,
                                   int n)
{
    // Uniform exit: only cc_init and cc_check write the done word.
    if (state[CC_STATE_DONE] != 0 || n <= 0) {
        return;
    }
    const long long edges = __ldg(&offsets[n]);
    const long long threads = (long long)blockDim.x * gridDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int changed = 0;
    for (long long first = tid * CC_EDGES_PER_THREAD; first < edges;
         first += threads * CC_EDGES_PER_THREAD) {
        const long long last = min(first + (long long)CC_EDGES_PER_THREAD, edges);
        int u = owning_vertex(offsets, n, first);
        long long next = __ldg(&offsets[u + 1]);
        for (long long j = first; j < last; ++j) {
            while (j >= next) {  // past u's list: on to the vertex that holds edge j
                ++u;
                next = __ldg(&offsets[u + 1]);
            }
            const int v = __ldg(&indices[j]);
            if (skip_reverse != 0 && v >= u) {
                continue;
            }
            if (hook_edge(u, v, parent)) {
                changed = 1;
            }
        }
    }
    if (__syncthreads_or(changed) && threadIdx.x == 0) {
        state[CC_STATE_CHANGED] = 1;
    }
}
