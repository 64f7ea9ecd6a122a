"""The hostile-input corpus: job files, the files they name and command lines to refuse.

Each case writes its inputs into an empty folder and returns the job file. Small
inputs are committed under ``files/``; large or special ones (a FIFO, a device, a
symlink loop, a 200 MB sparse file, a compression bomb) are made here on the spot,
cheaply: no case writes more than a few megabytes.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

FILES = Path(__file__).with_name("files")


class Case(NamedTuple):
    """One hostile input.

    Attributes:
        make: Writes the inputs into a folder; returns the job file.
        says: What the refusal's message must contain.
        run_args: More arguments for ``run`` (``{folder}`` is the job's folder).
        validate_refuses: Whether ``validate`` refuses it too (else it accepts the job:
            the problem is on ``run``'s command line).
    """

    make: Callable[[Path], Path]
    says: str
    run_args: tuple[str, ...] = ()
    validate_refuses: bool = True


def job(folder: Path, name: str = "job.json", **sections: object) -> Path:
    """A small valid job (R-MAT, one reach item) with ``sections`` replaced."""
    data: dict[str, object] = {
        "job": {"name": "hostile", "backend": "cpu"},
        "graph": {"kind": "rmat", "scale": 6},
        "workload": [{"kind": "reach", "sources": [0]}],
        "output": {"dir": "out"},
    }
    data.update(sections)
    path = folder / name
    path.write_text(json.dumps(data))
    return path


def committed(name: str) -> Callable[[Path], Path]:
    """The committed file ``files/<name>`` as the job file."""

    def make(folder: Path) -> Path:
        return Path(shutil.copy(FILES / name, folder / name))

    return make


def sources_job(folder: Path, sources: str = "ids.txt", **limits: object) -> Path:
    """A job whose one workload reads its sources from ``sources``."""
    return job(folder, workload=[{"kind": "reach", "sources": sources}], limits=limits)


def sources_in_a_fifo(folder: Path) -> Path:
    os.mkfifo(folder / "ids.txt")
    return sources_job(folder)


def sources_in(target: str) -> Callable[[Path], Path]:
    """Sources read through a symlink to ``target`` (a device)."""

    def make(folder: Path) -> Path:
        (folder / "ids.txt").symlink_to(target)
        return sources_job(folder)

    return make


def sources_in_a_directory(folder: Path) -> Path:
    (folder / "ids.txt").mkdir()
    return sources_job(folder)


def sources_in_a_symlink_loop(folder: Path) -> Path:
    (folder / "ids.txt").symlink_to("loop")
    (folder / "loop").symlink_to("ids.txt")
    return sources_job(folder)


def npy_header_of_2_40_sources(folder: Path) -> Path:
    """A .npy file whose header declares 2**40 int64 ids (8 TiB); it holds 64 bytes."""
    with (folder / "ids.npy").open("wb") as file:
        header = {"descr": "<i8", "fortran_order": False, "shape": (2**40,)}
        np.lib.format.write_array_header_1_0(file, header)
        file.write(bytes(64))
    return sources_job(folder, "ids.npy")


def npy_of_a_million_and_one_sources(folder: Path) -> Path:
    """Just past the default limit; the header alone is enough to refuse it."""
    with (folder / "ids.npy").open("wb") as file:
        header = {"descr": "<i8", "fortran_order": False, "shape": (1_000_001,)}
        np.lib.format.write_array_header_1_0(file, header)
    return sources_job(folder, "ids.npy")


def sources_file_of_200_mb(folder: Path) -> Path:
    """200 MB of '0 ' would be 104,857,600 sources; a sparse file of that size costs nothing."""
    with (folder / "ids.txt").open("wb") as file:
        file.truncate(200 << 20)
    return sources_job(folder)


def sources_line_of_2_mib(folder: Path) -> Path:
    (folder / "ids.txt").write_bytes(b"0 " * (1 << 20))
    return sources_job(folder)


def a_million_and_one_sources(folder: Path) -> Path:
    (folder / "ids.txt").write_bytes(b"0\n" * 1_000_001)
    return sources_job(folder)


def toml_dotted_key(parts: int) -> Callable[[Path], Path]:
    """``name.a.a.…`` with ``parts`` parts (20,000 took 7.4 s and 2.4 GB to decode)."""

    def make(folder: Path) -> Path:
        path = folder / "job.toml"
        path.write_text(
            '[job]\nname = "hostile"\nbackend = "cpu"\n'
            + "name"
            + ".a" * (parts - 1)
            + " = 1\n"
            + '[graph]\nkind = "rmat"\nscale = 6\n[[workload]]\nkind = "reach"\nsources = [0]\n'
        )
        return path

    return make


def toml_table_header(parts: int) -> Callable[[Path], Path]:
    """``[a.a.…]`` with ``parts`` parts."""

    def make(folder: Path) -> Path:
        path = folder / "job.toml"
        path.write_text(
            '[job]\nname = "hostile"\nbackend = "cpu"\n[graph]\nkind = "rmat"\nscale = 6\n'
            '[[workload]]\nkind = "reach"\nsources = [0]\n'
            "[" + ".".join(["a"] * parts) + "]\nx = 1\n"
        )
        return path

    return make


def toml_tables_of_32_parts(folder: Path) -> Path:
    """20,000 distinct tables, each within the depth limit (together about 640,000 parts)."""
    path = folder / "job.toml"
    tail = ".a" * 31
    path.write_text(
        '[job]\nname = "hostile"\nbackend = "cpu"\n[graph]\nkind = "rmat"\nscale = 6\n'
        '[[workload]]\nkind = "reach"\nsources = [0]\n'
        + "".join(f"[t{i}{tail}]\n" for i in range(20_000))
    )
    return path


def toml_a_million_small_lists(folder: Path) -> Path:
    """``x = [[1.5], [1.5], …]``: 4 MB that took tomllib 10 s to decode."""
    path = folder / "job.toml"
    path.write_text(
        '[job]\nname = "hostile"\nbackend = "cpu"\n[graph]\nkind = "rmat"\nscale = 6\n'
        '[[workload]]\nkind = "reach"\nsources = [0]\n[limits]\n'
        "x = [" + ", ".join(["[1.5]"] * 1_000_000) + "]\n"
    )
    return path


def _zip(members: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A ZIP archive of ``(name, data as stored, method, crc, declared size)`` members."""
    out = io.BytesIO()
    central = []
    for name, data, method, crc, size in members:
        offset = out.tell()
        encoded = name.encode()
        fields = (20, 0, method, 0, 0x21, crc, len(data), size, len(encoded), 0)
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields) + encoded + data)
        central.append(
            struct.pack("<IH", 0x02014B50, 20)
            + struct.pack("<HHHHHIIIHHHHHII", *fields, 0, 0, 0, 0, offset)
            + encoded
        )
    start = out.tell()
    for entry in central:
        out.write(entry)
    n, size = len(central), out.tell() - start
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, size, start, 0))
    return out.getvalue()


