"""Whether the NVIDIA driver can run what the installed CUDA packages produce.

cuda-bindings and NVRTC come from one extra, ``vyre-async[cu12]`` or
``vyre-async[cu13]``. Kernels are compiled to CUBINs by NVRTC; a CUBIN from NVRTC
of CUDA major N, and the bindings of major N, need a driver that supports CUDA N
(``cuDriverGetVersion`` at least ``N * 1000``): driver branch 525 or newer for
CUDA 12, 580 or newer for CUDA 13. :func:`check_cuda_toolchain` finds out before a
CUDA backend opens, so ``open_backend("auto")`` falls back to the CPU backend with
the fix instead of failing on the first module load.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Literal

import msgspec

from ..cuda import call, load_driver
from ..errors import UnsupportedFeatureError, VyreError
from ..kernels import nvrtc_version

#: The oldest driver branch that supports each CUDA major this package has an extra for.
DRIVER_BRANCH = {12: 525, 13: 580}

#: What to install, in words, when no CUDA package is there at all.
INSTALL_CUDA = (
    "install the CUDA extra that matches the driver: pip install 'vyre-async[cu13]' "
    "(driver 580 or newer) or 'vyre-async[cu12]' (driver 525 or newer); "
    "`nvidia-smi` shows the driver version."
)


@dataclass(frozen=True, slots=True)
class CudaToolchain:
    """The CUDA pieces found, with versions.

    Attributes:
        driver_version: ``cuDriverGetVersion``, e.g. ``13000`` for CUDA 13.0.
        nvrtc_version: NVRTC's ``(major, minor)``.
        bindings_version: ``cuda.bindings.__version__``, e.g. ``"13.5.0"``.
    """

    driver_version: int
    nvrtc_version: tuple[int, int]
    bindings_version: str

    @property
    def driver_cuda(self) -> str:
        """The CUDA version the driver supports, as ``"major.minor"``."""
        return _driver_cuda(self.driver_version)


def check_driver_fits(driver_version: int, nvrtc: tuple[int, int], bindings: str) -> None:
    """Refuse a driver older than the CUDA major of NVRTC or of the bindings.

    Args:
        driver_version: ``cuDriverGetVersion`` (``12080`` is CUDA 12.8).
        nvrtc: NVRTC's ``(major, minor)``.
        bindings: The cuda-bindings version string.

    Raises:
        UnsupportedFeatureError: The driver's CUDA major is below what NVRTC or the
            bindings were built for; the fix names the extra matching the driver.
    """
    have = driver_version // 1000
    head = bindings.split(".")[0]
    bindings_major = int(head) if head.isdigit() else 0  # an odd version: NVRTC decides
    needed = max(nvrtc[0], bindings_major)
    if have >= needed:
        return
    supports = f"CUDA {have}.{driver_version % 1000 // 10} (cuDriverGetVersion {driver_version})"
    installed = f"NVRTC {nvrtc[0]}.{nvrtc[1]} and cuda-bindings {bindings}"
    newer = (
        f"driver {DRIVER_BRANCH[needed]} or newer"
        if needed in DRIVER_BRANCH
        else f"a driver that supports CUDA {needed}"
    )
    what = (
        f"the NVIDIA driver supports {supports}, but {installed} are built for CUDA "
        f"{needed}, which needs {newer}"
    )
    if have in DRIVER_BRANCH:
        # cuda-bindings 12 loads NVRTC 13 when both are installed, so NVRTC 13 must go.
        fix = (
            f"install the CUDA {have} packages: pip uninstall -y nvidia-cuda-nvrtc && "
            f"pip install 'vyre-async[cu{have}]'; or upgrade to {newer}."
        )
    else:
        fix = f"upgrade the NVIDIA driver to {DRIVER_BRANCH[min(DRIVER_BRANCH)]} or newer."
    raise UnsupportedFeatureError(what, fix=fix)


def check_cuda_toolchain() -> CudaToolchain:
    """Load the driver and NVRTC and check that the driver can run what NVRTC builds.

    Blocking (loads libraries): call it from a worker thread in async code.

    Returns:
        The versions found.

    Raises:
        UnsupportedFeatureError: cuda-bindings, libcuda or NVRTC cannot be loaded, or
            the driver is older than the installed CUDA major (see
            :func:`check_driver_fits`).
    """
    driver = load_driver()
    version = int(call(driver.cuDriverGetVersion))
    nvrtc = nvrtc_version()
    bindings = str(getattr(importlib.import_module("cuda.bindings"), "__version__", "0"))
    check_driver_fits(version, nvrtc, bindings)
    return CudaToolchain(version, nvrtc, bindings)


class CudaReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What ``vyre-async info`` shows about CUDA; a status apart from the prose.

    Attributes:
        status: ``"ok"`` (the CUDA backend can open), ``"not_installed"`` (no
            cuda-bindings: CPU backend only) or ``"unusable"`` (see ``error``).
        error: What is wrong and the fix, or ``None`` when ``status`` is ``"ok"``.
        bindings_version: cuda-bindings' version, or ``None`` when not installed.
        driver_cuda: The CUDA version the driver supports (``"13.0"``), or ``None``
            when no driver loads.
    """

    status: Literal["ok", "not_installed", "unusable"]
    error: str | None
    bindings_version: str | None
    driver_cuda: str | None


def describe_cuda_toolchain() -> CudaReport:
    """What ``vyre-async info`` shows about CUDA: versions found and whether they fit.

    Never raises for a missing piece; each one missing is described with its fix.
    Blocking (loads libraries): call it from a worker thread in async code.
    """
    try:
        bindings = importlib.import_module("cuda.bindings")
    except ImportError:
        error = f"cuda-bindings is not installed (CPU backend only). Fix: {INSTALL_CUDA}"
        return CudaReport("not_installed", error, None, None)
    version = str(getattr(bindings, "__version__", "unknown"))
    try:
        driver: str | None = _driver_cuda(int(call(load_driver().cuDriverGetVersion)))
    except VyreError:
        driver = None
    try:
        check_cuda_toolchain()
    except VyreError as exc:
        return CudaReport("unusable", str(exc), version, driver)
    return CudaReport("ok", None, version, driver)


def _driver_cuda(driver_version: int) -> str:
    return f"{driver_version // 1000}.{driver_version % 1000 // 10}"
