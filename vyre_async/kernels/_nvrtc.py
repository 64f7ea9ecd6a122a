"""Checked calls into NVRTC: load it, ask its version and architectures, build a CUBIN.

Every NVRTC call goes through :func:`_checked`, so no result code is ever dropped.
The bindings are imported lazily: importing :mod:`vyre_async.kernels` must work on a
machine where NVRTC is absent (the CPU backend needs no compiler).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from ..errors import CompileError, UnsupportedFeatureError

_INSTALL_FIX = (
    "install the CUDA extra that matches the driver, which brings cuda-bindings and NVRTC: "
    "pip install 'vyre-async[cu13]' (driver 580 or newer) or 'vyre-async[cu12]' (driver "
    "525 or newer); or put a CUDA toolkit's libnvrtc on the library path."
)
#: How many log lines a CompileError's message quotes; the full log is on ``.log``.
LOG_LINES_IN_MESSAGE = 8

_version_lock = threading.Lock()
_version: tuple[int, int] | None = None
_archs: tuple[int, ...] | None = None


def load_nvrtc() -> ModuleType:
    """Import ``cuda.bindings.nvrtc``.

    Returns:
        The bindings module.

    Raises:
        UnsupportedFeatureError: The bindings are not installed.
    """
    try:
        # import_module (not `from cuda.bindings import nvrtc`) honours sys.modules, so
        # a blocked or missing module is seen even after the package was imported.
        return importlib.import_module("cuda.bindings.nvrtc")
    except ImportError as exc:
        raise UnsupportedFeatureError(
            f"NVRTC is not available: importing cuda.bindings.nvrtc failed ({exc})",
            fix=_INSTALL_FIX,
        ) from exc


def _checked(nvrtc: ModuleType, call: str, *args: object) -> Any:
    """Call ``nvrtc.<call>(*args)``; raise on any non-success code.

    Returns:
        ``None``, the single value, or a tuple of the values the call returned.
    """
    try:
        result = getattr(nvrtc, call)(*args)
    except (RuntimeError, OSError) as exc:
        # cuda-bindings loads libnvrtc on first use; a missing library surfaces here.
        raise UnsupportedFeatureError(
            f"NVRTC could not be loaded: {call} failed with {type(exc).__name__}: {exc}",
            fix=_INSTALL_FIX,
        ) from exc
    err, *values = result
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(
            f"NVRTC call {call} failed with {error_name(nvrtc, err)}",
            fix="check the kernel's options and the NVRTC installation; report it if it persists.",
        )
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def error_name(nvrtc: ModuleType, err: object) -> str:
    """NVRTC's own name for a result code, falling back to its repr."""
    try:
        code, text = nvrtc.nvrtcGetErrorString(err)
    except (RuntimeError, OSError, TypeError, ValueError):
        return repr(err)
    if code != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return repr(err)
    return bytes(text).decode(errors="replace")


def nvrtc_version() -> tuple[int, int]:
    """The (major, minor) version of the NVRTC library that compiles kernels.

    Returns:
        For example ``(13, 5)``. Part of every cache key, so an NVRTC upgrade
        recompiles everything.

    Raises:
        UnsupportedFeatureError: NVRTC is not installed or cannot be loaded.
    """
    global _version
    with _version_lock:
        if _version is None:
            major, minor = _checked(load_nvrtc(), "nvrtcVersion")
            _version = (int(major), int(minor))
        return _version


def supported_archs() -> tuple[int, ...]:
    """The ``sm_XY`` numbers (``XY``) this NVRTC can build CUBINs for, ascending."""
    global _archs
    with _version_lock:
        if _archs is None:
            _archs = tuple(sorted(int(a) for a in _checked(load_nvrtc(), "nvrtcGetSupportedArchs")))
        return _archs


def forget_loaded_state() -> None:
    """Drop the remembered version and architectures (tests swap NVRTC out)."""
    global _version, _archs
    with _version_lock:
        _version = None
        _archs = None


