"""Per-dispatch options."""

from __future__ import annotations

from typing import Annotated

import msgspec

from ..errors import ConfigurationError

__all__ = ["DispatchConfig"]


class DispatchConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Options for one dispatch or sequence.

    Attributes:
        timeout: Seconds an ``await`` may wait before :class:`DispatchError`; ``None``
            waits for as long as it takes. The work itself is not cancelled.
        fixpoint_iterations: Back-to-back launches of the kernel on one stream (an
            ``inout`` buffer carries each launch's result into the next).
        timing: Measure device time with timing events (CUDA); the CPU backend
            always measures the reference's run time.
        label: Name used in logs and errors instead of the kernel name.
    """

    timeout: Annotated[float, msgspec.Meta(gt=0)] | None = None
    fixpoint_iterations: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 1
    timing: bool = False
    label: str | None = None

    def __post_init__(self) -> None:
        # msgspec checks Meta bounds when decoding, not on direct construction.
        if self.timeout is not None and not self.timeout > 0:
            raise ConfigurationError(
                f"DispatchConfig.timeout must be positive seconds, got {self.timeout}",
                fix="pass timeout=None to wait without limit, or a positive number.",
            )
        if not 1 <= self.fixpoint_iterations <= 1_000_000:
            raise ConfigurationError(
                "DispatchConfig.fixpoint_iterations must be in [1, 1000000], got "
                f"{self.fixpoint_iterations}",
                fix="pass at least one iteration.",
            )
