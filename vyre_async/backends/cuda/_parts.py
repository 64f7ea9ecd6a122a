"""What the CUDA backend's mixins call of one another, declared once.

Each method here is implemented by the mixin module named above it; declaring them
abstract on a base every mixin shares lets each module be checked on its own
(``mypy --strict``) without importing the others.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import anyio

from ...cuda import PinnedBuffer
from ...kernels import BoundCall, Kernel
from ...streams import Completion, PendingDispatch
from .._config import DispatchConfig
from .._interop import Borrowed
from .._resident import ResidentBuffer
from ._bound import BoundLaunch, Staging
from ._host_results import HostBlock
from ._launch import LoadedKernel
from ._work import DispatchWork, Work


class CudaParts(ABC):
    """The abstract methods one CUDA backend mixin calls on another."""

    # _borrowing.py
    @abstractmethod
    def _bind_borrowed(
        self, launch: BoundLaunch, work: Work, inputs: Mapping[str, Any], stream: Any
    ) -> None: ...

    @abstractmethod
    def _borrow(self, value: Any, name: str, stream: Any) -> Borrowed: ...

    @abstractmethod
    async def _copy_device(
        self, address: int, borrowed: Borrowed, *, into_borrowed: bool
    ) -> None: ...

    # _dispatch.py
    @abstractmethod
    async def _await_unrecorded(
        self, work: Completion, waits: list[Completion], staging: Staging | None
    ) -> list[Completion]: ...

    @abstractmethod
    def _enqueue_dispatch(
        self,
        launch: BoundLaunch,
        work: DispatchWork,
        inputs: Mapping[str, Any],
        waits: list[Completion],
        times: int,
        timing: bool,
        staging: Staging | None,
    ) -> None: ...

    # _launches.py
    @abstractmethod
    async def _bound_launch(
        self,
        kernel: Kernel,
        inputs: Mapping[str, Any],
        scalars: Mapping[str, Any],
        *,
        cache: bool = True,
    ) -> BoundLaunch: ...

    @abstractmethod
    def _new_launch(
        self, call: BoundCall[Any], loaded: LoadedKernel, scalars: Mapping[str, Any]
    ) -> BoundLaunch: ...

    @abstractmethod
    def _remember(self, key: tuple[Any, ...], launch: BoundLaunch) -> None: ...

    # _reads.py
    @abstractmethod
    def _unregister(self, block: HostBlock) -> None: ...

    # _sequences.py
    @abstractmethod
    def _release_read_block(self, block: PinnedBuffer) -> None: ...

    # _staging_pairs.py
    @abstractmethod
    def _free_spares(self, launch: BoundLaunch) -> None: ...

    @abstractmethod
    def _stage(self, launch: BoundLaunch, inputs: Mapping[str, Any]) -> Staging: ...

    @abstractmethod
    async def _stage_in_thread(self, launch: BoundLaunch, inputs: Mapping[str, Any]) -> Staging: ...

    @abstractmethod
    def _give_back_staging(self, launch: BoundLaunch, staging: Staging) -> None: ...

    @abstractmethod
    def _free_staging(self, staging: Staging) -> None: ...

    # _storage.py
    @abstractmethod
    def _pointer_of(self, buffer: ResidentBuffer) -> int: ...

    # _submit.py
    @abstractmethod
    def _copy_out_outputs(self, work: Work) -> Any: ...

    @abstractmethod
    async def _guarded(self, fn: Callable[[], Coroutine[Any, Any, None]], work: Work) -> None: ...

    @abstractmethod
    def _pending(
        self, work: Work, config: DispatchConfig, label: str, start: int
    ) -> PendingDispatch[Any]: ...

    @abstractmethod
    def _task_group_or_raise(self) -> anyio.abc.TaskGroup: ...