def _stored(name: str, array: np.ndarray) -> tuple[str, bytes, int, int, int]:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=False)
    data = buffer.getvalue()
    return name, data, 0, zlib.crc32(data), len(data)


def _deflated_zeros(header: bytes, mib: int) -> bytes:
    """A raw deflate stream of ``header`` then ``mib`` MiB of zeros, in a few KB per GiB:
    one self-contained, byte-aligned block of a MiB of zeros, repeated."""

    def alone(data: bytes) -> bytes:
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        return compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)

    return alone(header) + alone(bytes(1 << 20)) * mib + b"\x03\x00"  # an empty last block


def _npy_header(dtype: str, shape: tuple[int, ...]) -> bytes:
    buffer = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue()


def scipy_npz_inflating_to_4_gib(folder: Path) -> Path:
    """A ``scipy.sparse.save_npz`` CSR file of 4 MB whose ``indptr`` inflates to 4 GiB,
    every declared size consistent. Its CRC is left 0: a loader must refuse it from the
    sizes before inflating a byte; one that inflated it would learn of the CRC only
    after the memory was spent."""
    mib = 4095
    rows = (mib << 20) // 8 - 1
    header = _npy_header("<i8", (rows + 1,))
    indptr = ("indptr.npy", _deflated_zeros(header, mib), 8, 0, len(header) + (mib << 20))
    members = [
        _stored("indices.npy", np.zeros(0, np.int32)),
        indptr,
        _stored("format.npy", np.array("csr")),
        _stored("shape.npy", np.array([rows, rows], np.int64)),
        _stored("data.npy", np.zeros(0, np.float64)),
    ]
    (folder / "m.npz").write_bytes(_zip(members))
    return job(folder, graph={"kind": "scipy_npz", "path": "m.npz"})


