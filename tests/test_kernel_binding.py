"""Kernel.bind: every malformed call is refused with a ValidationError naming the culprit."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

from vyre_async.errors import ValidationError
from vyre_async.kernels import (
    BufferParam,
    Kernel,
    ScalarParam,
    axpy,
    grid_stride,
    histogram256,
    sum_reduce,
)


def _f32(n: int) -> np.ndarray:
    return np.zeros(n, dtype=np.float32)


def _no_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """A reference that is never run: these tests only bind."""


#: A kernel with a required integer scalar, which none of the built-ins has.
SCALE_I32 = Kernel(
    name="scale_i32",
    source="",
    entry="scale_i32",
    params=(
        BufferParam("v", np.int32, "inout", "n"),
        ScalarParam("k", np.int32),
        ScalarParam("n", np.int32, default="n"),
    ),
    launch=grid_stride("n"),
    reference=_no_reference,
)


def _assert_names(error: pytest.ExceptionInfo[ValidationError], name: str) -> None:
    message = str(error.value)
    assert repr(name) in message or f"{name}=" in message, message
    assert "Fix:" in message, message


def test_bind_rejects_a_missing_input_buffer() -> None:
    """Leaving out an ``in`` buffer names it."""
    with pytest.raises(ValidationError) as error:
        axpy.bind({"y": _f32(4)}, {"a": 1.0})
    _assert_names(error, "x")


def test_bind_rejects_an_unknown_buffer() -> None:
    """A buffer the signature lacks is named."""
    with pytest.raises(ValidationError) as error:
        axpy.bind({"x": _f32(4), "y": _f32(4), "z": _f32(4)}, {"a": 1.0})
    _assert_names(error, "z")


def test_bind_rejects_a_scalar_passed_as_a_buffer() -> None:
    """Passing scalar ``a`` in the buffers mapping says to pass it as a keyword."""
    with pytest.raises(ValidationError, match="keyword") as error:
        axpy.bind({"x": _f32(4), "y": _f32(4), "a": _f32(1)}, {"a": 1.0})
    _assert_names(error, "a")


def test_bind_rejects_an_unknown_scalar() -> None:
    """A keyword the signature lacks is named."""
    with pytest.raises(ValidationError) as error:
        axpy.bind({"x": _f32(4), "y": _f32(4)}, {"a": 1.0, "b": 2.0})
    _assert_names(error, "b")


def test_bind_rejects_a_wrong_dtype() -> None:
    """A float64 array for a float32 parameter is refused, not cast."""
    with pytest.raises(ValidationError, match="float64") as error:
        axpy.bind({"x": np.zeros(4), "y": _f32(4)}, {"a": 1.0})
    _assert_names(error, "x")


def test_bind_rejects_buffers_of_different_lengths_for_one_symbol() -> None:
    """x and y share the length symbol n, so 4 and 5 elements are refused."""
    with pytest.raises(ValidationError, match="5") as error:
        axpy.bind({"x": _f32(4), "y": _f32(5)}, {"a": 1.0})
    _assert_names(error, "y")


def test_bind_rejects_a_wrongly_sized_fixed_length_output() -> None:
    """sum's ``out`` holds exactly one element; two are refused."""
    with pytest.raises(ValidationError) as error:
        sum_reduce.bind({"x": _f32(4), "out": _f32(2)}, {})
    _assert_names(error, "out")


def test_bind_rejects_a_non_array_buffer() -> None:
    """A Python list is not an array and is refused with the conversion to make."""
    with pytest.raises(ValidationError, match="list") as error:
        axpy.bind({"x": [1.0, 2.0], "y": _f32(2)}, {"a": 1.0})  # type: ignore[type-var]
    _assert_names(error, "x")


def test_bind_rejects_passing_a_derived_scalar() -> None:
    """``n`` comes from the buffer lengths and cannot be passed."""
    with pytest.raises(ValidationError, match="derived") as error:
        axpy.bind({"x": _f32(4), "y": _f32(4)}, {"a": 1.0, "n": 4})
    _assert_names(error, "n")


def test_bind_rejects_a_missing_required_scalar() -> None:
    """axpy's ``a`` has no default and must be given."""
    with pytest.raises(ValidationError) as error:
        axpy.bind({"x": _f32(4), "y": _f32(4)}, {})
    _assert_names(error, "a")


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 1.5])
def test_bind_rejects_an_int_scalar_outside_int32(value: float) -> None:
    """An int32 scalar refuses values it cannot hold exactly."""
    with pytest.raises(ValidationError) as error:
        SCALE_I32.bind({"v": np.zeros(3, dtype=np.int32)}, {"k": value})
    _assert_names(error, "k")


@pytest.mark.parametrize("value", [True, np.bool_(False)])
def test_bind_rejects_a_bool_scalar(value: object) -> None:
    """True is not silently the number 1."""
    with pytest.raises(ValidationError, match="bool") as error:
        axpy.bind({"x": _f32(4), "y": _f32(4)}, {"a": value})
    _assert_names(error, "a")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e39])
def test_bind_rejects_a_float_scalar_that_is_not_a_finite_float32(value: float) -> None:
    """NaN, infinity and values that overflow float32 are refused for ``a``."""
    with pytest.raises(ValidationError) as error:
        axpy.bind({"x": _f32(4), "y": _f32(4)}, {"a": value})
    _assert_names(error, "a")


def test_bind_derives_n_and_coerces_scalars() -> None:
    """A valid axpy call gets n from the lengths and a as float32."""
    call = axpy.bind({"x": _f32(257), "y": _f32(257)}, {"a": 2})

    assert call.scalars["n"] == 257
    assert call.scalars["n"].dtype == np.int32
    assert call.scalars["a"] == 2.0
    assert call.scalars["a"].dtype == np.float32
    assert list(call.scalars) == ["a", "n"]  # signature order is launch-argument order


def test_bind_fills_in_lengths_of_omitted_outputs() -> None:
    """histogram256's counts may be left out; its length is still known (256)."""
    call = histogram256.bind({"data": np.zeros(10, dtype=np.uint8)}, {})

    assert call.lengths == {"data": 10, "counts": 256}
    assert "counts" not in call.buffers


#: The built-ins sized by one symbol ``n`` (graph kernels are sized by V and E instead).
ELEMENTWISE = (axpy, sum_reduce, histogram256)


@pytest.mark.parametrize("n", [0, 1, 31, 255, 257, 100_003, 2**31 - 1])
@pytest.mark.parametrize("kernel", ELEMENTWISE, ids=lambda k: k.name)
def test_launch_shape_covers_every_length(kernel: Kernel, n: int) -> None:
    """Each element-wise built-in launches nothing for n = 0 and full-warp blocks otherwise."""
    shape = kernel.launch({"n": n})

    assert shape.empty == (n == 0)
    assert shape.grid[1:] == (1, 1)
    assert shape.block[1:] == (1, 1)
    # The kernels loop with a grid stride, so any block count >= 1 covers all n; the
    # reductions' full-mask warp shuffles need whole warps.
    assert shape.threads_per_block % 32 == 0
    assert 0 <= shape.grid[0] <= 2**31 - 1
    if n:
        assert shape.grid[0] >= 1
        assert shape.grid[0] <= -(-n // shape.threads_per_block)
