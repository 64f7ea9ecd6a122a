"""Built-in kernels are named in errors as users call them; the guide says what
compile_kernel returns."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

import vyre_async as va
from vyre_async.kernels import CompiledKernel, Kernel, compile_kernel

EXPORTED = [name for name in va.kernels.__all__ if isinstance(getattr(va.kernels, name), Kernel)]


@pytest.mark.parametrize("name", EXPORTED)
def test_every_exported_kernel_is_named_as_it_is_exported(name: str) -> None:
    """va.kernels.X.name == "X" for every kernel va.kernels exports."""
    assert getattr(va.kernels, name).name == name


async def test_an_error_of_sum_reduce_names_sum_reduce() -> None:
    """Dispatching sum_reduce without its input: the error names 'sum_reduce'."""
    async with va.open_backend("cpu") as backend:
        with pytest.raises(va.ValidationError, match=r"kernel 'sum_reduce' needs input buffer 'x'"):
            await backend.dispatch(va.kernels.sum_reduce, {})


def test_the_kernels_guide_says_compile_kernel_returns_a_compiled_kernel() -> None:
    """The guide's sentence on compile_kernel names the type it returns."""
    assert typing.get_type_hints(compile_kernel)["return"] is CompiledKernel
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guide" / "kernels.md").read_text()
    (item,) = [p for p in guide.split("\n- ") if "compile_kernel(" in p]
    assert "returns a `CompiledKernel`" in " ".join(item.split())
