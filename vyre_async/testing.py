"""Helpers for testing code that uses vyre_async (the library's own tests use them too).

``gated_kernel`` gives a kernel whose CPU reference blocks until the test opens its
gate, so "work still in flight" states can be reached without timing assumptions.
``capture_logs`` is structlog's, re-exported for convenience.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from structlog.testing import capture_logs

from .errors import LifecycleError
from .kernels import BufferParam, Kernel, ScalarParam, grid_stride
from .telemetry import TelemetrySnapshot

__all__ = [
    "Gate",
    "assert_no_resident_leaks",
    "capture_logs",
    "gated_kernel",
    "gpu_count",
    "gpu_unavailable_reason",
    "spin_kernel",
]


@dataclass
class Gate:
    """Holds a gated kernel's reference until :meth:`open` (or ``timeout`` seconds).

    Attributes:
        entered: Set when a reference started running and is waiting at the gate.
        timeout: Seconds a reference waits before failing, so a broken test cannot
            hang a worker thread forever.
    """

    timeout: float = 30.0
    entered: threading.Event = field(default_factory=threading.Event)
    _release: threading.Event = field(default_factory=threading.Event)

    def open(self) -> None:
        """Let every waiting and future run proceed."""
        self._release.set()

    def wait(self) -> None:
        """Called by the reference: block until opened."""
        self.entered.set()
        if not self._release.wait(self.timeout):
            raise LifecycleError(
                f"gated kernel waited {self.timeout:g} s and its gate was never opened",
                fix="call gate.open() in the test once the in-flight state was checked.",
            )


_GATED_SOURCE = r"""
extern "C" __global__ void gated_copy(const float* x, float* y, int n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        y[i] = x[i];
    }
}
"""


def gated_kernel(gate: Gate) -> Kernel:
    """A copy kernel (``y = x``, float32) whose CPU reference waits at ``gate`` first.

    On the CUDA backend it is an ordinary copy; use it with the CPU backend to hold a
    dispatch in flight for as long as a test needs.
    """

    def reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
        gate.wait()
        np.copyto(arrays["y"], arrays["x"])

    return Kernel(
        name="gated_copy",
        source=_GATED_SOURCE,
        entry="gated_copy",
        params=(
            BufferParam("x", np.float32, "in", "n"),
            BufferParam("y", np.float32, "out", "n"),
            ScalarParam("n", np.int32, default="n"),
        ),
        launch=grid_stride("n"),
        reference=reference,
    )


_SPIN_SOURCE = r"""
extern "C" __global__ void spin_copy(const float* x, float* y, long long cycles, int n) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        y[i] = x[i];
    }
}
"""


def _spin_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    np.copyto(arrays["y"], arrays["x"])


#: ``y = x`` after every thread busy-waits ``cycles`` GPU clock cycles: a kernel of a
#: chosen length (about 2e9 cycles per second on an H100) for cancellation tests and
#: the CPU-use benchmark. Its CPU reference only copies.
spin_kernel = Kernel(
    name="spin_copy",
    source=_SPIN_SOURCE,
    entry="spin_copy",
    params=(
        BufferParam("x", np.float32, "in", "n"),
        BufferParam("y", np.float32, "out", "n"),
        ScalarParam("cycles", np.int64),
        ScalarParam("n", np.int32, default="n"),
    ),
    launch=grid_stride("n"),
    reference=_spin_reference,
)


def assert_no_resident_leaks(snapshot: TelemetrySnapshot) -> None:
    """Fail when a telemetry snapshot still shows resident buffers alive.

    Raises:
        AssertionError: Some resident buffers were never freed.
    """
    if snapshot.resident_buffers_live or snapshot.resident_bytes_live:
        raise AssertionError(
            f"{snapshot.resident_buffers_live} resident buffers "
            f"({snapshot.resident_bytes_live} bytes) are still alive on {snapshot.device}"
        )


def gpu_count() -> int:
    """CUDA devices the driver sees here (0 where there is no driver).

    Meant for ``pytest.mark.skipif(gpu_count() < 2, ...)`` in tests that need several.
    """
    from .cuda import call, load_driver
    from .errors import VyreError

    try:
        driver = load_driver()
    except VyreError:
        return 0
    return int(call(driver.cuDeviceGetCount))


def gpu_unavailable_reason(ordinal: int = 0) -> str | None:
    """Why CUDA device ``ordinal`` cannot be used here, or ``None`` when it can.

    Meant for ``pytest.mark.skipif`` / ``pytest.skip`` in GPU tests: the reason is
    the driver's own (no library, no device, ordinal out of range).
    """
    from .cuda import CudaDevice
    from .errors import VyreError

    try:
        device = CudaDevice.open(ordinal)
    except VyreError as exc:
        return exc.what
    device.close()
    return None
