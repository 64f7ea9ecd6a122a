"""R-MAT built on the device: the edge stream drawn, radix-sorted and compacted there.

:func:`rmat_on_device` gives the same graph as the host's
:func:`vyre_async.graphs.rmat`, array for array, without the keys ever leaving the
device until they are CSR arrays. The kernels' CUDA C is in this package's ``.cu``
file; they are compiled on first use, not when a backend opens.
"""

from ._kernels import RMAT_KERNELS as RMAT_KERNELS
from ._kernels import RMAT_RADIX_BITS as RMAT_RADIX_BITS
from ._kernels import radix_histogram as radix_histogram
from ._kernels import radix_scatter as radix_scatter
from ._kernels import rmat_edge_keys as rmat_edge_keys
from ._kernels import rmat_tiles as rmat_tiles
from ._kernels import scan_exclusive as scan_exclusive
from ._kernels import unique_compact as unique_compact
from ._kernels import unique_count as unique_count
from ._run import MAX_DEVICE_RMAT_KEYS as MAX_DEVICE_RMAT_KEYS
from ._run import device_rmat_bytes as device_rmat_bytes
from ._run import rmat_on_device as rmat_on_device

__all__ = [
    "MAX_DEVICE_RMAT_KEYS",
    "RMAT_KERNELS",
    "RMAT_RADIX_BITS",
    "device_rmat_bytes",
    "radix_histogram",
    "radix_scatter",
    "rmat_edge_keys",
    "rmat_on_device",
    "rmat_tiles",
    "scan_exclusive",
    "unique_compact",
    "unique_count",
]
