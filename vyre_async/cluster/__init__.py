"""Beyond one host: a job's blocks on Ray actors (the optional ``vyre-async[ray]`` extra).

A job file with ``[job] executor = "ray"`` runs its items on one actor per GPU of a
Ray cluster (``ray_address``, or a local Ray instance), each holding a backend with
the job's graph resident. The driver prepares the graph once and hands its arrays to
the actors through Ray's object store; the driver's runner keeps the queue, the
retries and the manifest, so results still commit exactly once. Importing this package does not
import Ray; starting a Ray job does.
"""

from ._actor import GraphWorker as GraphWorker
from ._actor import WorkerInfo as WorkerInfo
from ._executor import RayConnection as RayConnection
from ._executor import RayTarget as RayTarget
from ._executor import connect_ray as connect_ray
from ._executor import ray_target as ray_target

__all__ = [
    "GraphWorker",
    "RayConnection",
    "RayTarget",
    "WorkerInfo",
    "connect_ray",
    "ray_target",
]
