"""NVRTC compilation to CUBIN, and the memory and disk caches in front of it.

These run NVRTC for real (it needs no GPU); only the cache directory is redirected,
to each test's own temporary folder.
"""

from __future__ import annotations

import shutil
import sys
import threading
import types
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from structlog.testing import capture_logs

from vyre_async.errors import CompileError, UnsupportedFeatureError
from vyre_async.kernels import (
    CompiledKernel,
    Kernel,
    ScalarParam,
    _cache,
    _compile,
    _nvrtc,
    arch_for,
    axpy,
    builtin_kernels,
    compile_kernel,
    grid_stride,
    histogram256,
    nvrtc_version,
    sum_reduce,
)
from vyre_async.kernels._signature import BufferParam

ELF_MAGIC = b"\x7fELF"
EM_CUDA = 190  # ELF e_machine of NVIDIA CUDA images


def _no_reference(arrays: Mapping[str, np.ndarray], scalars: Mapping[str, np.generic]) -> None:
    """Never run: these kernels are only compiled."""


def _kernel(source: str, entry: str = "k", options: tuple[str, ...] = ()) -> Kernel:
    return Kernel(
        name="test_kernel",
        source=source,
        entry=entry,
        params=(BufferParam("x", np.float32, "inout", "n"), ScalarParam("n", np.int32, "n")),
        launch=grid_stride("n"),
        reference=_no_reference,
        options=options,
    )


GOOD_SOURCE = 'extern "C" __global__ void k(float* x, int n) { if (n > 0) x[0] = SCALE; }'


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test gets an empty disk cache and an empty memory cache."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("VYRE_ASYNC_CACHE_DIR", str(directory))
    _compile.clear_memory_cache()
    yield directory
    _compile.clear_memory_cache()
    _nvrtc.forget_loaded_state()


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the kernels NVRTC actually built during the test."""
    calls: list[str] = []
    real = _nvrtc.build_cubin

    def counting(*args: object, **kwargs: object) -> tuple[bytes, str]:
        calls.append(str(kwargs["kernel_name"]))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_nvrtc, "build_cubin", counting)
    return calls


def _forbid_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> tuple[bytes, str]:
        raise AssertionError("NVRTC was called; the image should have come from a cache")

    monkeypatch.setattr(_nvrtc, "build_cubin", refuse)


def _events(logs: Sequence[MutableMapping[str, Any]], event: str) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == event]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kernel", builtin_kernels(), ids=lambda k: k.name)
def test_every_builtin_compiles_to_a_cuda_elf_image(kernel: Kernel, arch: str) -> None:
    """Each built-in kernel builds to a CUDA ELF CUBIN for Ampere and Hopper."""
    compiled = compile_kernel(kernel, arch)

    assert compiled.image[:4] == ELF_MAGIC
    assert int.from_bytes(compiled.image[18:20], "little") == EM_CUDA
    assert (compiled.entry, compiled.arch) == (kernel.entry, arch)
    assert compiled.nvrtc_version == nvrtc_version()
    assert len(compiled.key) == 64
    assert int(compiled.key, 16) >= 0
    assert kernel.entry.encode() in compiled.image  # the unmangled symbol is in the image


def test_second_compile_is_served_from_memory(builds: list[str]) -> None:
    """Compiling the same kernel twice builds once and returns the same object."""
    first = compile_kernel(axpy, "sm_90")
    second = compile_kernel(axpy, "sm_90")

    assert second is first
    assert builds == ["axpy"]


def test_fresh_process_reads_the_image_from_disk(
    monkeypatch: pytest.MonkeyPatch, cache_dir: Path
) -> None:
    """With the memory cache empty, the image comes back from disk without NVRTC."""
    built = compile_kernel(sum_reduce, "sm_90")
    assert (cache_dir / "cubin" / f"{built.key}.cubin").is_file()
    _compile.clear_memory_cache()
    _forbid_builds(monkeypatch)

    with capture_logs() as logs:
        loaded = compile_kernel(sum_reduce, "sm_90")

    assert loaded == built
    assert loaded is not built
    assert _events(logs, "cubin_cache_hit")


def test_cache_file_starts_with_the_integrity_header() -> None:
    """A disk entry is magic, format version, length and SHA-256, then the payload."""
    built = compile_kernel(axpy, "sm_80")
    data = _cache.entry_path(built.key).read_bytes()

    assert data.startswith(_cache.MAGIC)
    assert _cache.unframe(data)  # intact
    assert not list(_cache.cubin_dir().glob("*.tmp"))  # no temp file left behind


def _damage_truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _damage_flip(offset: int) -> Callable[[bytes], bytes]:
    def flip(data: bytes) -> bytes:
        at = offset % len(data)
        return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]

    return flip


@pytest.mark.parametrize(
    "damage",
    [
        _damage_truncate,
        lambda data: data[:10],
        lambda data: b"",
        _damage_flip(0),  # magic
        _damage_flip(8),  # format version
        _damage_flip(20),  # header digest
        _damage_flip(_cache.HEADER.size + 7),  # payload
        _damage_flip(-1),  # last payload byte
    ],
    ids=["half", "ten-bytes", "empty", "magic", "version", "digest", "payload", "last-byte"],
)
def test_damaged_cache_file_is_detected_and_rebuilt(
    damage: Callable[[bytes], bytes], builds: list[str]
) -> None:
    """A truncated or bit-flipped entry is logged as corrupt, rebuilt and rewritten."""
    built = compile_kernel(histogram256, "sm_90")
    path = _cache.entry_path(built.key)
    path.write_bytes(damage(path.read_bytes()))
    _compile.clear_memory_cache()

    with capture_logs() as logs:
        rebuilt = compile_kernel(histogram256, "sm_90")

    assert rebuilt.image == built.image
    assert builds == ["histogram256", "histogram256"]
    corrupt = _events(logs, "cubin_cache_corrupt")
    assert len(corrupt) == 1
    assert corrupt[0]["log_level"] == "warning"
    assert _cache.unframe(path.read_bytes())  # the rebuild replaced the damaged file


def test_intact_entry_of_another_key_is_rejected(builds: list[str]) -> None:
    """An entry copied over another key's file decodes but is refused and rebuilt."""
    first = compile_kernel(axpy, "sm_90")
    second = compile_kernel(sum_reduce, "sm_90")
    shutil.copyfile(_cache.entry_path(first.key), _cache.entry_path(second.key))
    _compile.clear_memory_cache()

    with capture_logs() as logs:
        again = compile_kernel(sum_reduce, "sm_90")

    assert again.image == second.image
    assert builds == ["axpy", "sum_reduce", "sum_reduce"]
    assert _events(logs, "cubin_cache_corrupt")


