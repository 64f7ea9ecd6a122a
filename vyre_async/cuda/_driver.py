"""Checked calls into the CUDA driver API (``cuda.bindings.driver``).

Every binding returns a tuple whose first element is a ``CUresult``. :func:`check`
turns a failed result into the right :class:`~vyre_async.errors.VyreError`
(out of memory, device lost, or a plain dispatch error) and hands back the rest of
the tuple, so call sites read ``ptr = call(driver.cuMemAlloc, nbytes)``.

The driver module is imported lazily by :func:`load_driver`: importing
``vyre_async.cuda`` never needs ``libcuda``, so the CPU backend works on
machines without a GPU.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..errors import (
    DeviceLostError,
    DispatchError,
    OutOfMemoryError,
    UnsupportedFeatureError,
    VyreError,
)
from ..logging import get_logger

__all__ = [
    "DEVICE_LOST_RESULTS",
    "call",
    "check",
    "device_lost_fix",
    "error_for",
    "is_sticky",
    "load_driver",
    "result_name",
]

logger = get_logger("vyre_async.cuda")

CUDA_SUCCESS = 0
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NOT_READY = 600

#: Results after which nothing this process holds on the device can be used again.
#: All but three are documented as sticky ("any further CUDA work will return the
#: same error"). ECC_UNCORRECTABLE and NVLINK_UNCORRECTABLE are hardware faults that
#: invalidate the context in practice. CONTEXT_IS_DESTROYED is not sticky in CUDA's
#: sense, but it means someone reset the primary context under us (another library
#: calling cudaDeviceReset, say): every stream, event and allocation the backend
#: holds is gone, so it is as lost as after a sticky error, and a new backend
#: (a fresh retain) is the fix. DEINITIALIZED means the driver is shutting down.
DEVICE_LOST_RESULTS: frozenset[int] = frozenset(
    {
        4,  # CUDA_ERROR_DEINITIALIZED
        214,  # CUDA_ERROR_ECC_UNCORRECTABLE
        220,  # CUDA_ERROR_NVLINK_UNCORRECTABLE
        226,  # CUDA_ERROR_CONTAINED
        700,  # CUDA_ERROR_ILLEGAL_ADDRESS
        702,  # CUDA_ERROR_LAUNCH_TIMEOUT
        709,  # CUDA_ERROR_CONTEXT_IS_DESTROYED
        710,  # CUDA_ERROR_ASSERT
        714,  # CUDA_ERROR_HARDWARE_STACK_ERROR
        715,  # CUDA_ERROR_ILLEGAL_INSTRUCTION
        716,  # CUDA_ERROR_MISALIGNED_ADDRESS
        717,  # CUDA_ERROR_INVALID_ADDRESS_SPACE
        718,  # CUDA_ERROR_INVALID_PC
        719,  # CUDA_ERROR_LAUNCH_FAILED
        721,  # CUDA_ERROR_TENSOR_MEMORY_LEAK
        810,  # CUDA_ERROR_MPS_CLIENT_TERMINATED
        911,  # CUDA_ERROR_EXTERNAL_DEVICE
    }
)

DEVICE_LOST_FIX = (
    "restart the process and open a new backend: CUDA keeps this error for the rest "
    "of the process's life (on an H100, retaining the context again after an illegal "
    "address fails with the same error)."
)
_LOST_FIXES: dict[int, str] = {
    4: "the CUDA driver is shutting down (interpreter exit); open a new backend only "
    "in a process that is not exiting.",
    709: "open a new backend: another library reset or destroyed this device's primary "
    "context (cudaDeviceReset, cuDevicePrimaryCtxReset), which freed everything the "
    "backend held.",
}


def device_lost_fix(result: int) -> str:
    """Return the ``Fix:`` text for a device-lost result."""
    return _LOST_FIXES.get(int(result), DEVICE_LOST_FIX)


_FIXES: dict[int, str] = {
    1: "check the sizes, pointers and launch shape passed to the call; this is a bug "
    "in the caller or in vyre_async, please report it with the log.",
    201: "make sure the backend's context is current in this thread "
    "(CudaDevice.make_current) before calling the driver.",
    400: "the handle was destroyed or belongs to another backend; use handles only "
    "with the backend that made them.",
    701: "use fewer threads per block or less shared memory for this kernel.",
    209: "the kernel was built for another architecture; clear the kernel cache "
    "and let it rebuild for this device.",
    801: "this device or driver does not support the operation; use the CPU backend "
    "or a newer GPU/driver.",
}
_DEFAULT_FIX = "see the CUDA error above; if it repeats, report it with the log."

_lock = threading.Lock()
_driver: ModuleType | None = None
_failure: tuple[str, str] | None = None


def _result_enum(result: int) -> Any:
    """Return the ``CUresult`` member for ``result``, or ``None`` if unknown."""
    try:
        from cuda.bindings import driver  # lazy: importing the bindings needs no libcuda

        return driver.CUresult(int(result))
    except (ImportError, ValueError):  # no bindings, or a code this binding does not know
        return None


def result_name(result: int) -> str:
    """Return the symbolic name of a ``CUresult`` (``CUDA_ERROR_OUT_OF_MEMORY``).

    Args:
        result: A ``CUresult`` member or its integer value.

    Returns:
        The name, or ``CUresult(<n>)`` for a value this binding does not know.
    """
    member = _result_enum(result)
    return str(member.name) if member is not None else f"CUresult({int(result)})"


def _result_text(result: int) -> str:
    """Describe ``result`` in words: ``cuGetErrorString`` once the driver is loaded.

    Before that (or without libcuda at all) the binding's own enum docstring, which
    carries the same text as the CUDA headers, stands in.
    """
    if _driver is not None:
        try:
            err, text = _driver.cuGetErrorString(_driver.CUresult(int(result)))
            if int(err) == CUDA_SUCCESS and text:
                return text.decode() if isinstance(text, bytes) else str(text)
        except Exception:  # noqa: S110 - describing an error must never raise another
            pass
    member = _result_enum(result)
    doc = " ".join(str(member.__doc__ or "").split()) if member is not None else ""
    if not doc or doc.startswith("An enumeration"):
        return "no description available"
    return doc.split(". ")[0].rstrip(".")


def is_sticky(result: int) -> bool:
    """Whether ``result`` leaves the device unusable for everything this backend holds.

    Args:
        result: A ``CUresult`` member or its integer value.

    Returns:
        ``True`` for the sticky kernel faults (illegal address, launch failure,
        device assert, ...), uncorrectable hardware errors, and a destroyed context.
    """
    return int(result) in DEVICE_LOST_RESULTS


def error_for(result: int, call_name: str) -> VyreError:
    """Build (without raising) the error for a failed driver call.

    Args:
        result: The failed ``CUresult``.
        call_name: The driver function that returned it (``cuMemAlloc``).

    Returns:
        :class:`OutOfMemoryError` for ``CUDA_ERROR_OUT_OF_MEMORY``,
        :class:`DeviceLostError` for :func:`is_sticky` results, and
        :class:`DispatchError` for everything else.
    """
    code = int(result)
    what = f"{call_name} failed with {result_name(code)} ({code}): {_result_text(code)}"
    if code == CUDA_ERROR_OUT_OF_MEMORY:
        return OutOfMemoryError(
            what,
            fix="free resident buffers, lower the pool caps or the batch size, "
            "or stop other processes using this GPU.",
        )
    if is_sticky(code):
        return DeviceLostError(f"the device is lost: {what}", fix=device_lost_fix(code))
    return DispatchError(what, fix=_FIXES.get(code, _DEFAULT_FIX))


def event_query_failure(result: int) -> tuple[VyreError, bool]:
    """What a failed ``cuEventQuery`` means: the work's error, and whether it is sticky.

    The completion watcher's ``failure`` mapping (see
    :class:`vyre_async.streams.CompletionWatcher`): a sticky result loses the device,
    and every piece of work on it fails.
    """
    return error_for(result, "cuEventQuery"), is_sticky(result)


def check(returned: Any, call_name: str) -> Any:
    """Raise for a failed result, else return what the call produced.

    Args:
        returned: What a ``cuda.bindings.driver`` function returned: a tuple
            ``(CUresult, *values)``, or a bare ``CUresult``.
        call_name: The driver function's name, for the message.

    Returns:
        ``None`` when the call produced nothing, the single value when it produced
        one, else the tuple of values.

    Raises:
        OutOfMemoryError: ``CUDA_ERROR_OUT_OF_MEMORY``.
        DeviceLostError: A sticky error (see :func:`is_sticky`).
        DispatchError: Any other failure.
    """
    if isinstance(returned, tuple):
        result, values = returned[0], returned[1:]
    else:
        result, values = returned, ()
    if int(result) != CUDA_SUCCESS:
        raise error_for(int(result), call_name)
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return values


def unavailable(fn: Callable[..., Any], exc: RuntimeError) -> UnsupportedFeatureError:
    """The error for a binding whose symbol the installed driver lacks."""
    name = getattr(fn, "__name__", None) or repr(fn)
    return UnsupportedFeatureError(
        f"{name} is not available from the installed NVIDIA driver: {exc}",
        fix="update the NVIDIA driver, or use the CPU backend (kind='cpu').",
    )


def call(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a driver function and :func:`check` its result.

    A binding whose symbol the installed driver lacks raises ``RuntimeError``
    inside ``cuda.bindings``; that becomes an :class:`UnsupportedFeatureError`.

    Args:
        fn: A ``cuda.bindings.driver`` function (``driver.cuMemAlloc``).
        *args: Its arguments.

    Returns:
        As :func:`check`.
    """
    try:
        returned = fn(*args)
    except RuntimeError as exc:
        raise unavailable(fn, exc) from exc
    if isinstance(returned, tuple):
        if int(returned[0]) == CUDA_SUCCESS:  # the hot path: no name, no message
            return returned[1] if len(returned) == 2 else (returned[1:] or None)
    elif int(returned) == CUDA_SUCCESS:
        return None
    return check(returned, getattr(fn, "__name__", None) or repr(fn))


