
__device__ __forceinline__ unsigned load_parent(const unsigned* parent, unsigned x)
{
    // Other threads hook roots during the launch: always read the current word.
    return *((volatile const unsigned*)&parent[x]);
}

__device__ __forceinline__ unsigned find_root(const unsigned* parent, unsigned x)
{
    unsigned p = load_parent(parent, x);
    while (p != x) {
        x = p;
        p = load_parent(parent, x);
    }
    return x;
}

// Merges the classes of a and b; true when this call made the merge.
__device__ __forceinline__ bool hook(unsigned* parent, unsigned a, unsigned b)
{
    while (true) {
        a = find_root(parent, a);
        b = find_root(parent, b);
        if (a == b) {
            return false;
        }
        if (a < b) {
            const unsigned t = a;
            a = b;
            b = t;
        }
        // a > b: a lost its root status only if another thread hooked it meanwhile.
        if (atomicCAS(&parent[a], a, b) == a) {
            return true;
        }
    }
}
