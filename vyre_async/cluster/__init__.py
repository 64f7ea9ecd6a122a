"""Beyond one host: a job's blocks on Ray actors (the optional ``vyre-async[ray]`` extra).

A job file with ``[job] executor = "ray"`` runs its items on one actor per GPU of a
Ray cluster (``ray_address``, else ``RAY_ADDRESS``, else a local Ray instance), each
holding a backend with the job's graph resident. The graph reaches the actors through
Ray's object store, put there once per cluster: the cluster's :class:`GraphStore`
keeps it for later jobs of the same graph. The driver's runner keeps the queue, the
retries and the manifest, so results still commit exactly once. The job runner
finds this executor by its name (importing this package registers it); importing
the package does not import Ray, starting a Ray job does.
"""

from ..jobs import register_executor as _register_executor
from ._actor import GraphWorker as GraphWorker
from ._actor import WorkerInfo as WorkerInfo
from ._executor import RayConnection as RayConnection
from ._executor import RayExecutor as RayExecutor
from ._executor import connect_ray as connect_ray
from ._executor import ray_target as ray_target
from ._store import GraphStore as GraphStore
from ._store import KeptGraph as KeptGraph
from ._target import RayTarget as RayTarget

_register_executor("ray", RayExecutor())

__all__ = [
    "GraphStore",
    "GraphWorker",
    "KeptGraph",
    "RayConnection",
    "RayExecutor",
    "RayTarget",
    "WorkerInfo",
    "connect_ray",
    "ray_target",
]