def _program_log(nvrtc: ModuleType, prog: object) -> str:
    size = int(_checked(nvrtc, "nvrtcGetProgramLogSize", prog))
    # A bytearray, never `b" " * size`: for size 1 that is CPython's shared b" "
    # object, and NVRTC writing its terminating NUL into it corrupts every b" " in
    # the process (seen as b" ".join(...) joining with NUL bytes).
    buffer = bytearray(size)
    _checked(nvrtc, "nvrtcGetProgramLog", prog, buffer)
    return buffer.rstrip(b"\x00").decode(errors="replace").strip()


def build_cubin(
    source: str, entry: str, options: Sequence[str], *, kernel_name: str, arch: str
) -> tuple[bytes, str]:
    """Compile ``source`` to a CUBIN with NVRTC; blocking, takes from ms to seconds.

    Args:
        source: CUDA C++ source.
        entry: The ``extern "C" __global__`` function that must exist in the image.
        options: The full NVRTC option list, architecture included.
        kernel_name: Used in the program name and in error messages.
        arch: Used in error messages.

    Returns:
        The CUBIN image and NVRTC's program log (often empty).

    Raises:
        CompileError: NVRTC rejected the source or options, or ``entry`` is missing
            or has C++ linkage.
        UnsupportedFeatureError: NVRTC is not installed or cannot be loaded.
    """
    nvrtc = load_nvrtc()
    where = f"kernel {kernel_name!r} for {arch}"
    prog = _checked(
        nvrtc, "nvrtcCreateProgram", source.encode(), f"{kernel_name}.cu".encode(), 0, [], []
    )
    try:
        # A name expression makes NVRTC itself fail when the entry point is missing,
        # and its lowered name tells us whether it was declared extern "C".
        _checked(nvrtc, "nvrtcAddNameExpression", prog, entry.encode())
        encoded = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        log = _program_log(nvrtc, prog)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise _compile_failure(nvrtc, err, log, where, options)
        lowered = bytes(_checked(nvrtc, "nvrtcGetLoweredName", prog, entry.encode())).decode()
        if lowered != entry:
            raise CompileError(
                f"{where}: entry point {entry!r} has C++ linkage (its symbol is {lowered!r})",
                fix=f'declare it as extern "C" __global__ void {entry}(...).',
                log=log,
            )
        size = int(_checked(nvrtc, "nvrtcGetCUBINSize", prog))
        image_buffer = bytearray(size)  # see _program_log: never write into a bytes object
        _checked(nvrtc, "nvrtcGetCUBIN", prog, image_buffer)
        return bytes(image_buffer), log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)  # a failed destroy leaks a little host memory only


def _compile_failure(
    nvrtc: ModuleType, err: object, log: str, where: str, options: Sequence[str]
) -> CompileError:
    lines = [line for line in log.splitlines() if line.strip()]
    shown = "\n".join(f"  {line[:200]}" for line in lines[:LOG_LINES_IN_MESSAGE])
    more = len(lines) - LOG_LINES_IN_MESSAGE
    if more > 0:
        shown += f"\n  ... {more} more line(s) in the error's .log"
    if err == nvrtc.nvrtcResult.NVRTC_ERROR_INVALID_OPTION:
        return CompileError(
            f"NVRTC rejected the options of {where} ({error_name(nvrtc, err)}): "
            f"{' '.join(options)}" + (f"\n{shown}" if shown else ""),
            fix="remove or correct the offending entry in the kernel's options.",
            log=log,
        )
    return CompileError(
        f"NVRTC could not compile {where} ({error_name(nvrtc, err)}); the log begins:\n{shown}",
        fix="correct the kernel's CUDA C source (the full NVRTC log is on the error's .log); "
        'it is compiled as C++17 and its entry point must be extern "C" __global__.',
        log=log,
    )
