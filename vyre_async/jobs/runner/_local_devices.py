"""The devices a local job asks for, against the devices this machine has.

A CUDA job is checked by :func:`~._preflight.backend_unavailable_reason` (no GPU, or
an ordinal beyond the driver's count, stops it with the ``--backend cpu`` fix). The
others are checked here, so an ordinal that names no device is an error, never a
silent run on another one:

- ``backend = "auto"``: the ordinals must be GPUs the CUDA driver reports; where it
  reports none, the job falls back to the CPU backend, which has device 0 only.
- ``backend = "cpu"``: the CPU backend's devices are numbered from 0; a list of n
  ordinals opens n logical CPU devices, so it must hold 0 to n-1.

Ray jobs find their GPUs on the cluster and are not checked here. Device 0 and
``"all"`` exist everywhere, so only a job asking for another ordinal loads the driver.
"""

from __future__ import annotations

import shlex

from ...backends import BackendKind, DeviceSelector
from ...cuda import call, load_driver
from ...errors import VyreError
from ..spec import JobSpec
from ._preflight import backend_unavailable_reason


def missing_device_reason(
    kind: BackendKind, devices: DeviceSelector, executor: str = "local"
) -> str | None:
    """Why an ``auto`` or ``cpu`` job's devices do not exist here, or ``None``.

    Loads the CUDA driver (no context) when an ``auto`` job names an ordinal above 0;
    this blocks (run it in a worker thread from async code).

    Args:
        kind: The backend the job asks for (``"cuda"`` is not checked here).
        devices: An ordinal, ``"all"`` or a list of ordinals.
        executor: ``"local"`` or ``"ray"`` (Ray jobs are not checked here).

    Returns:
        What was asked for and which devices exist, or ``None`` when they all exist.
    """
    if executor != "local" or kind == "cuda" or devices == "all":
        return None
    wanted = [devices] if isinstance(devices, int) else list(devices)
    if kind == "cpu":
        beyond = [ordinal for ordinal in wanted if ordinal >= len(wanted)]
        if not beyond:
            return None
        have = (
            "has device 0 only"
            if len(wanted) == 1
            else f"opens the logical devices 0 to {len(wanted) - 1} for a list of {len(wanted)}"
        )
        return f"device {beyond[0]} was asked for, and the CPU backend {have}"
    if all(ordinal == 0 for ordinal in wanted):
        return None
    try:
        count = int(call(load_driver().cuDeviceGetCount))
        why = "the CUDA driver reports 0 devices"
    except VyreError as exc:
        count, why = 0, exc.what.rstrip(".")
    beyond = [ordinal for ordinal in wanted if ordinal >= max(count, 1)]
    if not beyond:
        return None
    if count:
        return (
            f"device {beyond[0]} was asked for and the CUDA driver reports {count} "
            f"device(s), 0 to {count - 1}"
        )
    return (
        f"device {beyond[0]} was asked for, and no GPU answers here ({why}), so the job "
        "would run on the CPU backend, which has device 0 only"
    )


def device_warning(spec: JobSpec, job_file: str) -> str | None:
    """What would stop ``vyre-async run`` of a valid job on this machine, with the fix;
    ``None`` when its backend and devices are here (blocking: loads the CUDA driver)."""
    job = spec.job
    command = ["vyre-async", "run", job_file]
    reason = backend_unavailable_reason(job.backend, job.devices, job.executor)
    if reason is not None:
        reason = reason.rstrip(".")
        return (
            f'job {job.name!r} runs on the CUDA backend ([job] backend = "cuda"), and '
            f"{reason}; a run here stops before it starts. Fix: run it where a GPU "
            f"answers, or on the CPU backend: {shlex.join([*command, '--backend', 'cpu'])}"
        )
    reason = missing_device_reason(job.backend, job.devices, job.executor)
    if reason is not None:
        return (
            f"job {job.name!r}: {reason}; a run here stops before it starts. Fix: "
            f"{shlex.join([*command, '--devices', '0'])}, or run it where those devices are."
        )
    return None
