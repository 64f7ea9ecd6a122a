"""The driver-versus-NVRTC check behind open_backend('auto') and `vyre-async info`."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

import vyre_async as va
from vyre_async.backends import _toolchain
from vyre_async.cli import main
from vyre_async.errors import UnsupportedFeatureError
from vyre_async.kernels import nvrtc_version
from vyre_async.testing import capture_logs


@pytest.mark.parametrize(
    ("driver", "nvrtc", "bindings"),
    [
        (13000, (13, 0), "13.0.0"),  # driver 580, the cu13 extra
        (13020, (13, 5), "13.5.0"),  # a newer NVRTC minor than the driver: CUBINs still load
        (12000, (12, 9), "12.9.4"),  # driver 525, the cu12 extra
        (13000, (12, 9), "12.9.4"),  # the cu12 extra on a CUDA 13 driver
    ],
)
def test_a_driver_of_the_same_or_newer_major_fits(
    driver: int, nvrtc: tuple[int, int], bindings: str
) -> None:
    """No error when the driver's CUDA major is at least NVRTC's and the bindings'."""
    _toolchain.check_driver_fits(driver, nvrtc, bindings)


@pytest.mark.parametrize(
    ("driver", "nvrtc", "bindings", "needles"),
    [
        (
            12080,
            (13, 5),
            "13.5.0",
            [
                "supports CUDA 12.8 (cuDriverGetVersion 12080)",
                "needs driver 580 or newer",
                "Fix: install the CUDA 12 packages: pip uninstall -y nvidia-cuda-nvrtc && "
                "pip install 'vyre-async[cu12]'",
            ],
        ),
        (
            12040,
            (12, 9),
            "13.0.0",  # cu13 bindings with a CUDA 12 NVRTC: the bindings decide
            ["built for CUDA 13", "vyre-async[cu12]"],
        ),
        (
            11080,
            (12, 9),
            "12.9.4",
            [
                "supports CUDA 11.8",
                "needs driver 525 or newer",
                "Fix: upgrade the NVIDIA driver to 525 or newer",
            ],
        ),
    ],
)
def test_an_older_driver_is_refused_with_the_extra_to_install(
    driver: int, nvrtc: tuple[int, int], bindings: str, needles: list[str]
) -> None:
    """A driver older than the CUDA major installed raises naming the fitting extra."""
    with pytest.raises(UnsupportedFeatureError) as info:
        _toolchain.check_driver_fits(driver, nvrtc, bindings)
    for needle in needles:
        assert needle in str(info.value)


@pytest.fixture
def old_driver(monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A loaded driver one CUDA major older than the installed NVRTC (12.8 under NVRTC 13,
    11.8 under NVRTC 12); NVRTC and the bindings stay real. Returns what the driver
    supports and the fix expected."""
    major = nvrtc_version()[0]
    version = (major - 1) * 1000 + 80
    fake = SimpleNamespace(cuDriverGetVersion=lambda: (0, version))
    monkeypatch.setattr(_toolchain, "load_driver", lambda: fake)
    if major - 1 in _toolchain.DRIVER_BRANCH:
        return f"supports CUDA {major - 1}.8", f"pip install 'vyre-async[cu{major - 1}]'"
    return f"supports CUDA {major - 1}.8", "upgrade the NVIDIA driver to 525 or newer"


async def test_auto_falls_back_to_cpu_naming_the_fix(old_driver: tuple[str, str]) -> None:
    """open_backend('auto') on a driver older than the installed NVRTC gives the CPU backend
    and logs why and what to install."""
    supports, fix = old_driver
    with capture_logs() as logs:
        async with va.open_backend("auto") as backend:
            assert backend.kind == "cpu"
    (fallback,) = [e for e in logs if e["event"] == "falling back to the cpu backend"]
    assert supports in fallback["reason"]
    assert fix in fallback["fix"]


async def test_cuda_kind_raises_the_mismatch(old_driver: tuple[str, str]) -> None:
    """open_backend('cuda') on a driver older than the installed NVRTC raises with the fix."""
    supports, fix = old_driver
    with pytest.raises(UnsupportedFeatureError) as info:
        async with va.open_backend("cuda"):
            pass
    assert supports in str(info.value)
    assert fix in str(info.value)


def test_info_says_the_driver_is_too_old_and_the_fix(
    old_driver: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`vyre-async info --json` reports the mismatch, its fix and the CPU fallback."""
    supports, fix = old_driver
    assert main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["backend"] == "cpu"
    assert report["cuda_status"] == "unusable"
    assert report["cuda_error"].startswith(f"the NVIDIA driver {supports}")
    assert fix in report["cuda_error"]
    assert report["driver_cuda"] == supports.removeprefix("supports CUDA ")


def test_importing_and_a_cpu_dispatch_import_no_cuda_module() -> None:
    """import vyre_async (and its graphs, jobs, CLI) plus a CPU dispatch load no cuda.* module,
    even where cuda-bindings is installed (cuda-bindings 12 imports its top-level `cuda`
    package at interpreter start-up through a .pth file: that one is not ours)."""
    script = """
import sys
def cuda_modules():
    return {m for m in sys.modules if m == "cuda" or m.startswith("cuda.")}
at_start = cuda_modules()
import anyio, numpy as np
import vyre_async as va, vyre_async.graphs, vyre_async.jobs, vyre_async.cli
async def main():
    async with va.open_backend("cpu") as backend:
        x = np.ones(4, np.float32)
        await backend.dispatch(va.kernels.axpy, {"x": x, "y": x}, a=1.0)
anyio.run(main)
print(sorted(cuda_modules() - at_start))
"""
    done = subprocess.run(  # noqa: S603 - our own interpreter running our own script
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
