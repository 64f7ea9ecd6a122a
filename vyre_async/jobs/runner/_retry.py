"""How long a job waits before retrying a block: exponential, capped, jittered.

The wait before retry ``n`` (1 for the first) is drawn from ``[c/2, c]`` with
``c = min(retry_backoff_max_s, retry_backoff_s * 2**(n - 1))`` ("equal jitter"): it
grows by doubling up to the cap, so twenty retries never wait hours, and it is never
shorter than half of ``c``, while blocks that failed together (a device briefly out
of memory) spread their retries over the other half instead of all coming back at once.
"""

from __future__ import annotations

import numpy as np

from ..spec import LimitsSection


def retry_delay(limits: LimitsSection, attempt: int, rng: np.random.Generator) -> float:
    """Seconds to wait before retry ``attempt`` (1 for the first retry).

    Args:
        limits: The job's ``[limits]`` (``retry_backoff_s``, ``retry_backoff_max_s``).
        attempt: Which retry this is, from 1.
        rng: Draws the jitter.

    Returns:
        A wait in ``[c/2, c]``, ``c`` the capped exponential backoff.
    """
    if attempt < 1:
        raise ValueError(f"attempt counts retries from 1, got {attempt}")
    # 2.0 ** n stays a float (no huge int) however many retries a job allows.
    ceiling = min(limits.retry_backoff_max_s, limits.retry_backoff_s * 2.0 ** (attempt - 1))
    half = ceiling / 2
    return half + float(rng.uniform(0.0, half))
