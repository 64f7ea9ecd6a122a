"""``create_app``: the ASGI app over a serve config's graphs.

Starlette is the serve extra's (``pip install 'vyre-async[serve]'``) and is imported
only when an app is made, so ``import vyre_async.serve`` works without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigurationError
from ._auth import BearerCheck, read_token
from ._config import ServeConfig
from ._host import GraphHost
from ._requests import kind_bodies

if TYPE_CHECKING:
    from starlette.applications import Starlette

#: What ``pip install`` adds to serve, for messages.
SERVE_EXTRA = "pip install 'vyre-async[serve]' (Starlette and Hypercorn)"


def missing_serve_packages() -> list[str]:
    """The serve extra's packages this environment cannot import (none: all there)."""
    import importlib.util

    missing = []
    for name in ("starlette", "hypercorn"):
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:  # a finder that refuses the name outright
            found = False
        if not found:
            missing.append(name)
    return missing


def create_app(
    config: ServeConfig | GraphHost, *, config_file: str | Path | None = None
) -> Starlette:
    """A Starlette app serving the graphs of ``config`` (blocking: reads a token file).

    The app's lifespan opens the devices and loads the graphs in the background
    (liveness answers at once; readiness once every graph is resident on every
    device), and on shutdown drains the queries and closes the sessions. Mounted in
    another Starlette or FastAPI app, hand the outer app this app's lifespan
    (``lifespan=app.router.lifespan_context``). ``app.state.graph_host`` is its
    :class:`GraphHost`.

    Args:
        config: The serve config, or a :class:`GraphHost` made from one.
        config_file: Where the config came from: relative graph and token paths start
            at its folder (default: the host's, else the current folder).

    Returns:
        The app (serve it with any ASGI server: :func:`serve_app` runs Hypercorn).

    Raises:
        ConfigurationError: Starlette is not installed, or the token cannot be read.
    """
    missing = missing_serve_packages()
    if "starlette" in missing:
        raise ConfigurationError(
            "serving needs Starlette, which is not installed", fix=f"{SERVE_EXTRA}."
        )
    from ._routes import build_app

    host = config if isinstance(config, GraphHost) else GraphHost(config, config_file=config_file)
    token = read_token(host.config.auth, host.config_file)
    return build_app(host, BearerCheck(token), kind_bodies())
