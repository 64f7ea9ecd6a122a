"""Serving queries over HTTP: an ASGI app over resident graphs, and ``vyre-async serve``.

:func:`create_app` makes a Starlette app (asyncio or trio) over the graphs of a
serve config (:func:`load_serve_config`): one endpoint per registered query kind and
graph, every query through its graph's session and batcher, bounded queues answering
429 with ``Retry-After``, KServe v2 health, Prometheus metrics, a bearer token.
:func:`serve_app` runs it under Hypercorn; ``vyre-async serve CONFIG`` does both and
drains on SIGTERM. Starlette and Hypercorn are the ``serve`` extra's and are imported
only when an app is made or served. See the serve guide.
"""

from ._app import create_app as create_app
from ._app import missing_serve_packages as missing_serve_packages
from ._auth import BearerCheck as BearerCheck
from ._auth import read_token as read_token
from ._command import serve_command as serve_command
from ._config import AuthSection as AuthSection
from ._config import LimitsSection as LimitsSection
from ._config import ServeBatching as ServeBatching
from ._config import ServeConfig as ServeConfig
from ._config import ServedGraphSection as ServedGraphSection
from ._config import ServeLogging as ServeLogging
from ._config import ServerSection as ServerSection
from ._config import load_serve_config as load_serve_config
from ._host import Generation as Generation
from ._host import GraphHost as GraphHost
from ._host import ServedGraph as ServedGraph
from ._server import bind_socket as bind_socket
from ._server import serve_app as serve_app

__all__ = [
    "AuthSection",
    "BearerCheck",
    "Generation",
    "GraphHost",
    "LimitsSection",
    "ServeBatching",
    "ServeConfig",
    "ServeLogging",
    "ServedGraph",
    "ServedGraphSection",
    "ServerSection",
    "bind_socket",
    "create_app",
    "load_serve_config",
    "missing_serve_packages",
    "read_token",
    "serve_app",
    "serve_command",
]
