"""Staging pairs: the page-locked and device blocks a launch's host inputs go through.

A bound launch keeps a few idle pairs (:data:`~._bound.SPARE_STAGING`) so a repeated
dispatch reuses them; host inputs are copied into the page-locked half on the loop,
or in a worker thread when they are large.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import numpy as np

from ._base import OPEN, CudaBase
from ._bound import SPARE_STAGING, SPARE_STAGING_MAX_BYTES, BoundLaunch, Staging


class CudaStaging(CudaBase):
    """Staging pairs: taken for a dispatch's host inputs, kept per launch for the next one."""

    def _stage(self, launch: BoundLaunch, inputs: Mapping[str, Any]) -> Staging:
        """A staging pair holding this dispatch's host inputs (copied on the loop)."""
        staging = self._take_staging(launch)
        try:
            typed = staging.typed
            for name in launch.host_inputs:
                np.copyto(typed[name], inputs[name])
        except BaseException:
            self._give_back_staging(launch, staging)
            raise
        return staging

    async def _stage_in_thread(self, launch: BoundLaunch, inputs: Mapping[str, Any]) -> Staging:
        """A staging pair for large host inputs, copied in a worker thread (the loop
        stays free; np.copyto drops the GIL)."""
        staging = self._take_staging(launch)
        typed = staging.typed
        pairs = [(typed[name], inputs[name]) for name in launch.host_inputs]

        def copy() -> None:
            for target, source in pairs:
                np.copyto(target, source)

        try:
            # Not abandoned on cancellation: the wait returns once the copy has ended.
            await anyio.to_thread.run_sync(copy, limiter=self._copy_limiter)
        except BaseException:
            self._give_back_staging(launch, staging)
            raise
        return staging

    def _take_staging(self, launch: BoundLaunch) -> Staging:
        if launch.spares:
            return launch.spares.pop()
        plan = launch.plan
        assert plan is not None
        pinned = self._pinned.acquire(plan.total)
        try:
            block = self._memory.acquire(plan.total)
        except BaseException:
            self._pinned.release(pinned)
            raise
        return Staging(pinned, block, plan)

    def _give_back_staging(self, launch: BoundLaunch, staging: Staging) -> None:
        if (
            launch.keeps_spares
            and len(launch.spares) < SPARE_STAGING
            and staging.pinned.capacity <= SPARE_STAGING_MAX_BYTES
            and self._state is OPEN
        ):
            launch.spares.append(staging)
            return
        self._free_staging(staging)

    def _free_staging(self, staging: Staging) -> None:
        if self._device is None or self._device.lost:
            return
        self._pinned.release(staging.pinned)
        self._memory.release(staging.block)

    def _free_spares(self, launch: BoundLaunch) -> None:
        while launch.spares:
            self._free_staging(launch.spares.pop())
