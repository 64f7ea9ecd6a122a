"""Beyond one host: a job's blocks on Ray actors (the optional ``vyre-async[ray]`` extra).

A job file with ``[job] executor = "ray"`` runs its items on one actor per GPU of a
Ray cluster (``ray_address``, or a local Ray instance), each holding a backend with
the job's graph resident. The driver prepares the graph once and hands its arrays to
the actors through Ray's object store; the driver's runner keeps the queue, the
retries and the manifest, so results still commit exactly once. The job runner
finds this executor by its name (importing this package registers it); importing
the package does not import Ray, starting a Ray job does.
"""

from ..jobs import register_executor as _register_executor
from ._actor import GraphWorker as GraphWorker
from ._actor import WorkerInfo as WorkerInfo
from ._executor import RayConnection as RayConnection
from ._executor import RayExecutor as RayExecutor
from ._executor import RayTarget as RayTarget
from ._executor import connect_ray as connect_ray
from ._executor import ray_target as ray_target

_register_executor("ray", RayExecutor())

__all__ = [
    "GraphWorker",
    "RayConnection",
    "RayExecutor",
    "RayTarget",
    "WorkerInfo",
    "connect_ray",
    "ray_target",
]
