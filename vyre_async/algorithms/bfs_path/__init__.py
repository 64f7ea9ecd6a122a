"""Shortest paths by hops: one path from a source to a target, found by a BFS.

A query runs the BFS of :mod:`..bfs` from the source until the target has a level,
then walks back from the target over in-edges on the device (``bfs_path_step``) and
reads back only the path. The query kind ``bfs_path`` (:data:`BFS_PATH`) runs it
from a session (``session.path``) and from a job (one ``target``, many ``sources``).
"""

from ...kernels import register_builtin as _register_builtin
from .._registry import register as _register
from ._kernels import BFS_PATH_KERNELS as BFS_PATH_KERNELS
from ._kernels import bfs_path_init as bfs_path_init
from ._kernels import bfs_path_step as bfs_path_step
from ._kind import BFS_PATH as BFS_PATH
from ._kind import BfsPathParams as BfsPathParams
from ._layout import PATH_FOUND as PATH_FOUND
from ._layout import PATH_LOST as PATH_LOST
from ._run import PathScratch as PathScratch
from ._run import find_path as find_path

_register_builtin(*BFS_PATH_KERNELS)
_register(BFS_PATH)

__all__ = [
    "BFS_PATH",
    "BFS_PATH_KERNELS",
    "BfsPathParams",
    "PATH_FOUND",
    "PATH_LOST",
    "PathScratch",
    "bfs_path_init",
    "bfs_path_step",
    "find_path",
]
