"""Executors are found by name: jobs never imports the cluster layer that provides Ray."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from vyre_async.errors import ConfigurationError
from vyre_async.jobs import register_executor
from vyre_async.jobs.runner._executors import _EXECUTORS, LocalExecutor, executor_for


@pytest.fixture
def registry() -> Iterator[None]:
    """The executor registry as it was before the test."""
    saved = dict(_EXECUTORS)
    yield
    _EXECUTORS.clear()
    _EXECUTORS.update(saved)


def test_the_ray_executor_is_imported_only_when_a_job_asks_for_it() -> None:
    """Importing jobs leaves cluster unimported; asking for "ray" imports and finds it."""
    code = (
        "import sys\n"
        "from vyre_async.jobs.runner._executors import executor_for\n"
        "assert 'vyre_async.cluster' not in sys.modules, 'cluster imported eagerly'\n"
        "executor = executor_for('ray')\n"
        "assert 'vyre_async.cluster' in sys.modules\n"
        "assert 'ray' not in sys.modules, 'Ray imported before a Ray job starts'\n"
        "print(type(executor).__module__, type(executor).__name__)\n"
    )
    done = subprocess.run(  # noqa: S603 - runs this interpreter on a fixed snippet
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["vyre_async.cluster._executor", "RayExecutor"]


def test_local_is_built_in() -> None:
    """The local executor needs no provider module."""
    assert isinstance(executor_for("local"), LocalExecutor)


@pytest.mark.usefixtures("registry")
def test_an_unknown_executor_is_a_configuration_error_naming_the_known_ones() -> None:
    """A name nobody registered raises ConfigurationError listing local and ray."""
    with pytest.raises(ConfigurationError, match=r"'spark'.*known: local, ray.*Fix:"):
        executor_for("spark")


@pytest.mark.usefixtures("registry")
def test_a_registered_executor_is_found_by_its_name() -> None:
    """register_executor makes an executor available under its name."""
    mine = LocalExecutor()
    register_executor("mine", mine)
    assert executor_for("mine") is mine
