"""Compile a :class:`Kernel` to a CUBIN for one exact architecture, through two caches.

Images are built for the device's own ``sm_XY`` (never PTX), so a newer NVRTC never
hands an older driver code it must JIT. A build is keyed by the SHA-256 of everything
that changes the image: source, entry, options, architecture and NVRTC version. Hits
come from a process-wide dictionary first, then from the disk cache (see
:mod:`._cache`), and only then from NVRTC.

:func:`compile_kernel` blocks (NVRTC takes from milliseconds to seconds); async callers
run it in a worker thread. It is thread-safe, and concurrent requests for one key
build it once.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec

from ..errors import UnsupportedFeatureError
from ..logging import get_logger
from . import _cache, _nvrtc
from ._kernel import Kernel

_log = get_logger("vyre_async.kernels")

_ARCH = re.compile(r"sm_(\d{2,3})([af]?)")
#: Bumped when the key's recipe changes, so old disk entries stop matching.
_KEY_SCHEMA = "vyre_async.cubin-key/1"

_registry_lock = threading.Lock()
_memory: dict[str, CompiledKernel] = {}  # grows with distinct (kernel, arch) pairs only
_key_locks: dict[str, threading.Lock] = {}


@dataclass(frozen=True, slots=True)
class CompiledKernel:
    """A kernel compiled to a CUBIN for one architecture.

    Attributes:
        image: The CUBIN (an ELF image), ready for ``cuModuleLoadData``.
        entry: The ``extern "C"`` function to look up in the module.
        arch: The architecture it was built for, e.g. ``"sm_90"``.
        nvrtc_version: The (major, minor) NVRTC version that built it.
        log: NVRTC's program log (warnings; usually empty).
        key: Hex SHA-256 cache key of source, entry, options, arch and NVRTC version.
    """

    image: bytes = field(repr=False)
    entry: str
    arch: str
    nvrtc_version: tuple[int, int]
    log: str = field(repr=False)
    key: str


def arch_for(major: int, minor: int) -> str:
    """The NVRTC architecture name for a compute capability.

    Args:
        major: Compute capability major version (``9`` on an H100).
        minor: Compute capability minor version (``0`` on an H100).

    Returns:
        For example ``"sm_90"``.

    Raises:
        TypeError: A version is not an ``int``.
        ValueError: A version is out of range.
    """
    for value in (major, minor):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"compute capability parts must be int, got {value!r}")
    if major < 1 or not 0 <= minor <= 9:
        raise ValueError(f"compute capability {major}.{minor} is not a valid one")
    return f"sm_{major}{minor}"


def compile_options(kernel: Kernel, arch: str) -> tuple[str, ...]:
    """The full NVRTC option list for ``kernel`` on ``arch``.

    Raises:
        ValueError: The kernel's own options name an architecture (it comes from ``arch``).
    """
    for option in kernel.options:
        if option.startswith(("--gpu-architecture", "-arch")):
            raise ValueError(
                f"kernel {kernel.name!r} sets {option!r} in its options; the architecture "
                "is chosen per device by compile_kernel(kernel, arch)"
            )
    return (f"--gpu-architecture={arch}", "--std=c++17", *kernel.options)


def cache_key(
    source: str, entry: str, options: Sequence[str], arch: str, version: tuple[int, int]
) -> str:
    """Hex SHA-256 over everything that determines a compiled image."""
    digest = hashlib.sha256()
    parts = (_KEY_SCHEMA, source, entry, arch, f"{version[0]}.{version[1]}", str(len(options)))
    for part in (*parts, *options):
        data = part.encode()
        # Length prefixes keep ("ab", "c") and ("a", "bc") from hashing alike.
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def compile_kernel(kernel: Kernel, arch: str) -> CompiledKernel:
    """Compile ``kernel`` to a CUBIN for ``arch``, or return the cached image.

    Blocking; run it in a worker thread from async code.

    Args:
        kernel: The kernel to compile.
        arch: An exact architecture such as ``"sm_90"`` (see :func:`arch_for`).

    Returns:
        The compiled kernel; the same object for every call with the same key in
        this process.

    Raises:
        CompileError: NVRTC rejected the source or options (the full log is on ``.log``).
        UnsupportedFeatureError: NVRTC is missing, or cannot build for ``arch``.
        ValueError: ``arch`` is not of the form ``sm_XY``, or the kernel's options
            name an architecture.
    """
    if not isinstance(arch, str) or _ARCH.fullmatch(arch) is None:
        raise ValueError(f"arch must look like 'sm_90', got {arch!r}")
    version = _nvrtc.nvrtc_version()
    options = compile_options(kernel, arch)
    key = cache_key(kernel.source, kernel.entry, options, arch, version)
    with _registry_lock:
        hit = _memory.get(key)
        key_lock = _key_locks.setdefault(key, threading.Lock())
    if hit is not None:
        return hit
    with key_lock:
        with _registry_lock:
            hit = _memory.get(key)
        if hit is not None:  # another thread built it while we waited
            return hit
        compiled = _load_from_disk(key, kernel, arch)
        if compiled is None:
            compiled = _build(kernel, arch, options, version, key)
            _cache.write_entry(key, msgspec.msgpack.encode(compiled))
        with _registry_lock:
            _memory[key] = compiled
    return compiled


def clear_memory_cache() -> None:
    """Forget every image held in memory; the disk cache is left alone."""
    with _registry_lock:
        _memory.clear()


def _load_from_disk(key: str, kernel: Kernel, arch: str) -> CompiledKernel | None:
    payload = _cache.read_entry(key)
    if payload is None:
        return None
    try:
        record = msgspec.msgpack.decode(payload, type=CompiledKernel)
    except msgspec.DecodeError as exc:  # intact bytes but not our record: a stray file
        _cache.report_corrupt(_cache.entry_path(key), f"payload does not decode: {exc}")
        return None
    if (record.key, record.entry, record.arch) != (key, kernel.entry, arch):
        _cache.report_corrupt(_cache.entry_path(key), "entry belongs to another key")
        return None
    _log.debug("cubin_cache_hit", kernel=kernel.name, arch=arch, key=key[:16], where="disk")
    return record


def _build(
    kernel: Kernel,
    arch: str,
    options: tuple[str, ...],
    version: tuple[int, int],
    key: str,
) -> CompiledKernel:
    number = int(arch[3:].rstrip("af"))
    supported = _nvrtc.supported_archs()
    if number not in supported:
        listed = ", ".join(f"sm_{a}" for a in supported)
        raise UnsupportedFeatureError(
            f"NVRTC {version[0]}.{version[1]} cannot build kernel {kernel.name!r} for {arch}; "
            f"it supports {listed}",
            fix=f"install a cuda-bindings / nvidia-cuda-nvrtc release whose NVRTC supports "
            f"{arch}, or run on the CPU backend.",
        )
    started = time.perf_counter()
    image, log = _nvrtc.build_cubin(
        kernel.source, kernel.entry, options, kernel_name=kernel.name, arch=arch
    )
    _log.info(
        "kernel_compiled",
        kernel=kernel.name,
        arch=arch,
        key=key[:16],
        image_bytes=len(image),
        seconds=round(time.perf_counter() - started, 4),
        nvrtc_log=log or None,
    )
    return CompiledKernel(
        image=image, entry=kernel.entry, arch=arch, nvrtc_version=version, log=log, key=key
    )
