"""Checked driver calls: CUresult -> error class mapping, unwrapping, driver loading."""

from __future__ import annotations

import subprocess
import sys
import types
from typing import Any

import pytest
from cuda.bindings import driver

import vyre_async.cuda as cuda_layer
from vyre_async.cuda import _driver
from vyre_async.cuda._driver import call, check, error_for, is_sticky, result_name
from vyre_async.errors import (
    DeviceLostError,
    DispatchError,
    OutOfMemoryError,
    UnsupportedFeatureError,
)

R = driver.CUresult

STICKY = [
    R.CUDA_ERROR_ILLEGAL_ADDRESS,
    R.CUDA_ERROR_LAUNCH_FAILED,
    R.CUDA_ERROR_ECC_UNCORRECTABLE,
    R.CUDA_ERROR_HARDWARE_STACK_ERROR,
    R.CUDA_ERROR_ILLEGAL_INSTRUCTION,
    R.CUDA_ERROR_MISALIGNED_ADDRESS,
    R.CUDA_ERROR_INVALID_ADDRESS_SPACE,
    R.CUDA_ERROR_INVALID_PC,
    R.CUDA_ERROR_ASSERT,
    R.CUDA_ERROR_LAUNCH_TIMEOUT,
    R.CUDA_ERROR_CONTEXT_IS_DESTROYED,
    R.CUDA_ERROR_CONTAINED,
    R.CUDA_ERROR_NVLINK_UNCORRECTABLE,
    R.CUDA_ERROR_TENSOR_MEMORY_LEAK,
    R.CUDA_ERROR_EXTERNAL_DEVICE,
]

NOT_STICKY = [
    R.CUDA_ERROR_INVALID_VALUE,
    R.CUDA_ERROR_NOT_READY,
    R.CUDA_ERROR_INVALID_HANDLE,
    R.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
    R.CUDA_ERROR_OUT_OF_MEMORY,
    R.CUDA_ERROR_NO_DEVICE,
]


def test_sticky_table_matches_the_binding_enum_values() -> None:
    """Every integer in the device-lost table is a CUresult this binding knows."""
    known = {int(member) for member in R}
    assert known >= _driver.DEVICE_LOST_RESULTS


def test_every_result_documented_as_process_fatal_is_sticky() -> None:
    """A CUresult whose CUDA doc says the process must be relaunched counts as sticky."""
    for member in R:
        doc = " ".join((member.__doc__ or "").split())
        if "inconsistent state" in doc:
            assert is_sticky(member), member.name


@pytest.mark.parametrize("result", STICKY, ids=lambda r: r.name)
def test_sticky_results_map_to_device_lost(result: Any) -> None:
    """Sticky results raise DeviceLostError telling the caller to open a new backend."""
    assert is_sticky(result)
    with pytest.raises(DeviceLostError) as info:
        check((result,), "cuEventQuery")
    message = str(info.value)
    assert "cuEventQuery" in message
    assert result.name in message
    assert "open a new backend" in info.value.fix


def test_kernel_faults_tell_the_caller_to_restart_the_process() -> None:
    """An illegal address is kept by CUDA for the process's life; the fix says restart."""
    error = error_for(R.CUDA_ERROR_ILLEGAL_ADDRESS, "cuEventQuery")
    assert error.fix.startswith("restart the process and open a new backend")


def test_destroyed_context_only_needs_a_new_backend() -> None:
    """A context destroyed by another library is fixed by a new backend, no restart."""
    error = error_for(R.CUDA_ERROR_CONTEXT_IS_DESTROYED, "cuLaunchKernel")
    assert isinstance(error, DeviceLostError)
    assert error.fix.startswith("open a new backend")


@pytest.mark.parametrize("result", NOT_STICKY, ids=lambda r: r.name)
def test_ordinary_failures_are_not_sticky(result: Any) -> None:
    """Invalid values, not-ready and out-of-memory leave the device usable."""
    assert not is_sticky(result)


def test_out_of_memory_maps_to_out_of_memory_error() -> None:
    """CUDA_ERROR_OUT_OF_MEMORY raises OutOfMemoryError naming the call and the error."""
    with pytest.raises(OutOfMemoryError) as info:
        check((R.CUDA_ERROR_OUT_OF_MEMORY, None), "cuMemAlloc")
    assert "cuMemAlloc failed with CUDA_ERROR_OUT_OF_MEMORY (2)" in str(info.value)
    assert "Fix:" in str(info.value)


def test_invalid_value_maps_to_dispatch_error_with_description() -> None:
    """CUDA_ERROR_INVALID_VALUE raises DispatchError with a description of the error."""
    with pytest.raises(DispatchError) as info:
        check((R.CUDA_ERROR_INVALID_VALUE,), "cuLaunchKernel")
    message = str(info.value)
    assert "cuLaunchKernel failed with CUDA_ERROR_INVALID_VALUE (1)" in message
    assert "parameters" in message.lower() or "value" in message.lower()


