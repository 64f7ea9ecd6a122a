"""Leaving ``open_devices`` closes every device of the group at the same time."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import vyre_async as va

sys.path.insert(0, str(Path(__file__).parent))
import cuda_sim


async def test_leaving_open_devices_closes_every_device_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three simulated devices free their streams at the same time when the group's
    block is left, and every context is let go."""
    sim = cuda_sim.install(monkeypatch, devices=3)
    sim.meet("cuStreamDestroy")
    async with va.open_devices("cuda", devices="all") as group:
        assert len(group) == 3
        assert sim.live_contexts == 3
    assert sim.apart == set(), "devices closed one after another"
    assert [counts["cuStreamDestroy"] > 0 for counts in sim.per_device] == [True] * 3
    assert sim.live_contexts == 0