def test_unwritable_cache_dir_still_compiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache dir that cannot be created logs a warning and the image stays in memory."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("VYRE_ASYNC_CACHE_DIR", str(blocker / "cache"))

    with capture_logs() as logs:
        compiled = compile_kernel(axpy, "sm_90")

    assert compiled.image[:4] == ELF_MAGIC
    assert compile_kernel(axpy, "sm_90") is compiled
    failed = _events(logs, "cubin_cache_write_failed")
    assert len(failed) == 1
    assert failed[0]["log_level"] == "warning"


def test_broken_source_raises_compile_error_with_the_nvrtc_log() -> None:
    """A source error names the kernel and arch, quotes the log, and keeps it whole."""
    broken = _kernel('extern "C" __global__ void k(float* x, int n) { x[0] = not_declared; }')

    with pytest.raises(CompileError) as error:
        compile_kernel(broken, "sm_90")

    assert "not_declared" in error.value.log
    assert "test_kernel" in error.value.what
    assert "sm_90" in error.value.what
    assert "not_declared" in error.value.what  # the first log lines are in the message
    assert "Fix:" in str(error.value)


def test_long_nvrtc_log_is_abridged_in_the_message() -> None:
    """The message quotes the first lines of a long log; .log keeps all of it."""
    body = " ".join(f"x[{i}] = undeclared_{i};" for i in range(30))
    broken = _kernel(f'extern "C" __global__ void k(float* x, int n) {{ {body} }}')

    with pytest.raises(CompileError) as error:
        compile_kernel(broken, "sm_90")

    assert "undeclared_29" in error.value.log
    assert "more line(s)" in error.value.what
    assert "undeclared_29" not in error.value.what


def test_missing_entry_point_raises_compile_error() -> None:
    """An entry name the source does not define fails at compile time, not at launch."""
    with pytest.raises(CompileError, match="kernel 'test_kernel'") as error:
        compile_kernel(_kernel(GOOD_SOURCE, entry="not_there", options=("-DSCALE=1",)), "sm_90")

    assert "not_there" in error.value.log


def test_entry_point_without_extern_c_raises_compile_error() -> None:
    """A __global__ function with C++ linkage is refused with the extern "C" fix."""
    source = "__global__ void k(float* x, int n) { x[0] = 1.0f; }"

    with pytest.raises(CompileError, match='extern "C"'):
        compile_kernel(_kernel(source), "sm_90")


def test_invalid_nvrtc_option_raises_compile_error() -> None:
    """An option NVRTC does not know is reported against the kernel's options."""
    with pytest.raises(CompileError, match="--no-such-option"):
        compile_kernel(_kernel(GOOD_SOURCE, options=("--no-such-option",)), "sm_90")


def test_architecture_in_kernel_options_is_refused() -> None:
    """A kernel may not pin an architecture; the device chooses it."""
    with pytest.raises(ValueError, match="architecture"):
        compile_kernel(_kernel(GOOD_SOURCE, options=("--gpu-architecture=sm_80",)), "sm_90")


def test_key_changes_with_arch_and_options() -> None:
    """sm_80 vs sm_90, and -DSCALE=1 vs -DSCALE=2, give four different keys."""
    keys = {
        compile_kernel(_kernel(GOOD_SOURCE, options=(f"-DSCALE={s}",)), arch).key
        for arch in ("sm_80", "sm_90")
        for s in (1, 2)
    }

    assert len(keys) == 4