def scipy_npz_member_inflating_past_its_size(folder: Path) -> Path:
    """A member that declares 2 items (consistent with its header) and whose deflate
    stream goes on for 4 GiB: reading stops at the declared size (its CRC is that of
    nothing in particular, so the read is refused there)."""
    header = _npy_header("<i8", (2,))
    indptr = ("indptr.npy", _deflated_zeros(header, 4095), 8, 0, len(header) + 16)
    members = [
        _stored("indices.npy", np.zeros(0, np.int32)),
        indptr,
        _stored("format.npy", np.array("csr")),
        _stored("shape.npy", np.array([1, 1], np.int64)),
        _stored("data.npy", np.zeros(0, np.float64)),
    ]
    (folder / "m.npz").write_bytes(_zip(members))
    return job(folder, graph={"kind": "scipy_npz", "path": "m.npz"})


def out_through_a_symlink_loop(folder: Path) -> Path:
    (folder / "loop").symlink_to("loop2")
    (folder / "loop2").symlink_to("loop")
    return job(folder)


#: Each input, what its refusal says, and how it is run.
CASES: dict[str, Case] = {
    "sources file is a FIFO": Case(sources_in_a_fifo, "FIFO"),
    "sources file is /dev/zero": Case(sources_in("/dev/zero"), "character device"),
    "sources file is /dev/urandom": Case(sources_in("/dev/urandom"), "character device"),
    "sources file is a directory": Case(sources_in_a_directory, "a directory"),
    "sources file is a symlink loop": Case(sources_in_a_symlink_loop, "symbolic links"),
    "sources .npy declaring 2**40 ids": Case(
        npy_header_of_2_40_sources, "declares 1,099,511,627,776 sources"
    ),
    "sources .npy of 1,000,001 ids": Case(
        npy_of_a_million_and_one_sources, "more than the 1,000,000 sources"
    ),
    "sources file of 200 MB": Case(sources_file_of_200_mb, "holds more than 64,000,000 bytes"),
    "sources line of 2 MiB": Case(sources_line_of_2_mib, "longer than 1,048,576 bytes"),
    "1,000,001 sources in a text file": Case(
        a_million_and_one_sources, "more than the 1,000,000 sources"
    ),
    "NUL in a sources path": Case(committed("nul_in_sources_path.json"), "$.workload[0].sources"),
    "TOML dotted key of 40 parts": Case(committed("dotted_key_of_40_parts.toml"), "40 parts"),
    "TOML table header of 40 parts": Case(committed("table_header_of_40_parts.toml"), "40 parts"),
    "TOML dotted key of 200,000 parts": Case(toml_dotted_key(200_000), "200,000 parts"),
    "TOML table header of 100,000 parts": Case(toml_table_header(100_000), "100,000 parts"),
    "TOML 20,000 tables of 32 parts": Case(toml_tables_of_32_parts, "key parts"),
    "TOML list of 1,000,000 lists": Case(toml_a_million_small_lists, "brackets opening lists"),
    "TOML integer of 5,000 digits": Case(
        committed("int_of_5000_digits.toml"), "$.graph.scale: an integer of 5,000 digits"
    ),
    "YAML integer of 5,000 digits": Case(
        committed("int_of_5000_digits.yaml"), "$.graph.scale: an integer of 5,000 digits"
    ),
    "JSON integer of 5,000 digits": Case(committed("int_of_5000_digits.json"), "$.graph.scale"),
    "SciPy .npz inflating to 4 GiB": Case(scipy_npz_inflating_to_4_gib, "of host memory"),
    "SciPy .npz member inflating past its size": Case(
        scipy_npz_member_inflating_past_its_size, "CRC"
    ),
    "--out through a symlink loop": Case(
        out_through_a_symlink_loop,
        "symlink loop",
        run_args=("--out", "{folder}/loop/out"),
        validate_refuses=False,
    ),
    "--metrics-port 70000": Case(
        job, "70000 is not a TCP port", ("--metrics-port", "70000"), validate_refuses=False
    ),
    "--metrics-port -1": Case(
        job, "-1 is not a TCP port", ("--metrics-port", "-1"), validate_refuses=False
    ),
}
