"""Shared fixtures: every async test runs on asyncio and on trio; seeded randomness."""

from __future__ import annotations

import inspect
import secrets
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from blockbuster import blockbuster_ctx

from vyre_async import logging as vyre_logging
from vyre_async.kernels import _compile as compile_module


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run each async test once per event loop."""
    return str(request.param)


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A fresh random generator; its seed is reported when the test fails."""
    seed = secrets.randbits(32)
    request.node.user_properties.append(("seed", seed))
    return np.random.default_rng(seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Print the random seed of a failed test so the failure can be replayed."""
    outcome = yield
    report = outcome.get_result()
    seeds = [value for key, value in item.user_properties if key == "seed"]
    if report.failed and seeds:
        report.sections.append(("random seed", f"rng seed = {seeds[0]}"))


@pytest.fixture
def private_kernel_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Kernels build into this test's own cache, on disk and in memory, so a build is
    really made, not served from another test's."""
    monkeypatch.setenv("VYRE_ASYNC_CACHE_DIR", str(tmp_path / "cache"))
    compile_module.clear_memory_cache()
    yield
    compile_module.clear_memory_cache()


@pytest.fixture(autouse=True)
def _graph_cache_in_a_temporary_folder(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Graphs that jobs cache (in this process or a child) go to this session's temporary
    folder, never the user's."""
    folder = tmp_path_factory.getbasetemp() / "graph-cache"
    monkeypatch.setenv("VYRE_ASYNC_GRAPH_CACHE_DIR", str(folder))


@pytest.fixture(autouse=True)
def _structlog_defaults() -> Iterator[None]:
    """Undo any configure_logging() a test (or the CLI it runs) made."""
    yield
    vyre_logging._unconfigure()


@pytest.fixture(autouse=True)
def _no_blocking_calls_on_the_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail an async test when anything blocks its event loop (blockbuster).

    Only async tests are watched: blocking is fine in plain tests, and the loop is
    where vyre_async promises never to block.
    """
    if not inspect.iscoroutinefunction(getattr(request.node, "function", None)):
        yield
        return
    with blockbuster_ctx():
        yield