def _initialise(import_module: Callable[[str], ModuleType]) -> ModuleType:
    """Import the bindings and run ``cuInit(0)``; raise with the precise reason."""
    try:
        driver = import_module("cuda.bindings.driver")
    except ImportError as exc:
        raise UnsupportedFeatureError(
            f"the CUDA Python bindings could not be imported ({exc})",
            fix="install the CUDA extra that matches the driver: pip install "
            "'vyre-async[cu13]' (driver 580 or newer) or 'vyre-async[cu12]' (driver 525 or "
            "newer); or use the CPU backend (kind='cpu').",
        ) from exc
    try:
        returned = driver.cuInit(0)
    except Exception as exc:  # pathfinder raises RuntimeError subclasses; dlopen OSError
        raise UnsupportedFeatureError(
            f"the NVIDIA driver library (libcuda) could not be loaded: {type(exc).__name__}: {exc}",
            fix="install the NVIDIA display driver (check with `nvidia-smi`), "
            "or use the CPU backend (kind='cpu').",
        ) from exc
    result = int(returned[0] if isinstance(returned, tuple) else returned)
    if result != CUDA_SUCCESS:
        raise UnsupportedFeatureError(
            f"cuInit(0) failed with {result_name(result)} ({result}): {_result_text(result)}",
            fix="check that a GPU is visible (`nvidia-smi`, CUDA_VISIBLE_DEVICES) and "
            "that the driver matches the CUDA version, or use the CPU backend (kind='cpu').",
        )
    return driver


