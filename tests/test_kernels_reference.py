"""The built-in kernels' CPU references against independent float64 NumPy computations.

The references are the oracle the CUDA backend is tested against, so they are checked
here against something other than themselves: exact or float64 sums, np.unique counts.
Inputs are made read-only, so a reference that writes an ``in`` array fails loudly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from vyre_async.kernels import axpy, builtin_kernels, histogram256, sum_reduce

SIZES = (0, 1, 255, 257, 100_003)
F32_EPS = float(np.finfo(np.float32).eps)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


@pytest.mark.parametrize("n", SIZES)
def test_axpy_reference_matches_float64_axpy(n: int, rng: np.random.Generator) -> None:
    """axpy's reference gives a*x + y to float32 rounding of the float64 result."""
    x = _read_only((rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(np.float32))
    y = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(np.float32)
    a = np.float32(rng.uniform(-4.0, 4.0))
    expected = np.float64(a) * x.astype(np.float64) + y.astype(np.float64)
    call = axpy.bind({"x": x, "y": y}, {"a": a})

    axpy.reference({"x": x, "y": y}, call.scalars)

    assert y.dtype == np.float32
    # Rounding a float64 value to float32 moves it by at most half an ulp (2**-24 relative).
    np.testing.assert_allclose(y, expected, rtol=F32_EPS, atol=1e-37)


def test_axpy_reference_reads_y_instead_of_assuming_zeroed_output(
    rng: np.random.Generator,
) -> None:
    """axpy treats y as inout: with a = 0 the caller's y survives bit for bit."""
    x = _read_only(rng.standard_normal(257).astype(np.float32))
    y = rng.uniform(1e3, 1e4, 257).astype(np.float32)
    before = y.copy()
    call = axpy.bind({"x": x, "y": y}, {"a": 0.0})

    axpy.reference({"x": x, "y": y}, call.scalars)

    np.testing.assert_array_equal(y, before)


def test_axpy_reference_updates_y_in_place(rng: np.random.Generator) -> None:
    """axpy writes into the y array it was given rather than a new one."""
    x = _read_only(np.ones(16, dtype=np.float32))
    y = np.zeros(16, dtype=np.float32)
    arrays = {"x": x, "y": y}

    axpy.reference(arrays, axpy.bind(arrays, {"a": 3.0}).scalars)

    assert arrays["y"] is y
    np.testing.assert_array_equal(y, np.full(16, 3.0, dtype=np.float32))


@pytest.mark.parametrize("n", SIZES)
def test_sum_reference_matches_exact_sum(n: int, rng: np.random.Generator) -> None:
    """sum's reference stores the float64 sum of x, rounded once to float32."""
    x = _read_only((rng.standard_normal(n) * 10.0 ** rng.uniform(-2, 2, n)).astype(np.float32))
    exact = math.fsum(x.astype(np.float64).tolist())
    out = np.zeros(1, dtype=np.float32)  # outputs arrive zeroed, as on the device
    call = sum_reduce.bind({"x": x}, {})

    sum_reduce.reference({"x": x, "out": out}, call.scalars)

    # float64 pairwise summation error plus one rounding to float32.
    slack = n * 2.0**-52 * float(np.abs(x.astype(np.float64)).sum())
    assert abs(float(out[0]) - exact) <= F32_EPS * abs(exact) + slack, (out[0], exact)


def test_sum_reference_of_cancelling_values_is_not_float32_accumulation() -> None:
    """sum accumulates in float64: 1e8 + 1 ... - 1e8 keeps the small terms."""
    x = _read_only(np.array([1e8] + [1.0] * 1000 + [-1e8], dtype=np.float32))
    out = np.zeros(1, dtype=np.float32)

    sum_reduce.reference({"x": x, "out": out}, sum_reduce.bind({"x": x}, {}).scalars)

    assert out[0] == np.float32(1000.0)


@pytest.mark.parametrize("n", SIZES)
def test_histogram_reference_matches_unique_counts(n: int, rng: np.random.Generator) -> None:
    """histogram256's reference counts every byte value exactly, as np.unique does."""
    data = _read_only(rng.integers(0, 256, n, dtype=np.uint8))
    values, counts = np.unique(data, return_counts=True)
    expected = np.zeros(256, dtype=np.int64)
    expected[values] = counts
    out = np.zeros(256, dtype=np.uint32)

    histogram256.reference(
        {"data": data, "counts": out}, histogram256.bind({"data": data}, {}).scalars
    )

    assert out.dtype == np.uint32
    np.testing.assert_array_equal(out.astype(np.int64), expected)


def test_histogram_reference_counts_a_single_repeated_byte(rng: np.random.Generator) -> None:
    """histogram256 puts all n of a constant input in one bin (worst-case contention)."""
    value = int(rng.integers(0, 256))
    data = _read_only(np.full(100_003, value, dtype=np.uint8))
    out = np.zeros(256, dtype=np.uint32)

    histogram256.reference(
        {"data": data, "counts": out}, histogram256.bind({"data": data}, {}).scalars
    )

    assert int(out[value]) == 100_003
    assert int(out.sum()) == 100_003


def test_builtin_kernels_have_distinct_names_and_entries() -> None:
    """builtin_kernels() lists every built-in once, with distinct names and entries."""
    names = [k.name for k in builtin_kernels()]
    entries = [k.entry for k in builtin_kernels()]

    assert names[:3] == ["axpy", "sum_reduce", "histogram256"]
    assert {"bfs_top_down", "bfs_bottom_up", "pr_gather"} <= set(names)
    assert len(set(names)) == len(names)
    assert len(set(entries)) == len(entries)
