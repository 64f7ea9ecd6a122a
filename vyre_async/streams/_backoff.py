"""When the completion watcher polls next: spin briefly, then back off.

Short kernels finish within microseconds of being submitted, so right after new
work (or a completion) the watcher only yields between polls. Once that budget is
spent it sleeps for a fixed fraction of the time already waited (between a floor and
a cap), so the completion is noticed at most that fraction late (12.5% by default),
and a long kernel costs a few polls per millisecond at most and no busy core.
(Doubling sleeps overshot a 4 ms traversal by up to 2 ms on the H200.)
"""

from __future__ import annotations

__all__ = ["Backoff"]


class Backoff:
    """When to poll next: spin for a budget after progress, then sleep longer each time.

    Args:
        spin_s: Seconds after progress during which polls only yield (no sleep).
        min_sleep_s: Shortest sleep once the spin budget is spent.
        max_sleep_s: Longest sleep.
        fraction: Sleep this fraction of the time waited since the last progress.
    """

    __slots__ = ("_since", "fraction", "max_sleep_s", "min_sleep_s", "spin_s")

    def __init__(
        self, *, spin_s: float, min_sleep_s: float, max_sleep_s: float, fraction: float = 0.125
    ) -> None:
        if spin_s < 0 or not 0 < min_sleep_s <= max_sleep_s:
            raise ValueError(
                f"need spin_s >= 0 and 0 < min_sleep_s <= max_sleep_s, got "
                f"{spin_s}, {min_sleep_s}, {max_sleep_s}"
            )
        if not 0 < fraction <= 1:
            raise ValueError(f"need 0 < fraction <= 1, got {fraction}")
        self.spin_s = spin_s
        self.min_sleep_s = min_sleep_s
        self.max_sleep_s = max_sleep_s
        self.fraction = fraction
        self._since = 0.0

    def reset(self, now: float) -> None:
        """Note progress (or new work) at ``now``: spin again, then sleep from the minimum."""
        self._since = now

    def next_wait(self, now: float, spin_s: float | None = None) -> float:
        """Return how long to wait before the next poll; ``0.0`` means spin (yield only).

        ``spin_s`` replaces the spin budget for this call (the watcher spins longer
        while little is in flight).
        """
        waited = now - self._since
        if waited < (self.spin_s if spin_s is None else spin_s):
            return 0.0
        return min(self.max_sleep_s, max(self.min_sleep_s, waited * self.fraction))
