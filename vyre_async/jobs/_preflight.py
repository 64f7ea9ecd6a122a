"""What a job checks before it loads anything: that the CUDA backend it asks for answers.

A job on ``backend = "cuda"`` used to generate or read its graph first and only then
find that no GPU answers; the check here takes a fraction of a second, so such a job
stops at once. ``auto`` falls back to the CPU backend and Ray actors find their own
GPUs, so only a local CUDA job is checked.
"""

from __future__ import annotations

from ..backends import BackendKind, DeviceSelector
from ..errors import VyreError
from ..streams import call, load_driver


def backend_unavailable_reason(
    kind: BackendKind, devices: DeviceSelector, executor: str = "local"
) -> str | None:
    """Why a job on backend ``kind`` and ``devices`` cannot start here, or ``None``.

    Loads the CUDA driver and counts its devices, making no context; this blocks
    (run it in a worker thread from async code).

    Args:
        kind: The backend the job asks for.
        devices: An ordinal, ``"all"`` or a list of ordinals.
        executor: ``"local"`` or ``"ray"`` (Ray jobs are not checked here).

    Returns:
        The driver's reason (no library, no device, an ordinal beyond the count), or
        ``None`` when the job can start.
    """
    if kind != "cuda" or executor != "local":
        return None
    try:
        count = int(call(load_driver().cuDeviceGetCount))
    except VyreError as exc:
        return exc.what
    if count == 0:
        return "the CUDA driver loaded but reports 0 devices"
    wanted = [] if devices == "all" else [devices] if isinstance(devices, int) else list(devices)
    beyond = [ordinal for ordinal in wanted if ordinal >= count]
    if beyond:
        return f"device {beyond[0]} was asked for and the CUDA driver reports {count} device(s)"
    return None
