"""The :class:`Kernel`: CUDA C source, a typed signature, a launch rule, a CPU reference.

The reference is optional: a kernel meant only for CUDA leaves it out, and the CPU
backend refuses to run such a kernel.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

from ..errors import ValidationError
from ._launch import LaunchRule, LaunchShape
from ._signature import (
    BufferParam,
    Param,
    ScalarParam,
    SizedBuffer,
    check_signature,
    coerce_scalar,
)

B = TypeVar("B", bound=SizedBuffer)

#: A CPU reference: reads the ``in``/``inout`` arrays, writes ``out``/``inout`` arrays in
#: place (outputs arrive zeroed, as on the device), given the coerced scalars.
Reference = Callable[[Mapping[str, np.ndarray], Mapping[str, np.generic]], None]


@dataclass(frozen=True, slots=True)
class BoundCall(Generic[B]):
    """A kernel call whose inputs passed validation.

    Attributes:
        kernel: The kernel.
        buffers: Every ``in``/``inout`` parameter, plus ``out`` parameters the caller bound.
        scalars: Every scalar parameter, coerced to its dtype, in signature order.
        sizes: The value of each size symbol.
        lengths: Element count of every buffer parameter.
        launch: The launch shape for these sizes.
    """

    kernel: Kernel
    buffers: Mapping[str, B]
    scalars: Mapping[str, np.generic]
    sizes: Mapping[str, int]
    lengths: Mapping[str, int]
    launch: LaunchShape


@dataclass(frozen=True, eq=False)
class Kernel:
    """A device kernel and everything needed to run it anywhere.

    Args:
        name: Short name used in logs, telemetry and errors.
        source: CUDA C source; the entry point must be ``extern "C"``.
        entry: The ``__global__`` function to launch.
        params: Parameters in the entry point's argument order.
        launch: Maps bound sizes to a launch shape.
        reference: NumPy implementation with the same semantics, used by the CPU
            backend and as the oracle for the CUDA backend's tests; ``None`` for a
            kernel that only runs on CUDA (the CPU backend then refuses it with an
            :class:`~vyre_async.errors.UnsupportedFeatureError`).
        options: Extra NVRTC options (architecture is added by the compiler).
    """

    name: str
    source: str = field(repr=False)
    entry: str
    params: tuple[Param, ...]
    launch: LaunchRule = field(repr=False)
    reference: Reference | None = field(default=None, repr=False)
    options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_signature(self.name, self.params)

    @functools.cached_property
    def buffer_params(self) -> tuple[BufferParam, ...]:
        """The pointer parameters, in argument order."""
        return tuple(p for p in self.params if isinstance(p, BufferParam))

    @functools.cached_property
    def scalar_params(self) -> tuple[ScalarParam, ...]:
        """The by-value parameters, in argument order."""
        return tuple(p for p in self.params if isinstance(p, ScalarParam))

    @functools.cached_property
    def _scalar_names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.scalar_params)

    def bind(self, buffers: Mapping[str, B], scalars: Mapping[str, object]) -> BoundCall[B]:
        """Validate a call: names, dtypes, lengths and scalar values.

        Args:
            buffers: Parameter name -> array or resident buffer. ``out`` parameters
                may be omitted (the backend allocates them).
            scalars: Parameter name -> value for scalars without a derived default.

        Returns:
            The validated call.

        Raises:
            ValidationError: A missing, extra, wrongly typed or wrongly sized input.
        """
        by_name = {p.name: p for p in self.buffer_params}
        for name in buffers:
            if name not in by_name:
                hint = "it is a scalar: pass it as a keyword" if self._is_scalar(name) else ""
                raise ValidationError(
                    f"kernel {self.name!r} has no buffer parameter {name!r}; its buffers are "
                    f"{', '.join(by_name) or 'none'}",
                    fix=hint or f"remove {name!r} from the inputs or check its spelling.",
                )
        sizes: dict[str, int] = {}
        size_source: dict[str, str] = {}
        lengths: dict[str, int] = {}
        for p in self.buffer_params:
            given = buffers.get(p.name)
            if given is None:
                if p.role != "out":
                    raise ValidationError(
                        f"kernel {self.name!r} needs input buffer {p.name!r} ({p.dtype}, "
                        f"length {p.length}) and none was given",
                        fix=f"add {p.name!r} to the inputs mapping.",
                    )
                continue
            self._check_buffer(p, given)
            if isinstance(p.length, int):
                if given.size != p.length:
                    raise ValidationError(
                        f"buffer {p.name!r} of kernel {self.name!r} has {given.size} "
                        f"elements, expected exactly {p.length}",
                        fix=f"pass {p.length} elements for {p.name!r}.",
                    )
            elif p.length in sizes:
                if given.size != sizes[p.length]:
                    other = size_source[p.length]
                    raise ValidationError(
                        f"buffer {p.name!r} of kernel {self.name!r} has {given.size} elements "
                        f"but {other!r} has {sizes[p.length]}; both are length {p.length!r}",
                        fix=f"pass {p.name!r} and {other!r} with the same length.",
                    )
            elif p.role != "out":
                sizes[p.length] = given.size
                size_source[p.length] = p.name
            lengths[p.name] = given.size
        for p in self.buffer_params:
            if p.name not in lengths:
                lengths[p.name] = p.length if isinstance(p.length, int) else sizes[p.length]
            elif (
                p.role == "out" and isinstance(p.length, str) and lengths[p.name] != sizes[p.length]
            ):
                raise ValidationError(
                    f"output buffer {p.name!r} of kernel {self.name!r} has "
                    f"{lengths[p.name]} elements, expected {sizes[p.length]} ({p.length!r})",
                    fix=f"bind a buffer of {sizes[p.length]} elements or leave {p.name!r} out.",
                )
        return BoundCall(
            kernel=self,
            buffers=dict(buffers),
            scalars=self.bind_scalars(scalars, sizes),
            sizes=sizes,
            lengths=lengths,
            launch=self.launch(sizes),
        )

    def _is_scalar(self, name: str) -> bool:
        return any(p.name == name for p in self.scalar_params)

    def _check_buffer(self, p: BufferParam, given: SizedBuffer) -> None:
        dtype = getattr(given, "dtype", None)
        if dtype is None or not hasattr(given, "size"):
            raise ValidationError(
                f"buffer {p.name!r} of kernel {self.name!r} must be a NumPy array or a "
                f"ResidentBuffer, got {type(given).__name__}",
                fix=f"pass np.asarray(..., dtype=np.{p.dtype}) for {p.name!r}.",
            )
        if dtype != p.dtype:
            raise ValidationError(
                f"buffer {p.name!r} of kernel {self.name!r} has dtype {dtype}, expected {p.dtype}",
                fix=f"convert it first: {p.name}.astype(np.{p.dtype}).",
            )

    def bind_scalars(
        self, scalars: Mapping[str, object], sizes: Mapping[str, int]
    ) -> dict[str, np.generic]:
        """Validate and coerce scalar values for a call whose buffers bound ``sizes``.

        Args:
            scalars: Parameter name -> value, as passed to ``dispatch``.
            sizes: The value of each size symbol (``BoundCall.sizes``).

        Returns:
            Every scalar parameter's value, coerced to its dtype, in signature order.

        Raises:
            ValidationError: An unknown name, a missing value, or a value that does
                not fit the parameter's dtype.
        """
        known = self._scalar_names
        for name in scalars:
            if name not in known:
                raise ValidationError(
                    f"kernel {self.name!r} has no scalar parameter {name!r}; its scalars are "
                    f"{', '.join(sorted(known)) or 'none'}",
                    fix=f"remove the keyword {name}= or check its spelling.",
                )
        values: dict[str, np.generic] = {}
        for p in self.scalar_params:
            if p.derived:
                if p.name in scalars:
                    raise ValidationError(
                        f"scalar {p.name!r} of kernel {self.name!r} is derived from the buffer "
                        f"lengths ({p.default}={sizes[str(p.default)]}) and cannot be passed",
                        fix=f"drop the keyword {p.name}=; it always equals the bound length.",
                    )
                values[p.name] = coerce_scalar(self.name, p, sizes[str(p.default)])
            elif p.name in scalars:
                values[p.name] = coerce_scalar(self.name, p, scalars[p.name])
            elif p.default is not None:
                values[p.name] = coerce_scalar(self.name, p, p.default)
            else:
                raise ValidationError(
                    f"kernel {self.name!r} needs scalar {p.name!r} ({p.dtype}) and none was given",
                    fix=f"pass {p.name}=<{p.dtype}> to dispatch.",
                )
        return values
