"""GPU tests: marked ``gpu``, skipped with the driver's reason where no GPU answers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import vyre_async as va
from vyre_async.testing import assert_no_resident_leaks, gpu_unavailable_reason

_REASON = gpu_unavailable_reason()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test under tests/gpu as ``gpu`` and skip them when no GPU answers."""
    for item in items:
        if "tests/gpu/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.gpu)
            if _REASON is not None:
                item.add_marker(pytest.mark.skip(reason=f"no usable CUDA GPU: {_REASON}"))


@pytest.fixture
async def cuda() -> AsyncIterator[va.Backend]:
    """An open CUDA backend whose allocations are back at baseline after the test."""
    async with va.open_backend("cuda") as backend:
        before = backend.live_allocations()  # type: ignore[attr-defined]
        yield backend
        after = backend.live_allocations()  # type: ignore[attr-defined]
        assert after == before, f"live allocations changed: {before} -> {after}"
        assert_no_resident_leaks(backend.telemetry())
