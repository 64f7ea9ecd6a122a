"""Prepared dispatches: one kernel with fixed bindings, bound and checked once.

``await backend.dispatch(...)`` already finds a repeated binding by a lookup; a
:class:`PreparedDispatch` (``await backend.prepare(kernel, inputs)``) skips even the
lookup, for a hot loop that only changes scalars: ``await prepared(a=2.0)``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import numpy as np

from ..kernels import Kernel

__all__ = ["PreparedDispatch"]

Outputs = dict[str, np.ndarray]


class PreparedDispatch:
    """A dispatch bound once; call it with scalars to run it.

    Made by ``await backend.prepare(kernel, inputs, **scalars)``. Each call runs the
    kernel on the bound inputs: resident buffers as they are on the device, host
    arrays as they are at the call (copied then). Scalars not given take the values
    given to ``prepare``.

    Raises (from a call):
        ValidationError: A scalar the kernel refuses (nothing was enqueued).
        LifecycleError: The backend closed, or a bound resident buffer was freed;
            prepare the dispatch again with live buffers.
        DispatchError: The dispatch failed on the device.
    """

    __slots__ = ("_run", "_scalars", "kernel")

    def __init__(
        self,
        kernel: Kernel,
        run: Callable[[Mapping[str, Any]], Coroutine[Any, Any, Outputs]],
        scalars: dict[str, Any],
    ) -> None:
        #: The kernel this dispatch runs.
        self.kernel = kernel
        self._run = run
        self._scalars = scalars

    def __call__(self, **scalars: Any) -> Coroutine[Any, Any, Outputs]:
        """Run the dispatch once; use as ``await prepared(**scalars)``.

        Returns:
            The host-bound outputs as new arrays (resident outputs stay resident).
        """
        if scalars:
            return self._run({**self._scalars, **scalars})
        return self._run(self._scalars)

    def __repr__(self) -> str:
        return f"PreparedDispatch({self.kernel.name!r})"
