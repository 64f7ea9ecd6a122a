"""The algorithms' CUDA C files: shipped in the wheel, compiled by NVRTC, in step with Python.

Every kernel that ships with the package reads its CUDA C from a ``.cu`` file (with
``.cuh`` headers inlined) through ``importlib.resources``; these tests check that
every such file reaches the wheel, that each ``.cu`` compiles for Ampere and Hopper,
and that the ``#define`` headers state the constants the Python side uses.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import vyre_async
from vyre_async.algorithms import msbfs, rmat
from vyre_async.algorithms.egraph import _state as egraph_state
from vyre_async.algorithms.msbfs import _layout as msbfs_layout
from vyre_async.kernels import Kernel, _compile, _nvrtc, builtin_kernels, load_cuda_source

PACKAGE_DIR = Path(vyre_async.__file__).parent
REPO = PACKAGE_DIR.parent
CUDA_FILES = sorted(
    p.relative_to(PACKAGE_DIR).as_posix() for p in PACKAGE_DIR.rglob("*.cu*") if p.is_file()
)
CU_FILES = [f for f in CUDA_FILES if f.endswith(".cu")]
#: Headers shared by several algorithms sit in the algorithms package itself.
SHARED = "vyre_async.algorithms"
ELF_MAGIC = b"\x7fELF"


def _load(relative: str) -> str:
    """A shipped CUDA file as the kernels load it: headers inlined."""
    folder, _, name = relative.rpartition("/")
    package = "vyre_async." + folder.replace("/", ".")
    return load_cuda_source(package, name, include_from=(SHARED,))


def _kernels_from(relative: str) -> list[Kernel]:
    """The shipped kernels whose source is this ``.cu`` file."""
    text = _load(relative)
    return [k for k in (*builtin_kernels(), *rmat.RMAT_KERNELS) if k.source == text]


def test_each_algorithm_kernel_has_its_cu_file() -> None:
    """One .cu per registered algorithm kernel (named by its entry), plus R-MAT's one unit."""
    stems = {f.rpartition("/")[2].removesuffix(".cu") for f in CU_FILES}
    framework = {"axpy", "sum_reduce", "histogram256"}  # small built-ins, kept in Python
    entries = {k.entry for k in builtin_kernels()} - framework
    assert stems == entries | {"rmat"}
    assert "algorithms/warp_merge.cuh" in CUDA_FILES


def test_every_cuda_file_ships_in_the_wheel(tmp_path: Path) -> None:
    """A wheel built from a copy of the tree holds every .cu and .cuh file, byte for byte."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", "_vyre_async_entry.py"):
        shutil.copy2(REPO / name, tree / name)
    shutil.copytree(PACKAGE_DIR, tree / "vyre_async", ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run(  # noqa: S603 - this interpreter's pip on a fixed command
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "--wheel-dir",
            str(tmp_path / "dist"),
            str(tree),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {
            name.removeprefix("vyre_async/"): archive.read(name)
            for name in archive.namelist()
            if name.startswith("vyre_async/") and re.search(r"\.cuh?$", name)
        }
    assert sorted(shipped) == CUDA_FILES
    for relative, data in shipped.items():
        assert data == (PACKAGE_DIR / relative).read_bytes(), relative


def test_every_header_is_included_by_a_cu_file() -> None:
    """No .cuh is left over: each is inlined into at least one kernel's source."""
    texts = [(PACKAGE_DIR / f).read_text(encoding="utf-8") for f in CUDA_FILES]
    for header in (f for f in CUDA_FILES if f.endswith(".cuh")):
        name = header.rpartition("/")[2]
        assert any(f'#include "{name}"' in text for text in texts), header


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("relative", CU_FILES)
def test_every_cu_file_compiles_with_nvrtc(relative: str, arch: str) -> None:
    """Each .cu file is a shipped kernel's source and NVRTC builds it to a CUDA ELF image.

    Built here by NVRTC itself, past the memory and disk caches, with the options the
    kernel is compiled with; one of its kernels' entries is checked (a file several
    kernels share, such as R-MAT's, is one translation unit).
    """
    kernels = _kernels_from(relative)
    assert kernels, f"no shipped kernel reads {relative}"
    kernel = kernels[0]
    options = _compile.compile_options(kernel, arch)
    image, _ = _nvrtc.build_cubin(
        kernel.source, kernel.entry, options, kernel_name=kernel.name, arch=arch
    )
    assert image[:4] == ELF_MAGIC
    for each in kernels:
        assert each.entry.encode() in image


def _defines(text: str) -> dict[str, str]:
    return dict(re.findall(r"^#define (\w+) (\S+)$", text, re.MULTILINE))


@pytest.mark.parametrize(
    ("header", "constants"),
    [
        ("algorithms/msbfs/msbfs_defines.cuh", msbfs_layout.CUDA_DEFINES),
        ("algorithms/egraph/egraph_defines.cuh", egraph_state.CUDA_DEFINES),
    ],
)
def test_define_headers_state_the_python_constants(
    header: str, constants: dict[str, object]
) -> None:
    """The CUDA C's #define header and the Python constants agree, name for name."""
    stated = _defines((PACKAGE_DIR / header).read_text(encoding="utf-8"))
    assert stated == {name: str(value) for name, value in constants.items()}


def test_the_msbfs_defines_follow_the_state_layout() -> None:
    """msbfs_defines.cuh's state indices are the package's STATE_* constants."""
    stated = _defines((PACKAGE_DIR / "algorithms/msbfs/msbfs_defines.cuh").read_text())
    for name, value in stated.items():
        if name.startswith("STATE_"):
            assert int(value) == getattr(msbfs, name), name


def test_an_include_cycle_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Headers that include each other raise ValueError instead of recursing forever."""
    package = tmp_path / "cycle_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.cuh").write_text('#include "b.cuh"\n')
    (package / "b.cuh").write_text('#include "a.cuh"\n')
    (package / "k.cu").write_text('#include "a.cuh"\nextern "C" __global__ void k() {}\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="cycle"):
        load_cuda_source("cycle_pkg", "k.cu")


def test_a_missing_header_names_the_file_and_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An #include of a header no package has raises FileNotFoundError naming both."""
    package = tmp_path / "lonely_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "k.cu").write_text('#include "gone.cuh"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"k\.cu includes 'gone\.cuh'.*lonely_pkg"):
        load_cuda_source("lonely_pkg", "k.cu")
