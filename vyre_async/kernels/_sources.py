"""CUDA C shipped as package data: read a ``.cu`` file and inline its local headers.

Kernels keep their CUDA C in real ``.cu`` / ``.cuh`` files beside the Python that
defines them, loaded with :mod:`importlib.resources` (so they are found in a wheel,
an editable install or a zip alike). A line ``#include "name.cuh"`` is replaced by
that header's text here, not left to NVRTC's include path: the source a kernel is
compiled from, and cached under, then holds everything that changes its image.
``#include <...>`` lines are left to the compiler.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources

_INCLUDE = re.compile(r'^#include "([^"\n]+)"[ \t]*\n', re.MULTILINE)


def load_cuda_source(package: str, name: str, *, include_from: Sequence[str] = ()) -> str:
    """The text of CUDA file ``name`` of ``package``, with its local headers inlined.

    Args:
        package: The package whose data holds the file (``__package__`` of the caller).
        name: The file name, e.g. ``"bfs_top_down.cu"``.
        include_from: Further packages whose data ``#include "..."`` lines may name,
            searched after ``package``.

    Returns:
        The source, every ``#include "x"`` line replaced by the text of ``x``
        (recursively).

    Raises:
        FileNotFoundError: The file or a header it includes is in none of the packages.
        ValueError: Headers include each other in a cycle.
    """
    return _inlined(package, name, (package, *include_from), ())


def _inlined(package: str, name: str, search: tuple[str, ...], stack: tuple[str, ...]) -> str:
    if name in stack:
        raise ValueError(f"CUDA headers include each other in a cycle: {' -> '.join(stack)}")
    text = _read(package, name)

    def header(match: re.Match[str]) -> str:
        included = match.group(1)
        owner = next((p for p in search if resources.files(p).joinpath(included).is_file()), None)
        if owner is None:
            raise FileNotFoundError(
                f"{package}/{name} includes {included!r}, found in none of {', '.join(search)}"
            )
        return _inlined(owner, included, search, (*stack, name))

    return _INCLUDE.sub(header, text)


def _read(package: str, name: str) -> str:
    resource = resources.files(package).joinpath(name)
    if not resource.is_file():
        raise FileNotFoundError(f"no CUDA file {name!r} in package {package}")
    return resource.read_text(encoding="utf-8")
