"""Graph algorithms on any backend: each its kernels, NumPy references and driver code.

- :mod:`~vyre_async.algorithms.bfs`: direction-optimizing single-source BFS.
- :mod:`~vyre_async.algorithms.msbfs`: multi-source BFS, 64 sources per lane word.
- :mod:`~vyre_async.algorithms.pagerank`: pull PageRank in float32.
- :mod:`~vyre_async.algorithms.egraph`: e-graph images and congruence closure.
- :mod:`~vyre_async.algorithms.rmat`: the R-MAT generator on the device.

Each package keeps its CUDA C in ``.cu`` files shipped as package data and runs its
kernels as resident repeated sequences on the :class:`~vyre_async.backends.Backend`
protocol, so the same code runs on the CPU and the CUDA backend. Importing this
package registers the kernels a CUDA backend loads when it opens.
"""

from . import bfs as bfs
from . import egraph as egraph
from . import msbfs as msbfs
from . import pagerank as pagerank
from . import rmat as rmat

__all__ = ["bfs", "egraph", "msbfs", "pagerank", "rmat"]
