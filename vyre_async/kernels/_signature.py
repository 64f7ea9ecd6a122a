"""Kernel signatures: typed buffer and scalar parameters, and binding inputs to them.

A signature is validated once, when a :class:`Kernel` is defined; a call is validated
every time it is bound, before anything is staged or launched, so a bad input costs
nothing but the error.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, cast

import numpy as np

from ..errors import ValidationError

Role = Literal["in", "out", "inout"]
Scalar: TypeAlias = int | float | np.integer | np.floating
LengthRule: TypeAlias = int | str


class SizedBuffer(Protocol):
    """Anything a buffer parameter can be bound to: a NumPy array or a resident buffer."""

    @property
    def dtype(self) -> np.dtype[np.generic]: ...

    @property
    def size(self) -> int: ...


@dataclass(frozen=True, slots=True)
class BufferParam:
    """A pointer parameter.

    Args:
        name: Parameter name, as callers spell it in the inputs mapping.
        dtype: Element type; inputs must match it exactly (no silent casts).
        role: ``"in"`` (read), ``"out"`` (written, cleared to zero before launch) or
            ``"inout"`` (read and written).
        length: Element count: a fixed ``int``, or a size symbol (``"n"``) that every
            buffer naming it must agree on.
    """

    name: str
    dtype: np.dtype[np.generic]
    role: Role
    length: LengthRule

    def __init__(self, name: str, dtype: object, role: Role, length: LengthRule) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype", np.dtype(dtype))  # type: ignore[call-overload]
        object.__setattr__(self, "role", role)
        object.__setattr__(self, "length", length)
        if role not in ("in", "out", "inout"):
            raise ValueError(f"buffer role must be 'in', 'out' or 'inout', got {role!r}")
        if isinstance(length, int) and length < 0:
            raise ValueError(f"buffer {name!r} has a negative fixed length {length}")


@dataclass(frozen=True, slots=True)
class ScalarParam:
    """A by-value parameter.

    Args:
        name: Parameter name, passed as a keyword to ``dispatch``.
        dtype: The C type's NumPy equivalent (``int32``, ``uint32``, ``float32``...).
        default: ``None`` (required), a number, or a size symbol: then the value is
            derived from the bound buffer lengths and may not be passed explicitly.
    """

    name: str
    dtype: np.dtype[np.generic]
    default: Scalar | str | None = None

    def __init__(self, name: str, dtype: object, default: Scalar | str | None = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype", np.dtype(dtype))  # type: ignore[call-overload]
        object.__setattr__(self, "default", default)

    @property
    def derived(self) -> bool:
        """Whether the value comes from a size symbol rather than the caller."""
        return isinstance(self.default, str)


Param: TypeAlias = BufferParam | ScalarParam


def check_signature(kernel_name: str, params: tuple[Param, ...]) -> None:
    """Refuse a signature that could never be bound (a definition bug, not an input bug)."""
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        raise ValueError(f"kernel {kernel_name!r} repeats a parameter name: {names}")
    bound_by_inputs = {p.length for p in params if isinstance(p, BufferParam) and p.role != "out"}
    for p in params:
        symbol = p.length if isinstance(p, BufferParam) else p.default
        if isinstance(symbol, str) and symbol not in bound_by_inputs:
            raise ValueError(
                f"kernel {kernel_name!r}: parameter {p.name!r} uses size symbol {symbol!r}, "
                "which no input buffer binds"
            )


@functools.cache
def _bounds(dtype: np.dtype[Any]) -> tuple[float, float]:
    """Smallest and largest finite value of a numeric dtype (cached: iinfo/finfo are slow)."""
    if dtype.kind in "iu":
        info = np.iinfo(cast("np.dtype[np.integer[Any]]", dtype))
        return int(info.min), int(info.max)
    finfo = np.finfo(cast("np.dtype[np.floating[Any]]", dtype))
    return float(-finfo.max), float(finfo.max)


def coerce_scalar(kernel_name: str, param: ScalarParam, value: object) -> np.generic:
    """Convert a caller's scalar to the parameter's dtype, refusing lossy conversions."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
        raise ValidationError(
            f"scalar {param.name!r} of kernel {kernel_name!r} must be a number, "
            f"got {type(value).__name__}",
            fix=f"pass {param.name}= as a Python or NumPy number ({param.dtype}).",
        )
    low, high = _bounds(param.dtype)
    if param.dtype.kind in "iu":
        if isinstance(value, float | np.floating) and not float(value).is_integer():
            raise ValidationError(
                f"scalar {param.name!r} of kernel {kernel_name!r} is an integer "
                f"({param.dtype}), got {value!r}",
                fix=f"pass a whole number for {param.name}.",
            )
        whole = int(value)
        if not low <= whole <= high:
            raise ValidationError(
                f"scalar {param.name!r} of kernel {kernel_name!r} = {value} is outside "
                f"{param.dtype}'s range [{low}, {high}]",
                fix=f"pass a value in [{low}, {high}].",
            )
        return param.dtype.type(whole)
    as_float = float(value)
    if not np.isfinite(as_float):
        raise ValidationError(
            f"scalar {param.name!r} of kernel {kernel_name!r} = {as_float} is not finite",
            fix=f"pass a finite number for {param.name}.",
        )
    # A finite float64 can still overflow a float32 to inf; refuse it rather than warn.
    if not low <= as_float <= high:
        raise ValidationError(
            f"scalar {param.name!r} of kernel {kernel_name!r} = {as_float} overflows "
            f"{param.dtype} (largest finite {high:g})",
            fix=f"pass {param.name} with magnitude at most {high:g}.",
        )
    return param.dtype.type(as_float)