def load_driver() -> ModuleType:
    """Return ``cuda.bindings.driver`` after a successful ``cuInit(0)``.

    The first call imports the bindings and initialises the driver; later calls
    return the cached module, or re-raise the first failure (CUDA does not recover
    from a failed ``cuInit`` within a process).

    Returns:
        The ``cuda.bindings.driver`` module.

    Raises:
        UnsupportedFeatureError: The bindings are missing, libcuda could not be
            loaded, no device is visible, or the driver is too old; ``what`` says
            which, for ``open_backend("auto")`` to log when it falls back to CPU.
    """
    global _driver, _failure  # one driver per process, cached on purpose
    with _lock:
        if _driver is not None:
            return _driver
        if _failure is not None:
            raise UnsupportedFeatureError(_failure[0], fix=_failure[1])
        try:
            driver = _initialise(importlib.import_module)
        except UnsupportedFeatureError as exc:
            _failure = (exc.what, exc.fix)
            # Debug only: the caller reports it (open_backend's fallback line, or the
            # error it raises), so an info line here would say the same thing twice.
            logger.debug("cuda_driver_unavailable", reason=exc.what)
            raise
        _driver = driver
        version = check(driver.cuDriverGetVersion(), "cuDriverGetVersion")
        logger.debug("cuda_driver_loaded", driver_version=int(version))
        return driver


def start_loading_driver() -> None:
    """Begin :func:`load_driver` in a daemon thread, and return at once.

    Initialising the driver (``cuInit``) takes up to a second on a host of several GPUs
    and holds no interpreter lock, so a program that knows it will use CUDA starts it
    early and imports and reads meanwhile (``vyre-async run`` does, once it has read a
    job file that runs on CUDA). The next :func:`load_driver` waits for it and returns
    the driver, or raises what loading it failed with.
    """
    if _driver is not None or _failure is not None:
        return
    threading.Thread(target=_load_quietly, name="vyre-driver-load", daemon=True).start()


def _load_quietly() -> None:
    try:
        load_driver()
    except UnsupportedFeatureError:  # kept: the next load_driver raises it
        return
