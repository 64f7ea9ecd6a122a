"""When the completion watcher polls next: spin briefly, then back off.

Short kernels finish within microseconds of being submitted, so right after new
work (or a completion) the watcher only yields between polls. Once that budget is
spent it sleeps, doubling the sleep up to a cap, so a long kernel costs a few
polls per millisecond at most and no busy core.
"""

from __future__ import annotations

__all__ = ["Backoff"]


class Backoff:
    """When to poll next: spin for a budget after progress, then sleep longer each time.

    Args:
        spin_s: Seconds after progress during which polls only yield (no sleep).
        min_sleep_s: First sleep once the spin budget is spent.
        max_sleep_s: Cap of the doubling sleeps.
    """

    __slots__ = ("_since", "_sleep", "max_sleep_s", "min_sleep_s", "spin_s")

    def __init__(self, *, spin_s: float, min_sleep_s: float, max_sleep_s: float) -> None:
        if spin_s < 0 or not 0 < min_sleep_s <= max_sleep_s:
            raise ValueError(
                f"need spin_s >= 0 and 0 < min_sleep_s <= max_sleep_s, got "
                f"{spin_s}, {min_sleep_s}, {max_sleep_s}"
            )
        self.spin_s = spin_s
        self.min_sleep_s = min_sleep_s
        self.max_sleep_s = max_sleep_s
        self._since = 0.0
        self._sleep = min_sleep_s

    def reset(self, now: float) -> None:
        """Note progress (or new work) at ``now``: spin again, then sleep from the minimum."""
        self._since = now
        self._sleep = self.min_sleep_s

    def next_wait(self, now: float) -> float:
        """Return how long to wait before the next poll; ``0.0`` means spin (yield only)."""
        if now - self._since < self.spin_s:
            return 0.0
        wait = self._sleep
        self._sleep = min(self._sleep * 2, self.max_sleep_s)
        return wait