def test_unknown_result_code_still_gives_a_dispatch_error() -> None:
    """A code the binding does not know is named by its number, not a crash."""
    error = error_for(123456, "cuFoo")
    assert isinstance(error, DispatchError)
    assert "CUresult(123456)" in str(error)


def test_check_returns_nothing_for_a_bare_success() -> None:
    """A call that produces no values returns None."""
    assert check((R.CUDA_SUCCESS,), "cuCtxSetCurrent") is None
    assert check(R.CUDA_SUCCESS, "cuCtxSetCurrent") is None


def test_check_unwraps_a_single_value() -> None:
    """A call that produces one value returns it alone."""
    assert check((R.CUDA_SUCCESS, 4096), "cuMemAlloc") == 4096


def test_check_returns_several_values_as_a_tuple() -> None:
    """A call that produces several values returns them as a tuple."""
    assert check((R.CUDA_SUCCESS, 1, 2), "cuMemGetInfo") == (1, 2)


def test_call_names_the_function_in_errors() -> None:
    """call() uses the function's own name in the error message."""

    def cuStreamCreate(flags: int) -> tuple[Any, ...]:  # noqa: N802 - mimics the binding
        return (R.CUDA_ERROR_INVALID_VALUE, None)

    with pytest.raises(DispatchError, match="cuStreamCreate failed"):
        call(cuStreamCreate, 1)


def test_call_turns_a_missing_driver_symbol_into_unsupported_feature() -> None:
    """A binding that raises RuntimeError (symbol absent in old drivers) is unsupported."""

    def cuMemAllocAsync(nbytes: int, stream: int) -> tuple[Any, ...]:  # noqa: N802
        raise RuntimeError('Function "cuMemAllocAsync" not found')

    with pytest.raises(UnsupportedFeatureError, match="cuMemAllocAsync is not available"):
        call(cuMemAllocAsync, 16, 0)


def test_result_name_gives_the_symbolic_name() -> None:
    """result_name maps an integer to its CUDA_ERROR_* name."""
    assert result_name(700) == "CUDA_ERROR_ILLEGAL_ADDRESS"


def _fake_driver(init: Any) -> types.ModuleType:
    module = types.ModuleType("cuda.bindings.driver")
    module.cuInit = init  # type: ignore[attr-defined]
    return module


def test_initialise_reports_missing_bindings() -> None:
    """An ImportError of the bindings becomes UnsupportedFeatureError naming the package."""

    def importer(name: str) -> types.ModuleType:
        raise ImportError(f"No module named {name!r}")

    with pytest.raises(UnsupportedFeatureError, match="CUDA Python bindings could not be"):
        _driver._initialise(importer)


def test_initialise_reports_missing_libcuda() -> None:
    """The pathfinder's RuntimeError for an absent libcuda becomes UnsupportedFeatureError."""

    def init(flags: int) -> tuple[Any, ...]:
        raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found ...')

    with pytest.raises(UnsupportedFeatureError) as info:
        _driver._initialise(lambda name: _fake_driver(init))
    assert "libcuda" in info.value.what
    assert "NVIDIA driver library" in info.value.what


def test_initialise_reports_no_device_by_name() -> None:
    """cuInit returning CUDA_ERROR_NO_DEVICE becomes UnsupportedFeatureError naming it."""
    with pytest.raises(UnsupportedFeatureError) as info:
        _driver._initialise(lambda name: _fake_driver(lambda flags: (R.CUDA_ERROR_NO_DEVICE,)))
    assert "CUDA_ERROR_NO_DEVICE" in info.value.what
    assert "kind='cpu'" in info.value.fix


def test_load_driver_repeats_its_first_failure() -> None:
    """Without a usable driver, every load_driver call raises the same precise reason."""
    try:
        _driver.load_driver()
    except UnsupportedFeatureError as first:
        reason = first.what
    else:
        pytest.skip("the CUDA driver loads on this machine")
    with pytest.raises(UnsupportedFeatureError) as info:
        _driver.load_driver()
    assert info.value.what == reason


def test_cuda_package_exports_are_complete_and_sorted() -> None:
    """__all__ lists every public name the package re-exports, sorted."""
    public = {
        name
        for name, value in vars(cuda_layer).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(cuda_layer.__all__) == public
    assert list(cuda_layer.__all__) == sorted(cuda_layer.__all__)


def test_importing_the_cuda_layer_does_not_load_the_driver_bindings() -> None:
    """`import vyre_async.cuda` (and the streams above it) needs no libcuda: lazy bindings."""
    code = (
        "import sys, vyre_async.cuda, vyre_async.streams; "
        "assert 'cuda.bindings.driver' not in sys.modules, 'driver imported eagerly'"
    )
    done = subprocess.run(  # noqa: S603 - runs this interpreter on a fixed snippet
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
