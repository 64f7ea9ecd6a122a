#define EMPTY_SLOT 4294967295u
#define S_DONE 0
#define S_CHANGED 1
#define S_ROUNDS 2
#define S_MAX_ROUNDS 3
#define S_MERGES 4
#define S_CONVERGED 5
