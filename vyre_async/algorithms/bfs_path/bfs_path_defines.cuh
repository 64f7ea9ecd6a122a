#define STATE_LEVEL 0
#define STATE_DONE 2
#define PATH_FOUND 2
#define PATH_LOST 3
