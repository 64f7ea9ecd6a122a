"""A job's graph and its inputs: generated or loaded, identified, cached, prepared.

The driver prepares the graph once per run (:func:`prepare_job_graph`: from the
R-MAT cache, generated on the device or the host, or read from the file the spec
names; :func:`prepare_graph` does the same for a ``[graph]`` section of another config
file); :func:`job_fingerprint` hashes what determines a job's results and
:func:`graph_fingerprint` what determines its graph. The other
stages import from here, never from the modules below.
"""

from ._graph_prep import prepare_graph as prepare_graph
from ._graph_prep import prepare_job_graph as prepare_job_graph
from ._graph_source import graph_fingerprint as graph_fingerprint
from ._graph_source import graph_loads as graph_loads
from ._graph_source import graph_path as graph_path
from ._graph_source import job_fingerprint as job_fingerprint
from ._graph_source import memory_limit as memory_limit

__all__ = [
    "graph_fingerprint",
    "graph_loads",
    "graph_path",
    "job_fingerprint",
    "memory_limit",
    "prepare_graph",
    "prepare_job_graph",
]
