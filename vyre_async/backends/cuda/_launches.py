"""Bound launches: a kernel with one set of bindings, built once and looked up after.

The first dispatch of a kernel with given bindings validates them in full, loads the
kernel and builds a :class:`~._bound.BoundLaunch` (launch shape, argument block,
staging plan, resident records); the backend keeps it in a bounded cache keyed by the
kernel and the bindings, so a repeated dispatch is a dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import DispatchError, ValidationError
from ...kernels import BoundCall, Kernel
from .._interop import Borrowed, host_view, is_foreign
from .._resident import ResidentBuffer
from ._base import LAUNCH_CACHE_SIZE, CudaBase
from ._bound import BoundLaunch, launch_key
from ._launch import LoadedKernel
from ._work import let_go


class CudaLaunches(CudaBase):
    """Bound launches: made on a kernel's first dispatch with given bindings, then looked up."""

    async def _bound_launch(
        self,
        kernel: Kernel,
        inputs: Mapping[str, Any],
        scalars: Mapping[str, Any],
        *,
        cache: bool = True,
    ) -> BoundLaunch:
        """The bound launch of ``kernel`` with these bindings, made (and cached) if new."""
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a vyre_async Kernel, got {type(kernel).__name__}")
        if not isinstance(inputs, Mapping):
            raise TypeError(f"inputs must be a mapping, got {type(inputs).__name__}")
        key = launch_key(kernel, inputs)
        launch = self._launches.get(key) if cache else None
        if launch is None:
            call = self._bind(kernel, inputs, scalars)
            loaded = self._kernels.get(kernel)
            if loaded is None:
                await self.load_kernels(kernel)
                loaded = self._loaded(kernel)
                # Another submission of these bindings may have made the launch while
                # this one waited for the kernel: keep that one (a second would take
                # the cache slot and strand the first one's staging).
                launch = self._launches.get(key) if cache else None
                if launch is not None:
                    return launch
            launch = self._new_launch(call, loaded, scalars)
            if cache:
                self._remember(key, launch)
        return launch

    def _bind(
        self, kernel: Kernel, inputs: Mapping[str, Any], scalars: Mapping[str, Any]
    ) -> BoundCall[Any]:
        """Validate a call in full: names, dtypes, lengths, scalars, resident buffers,
        and other libraries' arrays (borrowed to check them, then let go)."""
        converted: dict[str, Any] = {}
        for name, value in inputs.items():
            if is_foreign(value):
                view = host_view(value)
                if view is None:
                    borrowed = self._borrow(value, name, self._lanes[0].stream)
                    let_go([borrowed])
                    converted[name] = borrowed
                else:
                    converted[name] = view
            else:
                converted[name] = value
        call = kernel.bind(converted, scalars)
        for p in kernel.buffer_params:
            given = call.buffers.get(p.name)
            if isinstance(given, ResidentBuffer):
                self._registry.storage(given)
            elif given is not None and not isinstance(given, Borrowed):
                if p.role == "out":
                    raise ValidationError(
                        f"{p.name!r} is an output of kernel {kernel.name!r}; a host array "
                        "cannot receive it",
                        fix=f"leave {p.name!r} out of the inputs (it is returned), or bind a "
                        "ResidentBuffer to keep it on the device.",
                    )
                if not isinstance(given, np.ndarray):
                    raise ValidationError(
                        f"buffer {p.name!r} of kernel {kernel.name!r} must be a NumPy array "
                        f"or a ResidentBuffer, got {type(given).__name__}",
                        fix=f"pass np.asarray(..., dtype=np.{p.dtype}) for {p.name!r}.",
                    )
        return call

    def _new_launch(
        self, call: BoundCall[Any], loaded: LoadedKernel, scalars: Mapping[str, Any]
    ) -> BoundLaunch:
        loaded.check_launch(call.launch, self._cuda().info)
        launch = BoundLaunch(call, loaded)
        launch.raw_scalars = scalars
        launch.raw_types = [*map(type, scalars.values())]
        launch.refresh(self._registry)
        return launch

    async def free(self, buffer: ResidentBuffer) -> None:
        """Release a resident buffer (see :meth:`BackendCore.free`).

        Bound launches of the freed buffer leave the launch cache: they would refuse it
        anyway, and they must not keep its handle (whose lifetime an export's memory
        follows) alive.
        """
        await super().free(buffer)
        stale = [key for key, launch in self._launches.items() if buffer in launch.uses]
        for key in stale:
            self._free_spares(self._launches.pop(key))

    def _remember(self, key: tuple[Any, ...], launch: BoundLaunch) -> None:
        launches = self._launches
        if len(launches) >= LAUNCH_CACHE_SIZE:
            self._free_spares(launches.pop(next(iter(launches))))
        launches[key] = launch

    def _loaded(self, kernel: Kernel) -> LoadedKernel:
        loaded = self._kernels.get(kernel)
        if loaded is None:  # callers load every kernel before they enqueue
            raise DispatchError(
                f"kernel {kernel.name!r} is not loaded", fix="report this bug with the log."
            )
        return loaded
