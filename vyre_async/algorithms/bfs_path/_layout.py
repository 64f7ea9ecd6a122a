"""What the path kernels read of the BFS state, and what they add to it."""

from __future__ import annotations

from ..bfs import STATE_DONE, STATE_LEVEL

#: ``state[STATE_DONE]`` once the walk back from the target has written the path.
PATH_FOUND = 2
#: ``state[STATE_DONE]`` when the walk found no in-neighbour one level closer (levels
#: that are not one traversal's); the path is then not read.
PATH_LOST = 3

#: What ``bfs_path_defines.cuh`` defines, by the names the CUDA C uses (a test checks it).
CUDA_DEFINES: dict[str, int] = {
    "STATE_LEVEL": STATE_LEVEL,
    "STATE_DONE": STATE_DONE,
    "PATH_FOUND": PATH_FOUND,
    "PATH_LOST": PATH_LOST,
}