def test_key_changes_with_each_input() -> None:
    """Source, entry, options, arch and NVRTC version each change the key."""
    base = ("src", "k", ("-DA",), "sm_90", (13, 0))
    variants = [
        ("src2", "k", ("-DA",), "sm_90", (13, 0)),
        ("src", "k2", ("-DA",), "sm_90", (13, 0)),
        ("src", "k", ("-DB",), "sm_90", (13, 0)),
        ("src", "k", ("-D", "A"), "sm_90", (13, 0)),
        ("src", "k", (), "sm_90", (13, 0)),
        ("src", "k", ("-DA",), "sm_80", (13, 0)),
        ("src", "k", ("-DA",), "sm_90", (13, 1)),
    ]
    keys = {_compile.cache_key(*v) for v in [base, *variants]}

    assert len(keys) == 1 + len(variants)
    assert _compile.cache_key(*base) == _compile.cache_key(*base)


def test_equal_kernels_share_one_compiled_image(builds: list[str]) -> None:
    """Two Kernel objects with the same source, entry and options hit one cache entry."""
    first = compile_kernel(_kernel(GOOD_SOURCE, options=("-DSCALE=3",)), "sm_90")
    second = compile_kernel(_kernel(GOOD_SOURCE, options=("-DSCALE=3",)), "sm_90")

    assert second is first
    assert builds == ["test_kernel"]


def test_concurrent_compiles_of_one_kernel_build_it_once(builds: list[str]) -> None:
    """Eight threads asking for one kernel at once get one build and one object."""
    start = threading.Barrier(8)

    def compile_after_barrier() -> CompiledKernel:
        start.wait(timeout=30)
        return compile_kernel(axpy, "sm_80")

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = [
            f.result(timeout=60) for f in [pool.submit(compile_after_barrier) for _ in range(8)]
        ]

    assert all(r is results[0] for r in results)
    assert builds == ["axpy"]


def test_missing_nvrtc_bindings_raise_unsupported_feature_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without cuda.bindings.nvrtc, compiling names the extras that bring NVRTC."""
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", None)
    _nvrtc.forget_loaded_state()

    with pytest.raises(UnsupportedFeatureError, match=r"Fix: .*vyre-async\[cu13\].*\[cu12\]"):
        compile_kernel(axpy, "sm_90")


def test_unloadable_nvrtc_library_raises_unsupported_feature_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bindings present but libnvrtc not loadable is reported the same way."""
    fake = types.ModuleType("cuda.bindings.nvrtc")

    def nvrtc_version_call() -> tuple[object, int, int]:
        raise RuntimeError("Failure finding libnvrtc.so")

    fake.nvrtcVersion = nvrtc_version_call  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", fake)
    _nvrtc.forget_loaded_state()

    with pytest.raises(UnsupportedFeatureError, match="libnvrtc"):
        nvrtc_version()


def test_architecture_nvrtc_cannot_target_raises_unsupported_feature_error() -> None:
    """sm_10 is well formed but no NVRTC builds for it; the supported list is named."""
    with pytest.raises(UnsupportedFeatureError, match="sm_90"):
        compile_kernel(axpy, "sm_10")


@pytest.mark.parametrize("arch", ["90", "sm90", "compute_90", "sm_9", "SM_90", ""])
def test_malformed_architecture_is_refused(arch: str) -> None:
    """An architecture that is not sm_XY is a ValueError before NVRTC runs."""
    with pytest.raises(ValueError, match="sm_90"):
        compile_kernel(axpy, arch)


@pytest.mark.parametrize(
    ("major", "minor", "arch"),
    [(7, 5, "sm_75"), (8, 0, "sm_80"), (9, 0, "sm_90"), (12, 0, "sm_120")],
)
def test_arch_for_names_the_compute_capability(major: int, minor: int, arch: str) -> None:
    """arch_for(major, minor) is the sm_XY name NVRTC expects."""
    assert arch_for(major, minor) == arch


@pytest.mark.parametrize(("major", "minor"), [(0, 0), (9, 10), (9, -1)])
def test_arch_for_refuses_impossible_versions(major: int, minor: int) -> None:
    """Out-of-range compute capabilities are a ValueError."""
    with pytest.raises(ValueError, match="compute capability"):
        arch_for(major, minor)


def test_arch_for_refuses_non_int_versions() -> None:
    """A bool or float is not a version part."""
    with pytest.raises(TypeError):
        arch_for(True, 0)
    with pytest.raises(TypeError):
        arch_for(9.0, 0)  # type: ignore[arg-type]


def test_cache_root_prefers_env_then_xdg_then_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """VYRE_ASYNC_CACHE_DIR wins, then an absolute XDG_CACHE_HOME, then ~/.cache."""
    monkeypatch.setenv("VYRE_ASYNC_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _cache.cubin_dir() == tmp_path / "explicit" / "cubin"

    monkeypatch.delenv("VYRE_ASYNC_CACHE_DIR")
    assert _cache.cubin_dir() == tmp_path / "xdg" / "vyre_async" / "cubin"

    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _cache.cubin_dir() == tmp_path / "home" / ".cache" / "vyre_async" / "cubin"
