"""The built-in kernels: every kernel the package ships, by name.

The kernel framework cannot know the algorithms built on it (they sit layers
above), so each algorithm package registers its kernels here when it is imported;
importing :mod:`vyre_async` imports them all. A CUDA backend loads none of them when
it opens: each loads at its first launch, or ahead of it (a job loads the kernels its
workloads' kinds name), so a device pays only for the kernels its work uses.
"""

from __future__ import annotations

from ._kernel import Kernel

_BUILTIN: dict[str, Kernel] = {}


def register_builtin(*kernels: Kernel) -> None:
    """Add kernels to the built-in set (registering the same kernel again is a no-op).

    Raises:
        TypeError: Something other than a :class:`Kernel` was given.
        ValueError: Another kernel already goes by one of the names.
    """
    for kernel in kernels:
        if not isinstance(kernel, Kernel):
            raise TypeError(f"expected a vyre_async Kernel, got {type(kernel).__name__}")
        known = _BUILTIN.get(kernel.name)
        if known is not None and known is not kernel:
            raise ValueError(f"a different built-in kernel is already named {kernel.name!r}")
        _BUILTIN[kernel.name] = kernel


def builtin_kernels() -> tuple[Kernel, ...]:
    """Every built-in kernel, in the order registered."""
    return tuple(_BUILTIN.values())
