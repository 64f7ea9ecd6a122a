"""What every kernel folder's tests check of its CUDA C without a GPU: NVRTC builds it
cleanly, into a private cache (see the ``private_kernel_cache`` fixture)."""

from __future__ import annotations

from vyre_async.kernels import Kernel, compile_kernel

ELF_MAGIC = b"\x7fELF"


def assert_builds_cleanly(kernel: Kernel, arch: str) -> None:
    """``kernel`` builds to a CUBIN for ``arch`` with its own entry, and NVRTC logs no
    warning."""
    compiled = compile_kernel(kernel, arch)
    assert compiled.image.startswith(ELF_MAGIC)
    assert compiled.entry == kernel.entry
    assert "warning" not in compiled.log.lower()
