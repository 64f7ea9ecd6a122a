"""A k-hop query's vertex set, compacted on the device and delivered where it is asked.

After a traversal limited to ``k`` levels, the reached vertices are compacted from the
levels on the device (:mod:`._compact_kernels`: a count per tile, a prefix sum over the
tiles, a scatter), in the traversal's order on the device, and then:

- with no ``out``, or a NumPy ``out``, only the set is read back (``count`` words,
  not one per vertex);
- into a device array (a ``ResidentBuffer``, or on the CUDA backend a CuPy, PyTorch
  or JAX array), the scatter writes straight into it: nothing reaches the host but
  the traversal's state words, and the host waits twice in all (for the traversal,
  then for the compaction).

The set's length is the traversal's reached count, known from its state words before
the compaction runs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...backends import Backend, PreparedSequence, ResidentBuffer, SequenceStep, is_foreign
from ...errors import ValidationError
from ._compact_kernels import khop_count, khop_scan, khop_scatter
from ._compact_layout import compact_tiles
from ._run import BfsScratch


class CompactScratch(BfsScratch):
    """A traversal's levels and state, and the compaction's tile counts and output.

    Its two sequences (tile offsets alone; tile offsets then the scatter into
    ``vertices``) are prepared on first use.
    """

    __slots__ = ("compact", "offsets", "tiles", "vertices")

    def __init__(
        self,
        levels: ResidentBuffer,
        state: ResidentBuffer,
        tiles: ResidentBuffer,
        vertices: ResidentBuffer,
    ) -> None:
        super().__init__(levels, state)
        self.tiles = tiles
        self.vertices = vertices
        self.nbytes += tiles.nbytes + vertices.nbytes
        self.offsets: PreparedSequence | None = None
        self.compact: PreparedSequence | None = None

    @property
    def buffers(self) -> tuple[ResidentBuffer, ...]:
        """The levels, state, tile counts and output buffers."""
        return (self.levels, self.state, self.tiles, self.vertices)


def compact_buffer_sizes(num_vertices: int) -> tuple[int, int]:
    """int32 words of the tile counts and of the output for a graph of ``num_vertices``."""
    return compact_tiles(num_vertices) + 1, max(num_vertices, 1)


async def deliver_reached(
    backend: Backend, scratch: CompactScratch, count: int, out: Any
) -> np.ndarray | None:
    """The ``count`` reached vertices of ``scratch.levels``, sorted, into ``out``.

    Args:
        backend: The backend holding the scratch.
        scratch: The levels of a finished traversal, and the compaction's buffers.
        count: How many vertices it reached (its state's reached count).
        out: ``None`` (a new array), a NumPy array, a ``ResidentBuffer`` of ``backend``,
            or (CUDA backend) another library's device array, checked by
            :func:`check_vertex_out`: the first ``count`` elements are written, the
            rest left alone.

    Returns:
        A new array with ``out=None``, else ``None``.
    """
    if scratch.offsets is None or scratch.compact is None:
        tiles = {"tile_counts": scratch.tiles}
        offsets = [
            SequenceStep(khop_count, {"levels": scratch.levels, **tiles}),
            SequenceStep(khop_scan, tiles),
        ]
        scatter = SequenceStep(
            khop_scatter,
            {"levels": scratch.levels, "tile_offsets": scratch.tiles, "out": scratch.vertices},
        )
        scratch.offsets = backend.prepare_repeated(offsets, [])
        scratch.compact = backend.prepare_repeated([*offsets, scatter], [])
    if isinstance(out, ResidentBuffer) or (is_foreign(out) and _host_view(out) is None):
        # Not awaited: the scatter waits for the tile offsets on the device (a dispatch is
        # ordered after unfinished work on its buffers), so the host waits once, for both.
        pending = scratch.offsets.submit(0)
        bindings = {"levels": scratch.levels, "tile_offsets": scratch.tiles, "out": out}
        await backend.dispatch(khop_scatter, bindings)
        await pending  # finished before the scatter started
        return None
    await scratch.compact.run(0)
    if out is None:
        return await backend.read(scratch.vertices, 0, count)
    target = out if isinstance(out, np.ndarray) else _host_view(out)
    if target is None:  # check_vertex_out refused it already
        raise ValueError(f"out is no array: {type(out).__name__}")
    await backend.read(scratch.vertices, 0, count, out=target.reshape(-1)[:count])
    return None


def check_vertex_out(out: Any, num_vertices: int, backend: Backend) -> None:
    """Refuse an ``out`` that cannot take a vertex set of up to ``num_vertices`` ids.

    It must be an int32 array of at least ``num_vertices`` elements (at least one),
    C-contiguous and writeable: a NumPy array (or a host DLPack tensor), a
    ``ResidentBuffer`` of ``backend``, or a device array of another library (CuPy,
    PyTorch, JAX; CUDA backend only).

    Raises:
        ValidationError: Naming what does not fit, with a fix; nothing has run.
    """
    need = max(num_vertices, 1)
    fix = (
        f"pass an int32 array of at least {need} elements: np.empty({need}, np.int32), "
        f"await backend.alloc(4 * {need}, np.int32), cupy.empty({need}, cupy.int32) or "
        f"torch.empty({need}, dtype=torch.int32, device='cuda')."
    )
    if isinstance(out, ResidentBuffer):
        if not backend.owns(out):
            raise ValidationError(
                f"out is resident buffer {out.id}, which is freed or belongs to another "
                f"backend than the session's ({backend.device_name})",
                fix="allocate it on the session's backend (await backend.alloc(...)).",
            )
        dtype, size = out.dtype, out.size
    else:
        host = out if isinstance(out, np.ndarray) else _host_view(out)
        if host is not None:
            if not host.flags.c_contiguous or not host.flags.writeable:
                raise ValidationError(
                    "out must be a writeable, C-contiguous array, not a view or slice", fix=fix
                )
            dtype, size = host.dtype, host.size
        elif is_foreign(out):
            if backend.kind != "cuda":
                raise ValidationError(
                    f"out is a device array ({type(out).__name__}); the {backend.kind} "
                    "backend works on host memory",
                    fix="pass a NumPy array or a ResidentBuffer, or open the CUDA backend.",
                )
            dtype, size = _device_layout(out, fix)
        else:
            raise ValidationError(f"out must be an array, got {type(out).__name__}", fix=fix)
    if dtype != np.dtype(np.int32) or size < need:
        raise ValidationError(
            f"out is a {dtype} array of {size} element(s); a vertex set of this graph "
            f"needs int32 and at least {need}",
            fix=fix,
        )


def _host_view(value: Any) -> np.ndarray | None:
    """A NumPy view of a host DLPack producer (a PyTorch CPU tensor), else ``None``."""
    device = getattr(value, "__dlpack_device__", None)
    if device is None or hasattr(value, "__cuda_array_interface__"):
        return None
    kind, _ = device()
    if int(kind) not in (1, 3):  # DLPack's CPU and CUDA-host devices
        return None
    return np.from_dlpack(value)


def _device_layout(value: Any, fix: str) -> tuple[np.dtype[Any], int]:
    """The dtype and element count of another library's device array, read from its
    CUDA Array Interface (which must say it is contiguous and writeable), else from its
    ``dtype`` and ``shape`` (PyTorch names its dtypes ``torch.int32``); the backend
    checks the rest where it borrows the array."""
    cai = getattr(value, "__cuda_array_interface__", None)
    try:
        if cai is None:
            name = str(value.dtype).removeprefix("torch.")
            return np.dtype(name), math.prod(int(x) for x in value.shape)
        dtype = np.dtype(cai["typestr"])
        shape = [int(x) for x in cai["shape"]]
        strides = cai.get("strides")
        readonly = bool(cai["data"][1])
    except (AttributeError, KeyError, IndexError, TypeError, ValueError):
        raise ValidationError(
            f"out is a {type(value).__name__}, whose dtype and length cannot be read",
            fix="pass a CuPy array, a PyTorch tensor, a ResidentBuffer or a NumPy array.",
        ) from None
    expected = dtype.itemsize
    for extent, stride in zip(reversed(shape), reversed(strides or ()), strict=False):
        if extent != 1 and stride != expected:
            raise ValidationError(
                f"out is a strided (non-contiguous) device array of shape {tuple(shape)}",
                fix=fix,
            )
        expected *= extent
    if readonly:
        raise ValidationError("out is a read-only device array", fix=fix)
    return dtype, math.prod(shape)
