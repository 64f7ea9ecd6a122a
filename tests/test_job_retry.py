"""Retry waits of the job runner: exponential up to a cap, with equal jitter."""

from __future__ import annotations

import secrets
from pathlib import Path

import anyio
import numpy as np
import pytest
from job_files import committed, job_file

import vyre_async as va
from vyre_async.jobs import BlockResult, JobRunner, LimitsSection, WorkloadSection, load_job
from vyre_async.jobs.runner._retry import retry_delay
from vyre_async.sessions import ResidentGraphSession


class RecordingGenerator(np.random.Generator):
    """A seeded generator that remembers each ``uniform(low, high)`` it drew."""

    def __init__(self, seed: int) -> None:
        super().__init__(np.random.PCG64(seed))
        self.draws: list[tuple[float, float, float]] = []

    def uniform(self, low: float = 0.0, high: float = 1.0, size: None = None) -> float:  # type: ignore[override]
        value = float(super().uniform(low, high, size))
        self.draws.append((low, high, value))
        return value


def test_twenty_retries_wait_at_most_the_cap_each(rng: np.random.Generator) -> None:
    """retry_backoff_s=0.1, cap 30 s: wait n lies in [c/2, c], c = min(30, 0.1 * 2**(n-1))."""
    limits = LimitsSection(retries=20, retry_backoff_s=0.1, retry_backoff_max_s=30.0)
    waits = [retry_delay(limits, n, rng) for n in range(1, 21)]
    for n, wait in enumerate(waits, start=1):
        ceiling = min(30.0, 0.1 * 2.0 ** (n - 1))
        assert ceiling / 2 <= wait <= ceiling, (n, wait)
    assert max(waits) <= 30.0  # uncapped, the 20th wait would be 0.1 * 2**19 s, 14.6 hours
    assert sum(waits) < 20 * 30.0


def test_the_same_seed_gives_the_same_waits_and_the_jitter_spreads_them() -> None:
    """Waits are a function of the generator: equal seeds agree; draws spread over [c/2, c]."""
    limits = LimitsSection(retry_backoff_s=1.0, retry_backoff_max_s=8.0)
    seed = secrets.randbits(32)
    first = [retry_delay(limits, 6, np.random.default_rng(seed)) for _ in range(3)]
    assert first[0] == first[1] == first[2], f"seed {seed}"
    at_cap = np.array(
        [retry_delay(limits, 6, np.random.default_rng(seed + i)) for i in range(2000)]
    )
    assert at_cap.min() >= 4.0
    assert at_cap.max() <= 8.0
    # Uniform on [4, 8]: mean 6, standard error 1.155 / sqrt(2000) = 0.026.
    assert abs(float(at_cap.mean()) - 6.0) < 0.15, f"seed {seed}"
    assert np.ptp(at_cap) > 3.5, f"seed {seed}"


def test_attempt_numbers_start_at_one() -> None:
    """Retry 0 does not exist: a ValueError, not a wait."""
    with pytest.raises(ValueError, match="from 1"):
        retry_delay(LimitsSection(), 0, np.random.default_rng(0))


async def test_the_runner_waits_the_drawn_jittered_backoff_between_attempts(
    tmp_path: Path,
) -> None:
    """A block failing twice: the runner draws from [0, c/2] with c = 0.02 then the cap 0.03."""
    seed = secrets.randbits(32)
    attempts_at: list[float] = []

    async def execute(
        session: ResidentGraphSession, workload: WorkloadSection, sources: np.ndarray
    ) -> BlockResult:
        attempts_at.append(anyio.current_time())
        if len(attempts_at) <= 2:
            raise va.DispatchError("pretend the device was busy", fix="none (a test).")
        return await va.jobs.execute_block(session, workload, sources)

    job = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": [0, 1, 2]}],
        limits={"retries": 3, "retry_backoff_s": 0.02, "retry_backoff_max_s": 0.03},
    )
    spec = await anyio.to_thread.run_sync(load_job, job)
    generator = RecordingGenerator(seed)
    summary = await JobRunner(spec, job_file=job, execute=execute, retry_rng=generator).run()
    assert summary.status == "complete"
    assert summary.retries == 2
    assert [(low, high) for low, high, _ in generator.draws] == [(0.0, 0.01), (0.0, 0.015)]
    expected = np.random.default_rng(seed)
    waits = [0.01 + expected.uniform(0.0, 0.01), 0.015 + expected.uniform(0.0, 0.015)]
    assert [0.01 + generator.draws[0][2], 0.015 + generator.draws[1][2]] == waits
    gaps = np.diff(attempts_at)
    assert (gaps >= np.array(waits) - 1e-3).all(), (gaps, waits, seed)
    records = await committed(tmp_path / "out")
    assert sorted(r.attempts for r in records) == [3, 3, 3]
