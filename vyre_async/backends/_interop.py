"""Arrays of other libraries: borrowed in (CUDA Array Interface, DLPack), exported out.

**In.** A CuPy array, a PyTorch tensor, a JAX array or anything else exposing
``__cuda_array_interface__`` (CAI) or DLPack (``__dlpack__``/``__dlpack_device__``)
can be bound wherever a buffer is expected. On the CUDA backend a device array is
*borrowed*: its memory is used in place, with no copy. :func:`borrow` reads it into
a :class:`Borrowed` (pointer, dtype, shape, the producer's stream to wait for, and
what must stay alive until the work using it has finished). The producer's pending
work is honoured without a host synchronisation: a CAI v3 ``stream`` becomes an event
recorded there that the consumer's stream waits for, and DLPack is asked for the data
on the consumer's stream (``__dlpack__(stream=...)``), which makes the producer
insert that wait. CAI is read when it is version 3 (it carries the stream); a
producer with only an older CAI but DLPack (PyTorch) is read through DLPack. Host
DLPack producers (a PyTorch CPU tensor) become NumPy arrays (``np.from_dlpack``, no
copy).

**Out.** A :class:`~._resident.ResidentBuffer` exports both protocols through
:class:`Exporter` (see the backends): ``cupy.asarray(buf)`` and
``torch.from_dlpack(buf)`` see the buffer's own memory.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ValidationError
from ._resident import ResidentBuffer

__all__ = [
    "Borrowed",
    "borrow",
    "dlpack_capsule",
    "host_view",
    "is_foreign",
]

#: ``CAI`` stream values with a fixed meaning (anything else is a ``cudaStream_t``).
LEGACY_STREAM = 1
PER_THREAD_STREAM = 2
#: DLPack device types.
DL_CPU = 1
DL_CUDA = 2
DL_CUDA_HOST = 3
_DL_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


class _DLDevice(ctypes.Structure):
    _fields_ = (("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32))


class _DLDataType(ctypes.Structure):
    _fields_ = (("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16))


class _DLTensor(ctypes.Structure):
    _fields_ = (
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    )


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = (
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
)

_CAPSULE_NAME = b"dltensor"
_USED_NAME = b"used_dltensor"
_api = ctypes.pythonapi
_capsule_new = _api.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
_capsule_pointer = _api.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = (ctypes.py_object, ctypes.c_char_p)
_capsule_set_name = _api.PyCapsule_SetName
_capsule_set_name.restype = ctypes.c_int
_capsule_set_name.argtypes = (ctypes.py_object, ctypes.c_char_p)
# The capsule destructor receives the capsule as a raw pointer (it is being freed).
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api)
)
_raw_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api)
)
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@dataclass(eq=False, slots=True)
class Borrowed:
    """A device array handed in by another library, used in place.

    Attributes:
        ptr: Device address of the first element.
        dtype: Element type (NumPy).
        shape: Shape.
        size: Element count.
        nbytes: Size in bytes.
        device: CUDA device ordinal, or ``None`` where only the pointer says it.
        stream: The producer's stream to wait for (a ``cudaStream_t`` as an int,
            :data:`LEGACY_STREAM` or :data:`PER_THREAD_STREAM`), or ``None``.
        keep: What must stay alive until the work using the array has finished.
        release: Run once that work has finished (a DLPack tensor's deleter).
    """

    ptr: int
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    size: int
    nbytes: int
    device: int | None
    stream: int | None
    keep: Any = None
    release: Callable[[], None] | None = field(default=None, repr=False)


def is_foreign(value: object) -> bool:
    """Whether ``value`` is an array of another library (CAI or DLPack): not NumPy, and
    not one of vyre_async's own resident buffers (which export both protocols)."""
    if isinstance(value, np.ndarray | ResidentBuffer):
        return False
    return hasattr(value, "__cuda_array_interface__") or hasattr(value, "__dlpack_device__")


def host_view(value: Any) -> np.ndarray | None:
    """A NumPy view of a host DLPack producer (a PyTorch CPU tensor), else ``None``."""
    device = getattr(value, "__dlpack_device__", None)
    if device is None or hasattr(value, "__cuda_array_interface__"):
        return None
    kind, _ = device()
    if int(kind) not in (DL_CPU, DL_CUDA_HOST):
        return None
    return np.from_dlpack(value)


def _fix_for(what: str) -> str:
    return (
        f"pass {what} (NumPy/CuPy: x = x.astype(...) or np.ascontiguousarray(x); "
        "PyTorch: x = x.contiguous().to(dtype))."
    )


def _contiguous(shape: tuple[int, ...], strides: Any, itemsize: int) -> bool:
    if strides is None:
        return True
    expected = itemsize
    for extent, stride in zip(reversed(shape), reversed(tuple(strides)), strict=True):
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True


def borrow(value: Any, name: str, consumer_stream: int) -> Borrowed:
    """Read a device array of another library, to be used in place.

    Args:
        value: The array (CAI v3, DLPack, or CAI v2).
        name: The parameter it is bound to, for messages.
        consumer_stream: The stream the work will run on (``int(CUstream)``): DLPack
            producers make it wait for their pending work.

    Returns:
        The borrowed array.

    Raises:
        ValidationError: Not C-contiguous, masked, or an unsupported dtype.
    """
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is not None and int(cai.get("version", 0)) >= 3:
        return _from_cai(value, cai, name)
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        return _from_dlpack(value, name, consumer_stream)
    if cai is not None:
        return _from_cai(value, cai, name)
    raise ValidationError(
        f"buffer {name!r} is a {type(value).__name__}, which exposes neither the CUDA "
        "Array Interface nor DLPack",
        fix="pass a NumPy array, a ResidentBuffer, or a CuPy/PyTorch/JAX array.",
    )


def _from_cai(value: Any, cai: dict[str, Any], name: str) -> Borrowed:
    if cai.get("mask") is not None:
        raise ValidationError(
            f"buffer {name!r} is a masked device array", fix="pass an array without a mask."
        )
    dtype = np.dtype(cai["typestr"])
    shape = tuple(int(extent) for extent in cai["shape"])
    if not _contiguous(shape, cai.get("strides"), dtype.itemsize):
        raise ValidationError(
            f"buffer {name!r} is a strided (non-contiguous) device array of shape {shape}",
            fix=_fix_for("a C-contiguous copy"),
        )
    size = int(np.prod(shape, dtype=np.int64))
    stream = cai.get("stream")
    if stream == 0:
        raise ValidationError(
            f"buffer {name!r}: its __cuda_array_interface__ names stream 0, which the "
            "protocol forbids (it is ambiguous)",
            fix="export the array from a named stream, or from the default stream (1).",
        )
    return Borrowed(
        ptr=int(cai["data"][0]),
        dtype=dtype,
        shape=shape,
        size=size,
        nbytes=size * dtype.itemsize,
        device=None,
        stream=None if stream is None else int(stream),
        keep=value,
    )


def _from_dlpack(value: Any, name: str, consumer_stream: int) -> Borrowed:
    kind, device_id = value.__dlpack_device__()
    if int(kind) != DL_CUDA:
        raise ValidationError(
            f"buffer {name!r} is on DLPack device {int(kind)}, not a CUDA device",
            fix="pass a CUDA array, or a host array (NumPy, or x.cpu().numpy()).",
        )
    capsule = value.__dlpack__(stream=consumer_stream)
    address = _capsule_pointer(capsule, _CAPSULE_NAME)
    managed = _DLManagedTensor.from_address(address)
    # Ours now: the capsule's own destructor must no longer free it.
    _capsule_set_name(capsule, _USED_NAME)
    tensor = managed.dl_tensor
    deleter = managed.deleter

    def release() -> None:
        if deleter:
            deleter(ctypes.cast(address, ctypes.POINTER(_DLManagedTensor)))

    try:
        ndim = int(tensor.ndim)
        shape = tuple(int(tensor.shape[i]) for i in range(ndim))
        code, bits, lanes = tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes
        dtype = _dtype_of(code, bits, lanes, name)
        _check_dlpack_strides(tensor, shape, dtype, name)
    except BaseException:
        release()
        raise
    size = int(np.prod(shape, dtype=np.int64))
    return Borrowed(
        ptr=int(tensor.data or 0) + int(tensor.byte_offset),
        dtype=dtype,
        shape=shape,
        size=size,
        nbytes=size * dtype.itemsize,
        device=int(device_id),
        stream=None,  # the producer made consumer_stream wait
        keep=value,
        release=release,
    )


def _check_dlpack_strides(
    tensor: Any, shape: tuple[int, ...], dtype: np.dtype[Any], name: str
) -> None:
    """Refuse a strided DLPack tensor (its strides count elements, not bytes)."""
    if not tensor.strides:
        return
    strides = [tensor.strides[i] * dtype.itemsize for i in range(len(shape))]
    if not _contiguous(shape, strides, dtype.itemsize):
        raise ValidationError(
            f"buffer {name!r} is a strided (non-contiguous) device array of shape {shape}",
            fix=_fix_for("a C-contiguous copy"),
        )


def _dtype_of(code: int, bits: int, lanes: int, name: str) -> np.dtype[Any]:
    kinds = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}
    if lanes != 1 or code not in kinds:
        raise ValidationError(
            f"buffer {name!r} has a DLPack dtype (code {code}, {bits} bits, {lanes} lanes) "
            "with no NumPy equivalent",
            fix=_fix_for("a plain integer or floating-point array"),
        )
    return np.dtype(f"{kinds[code]}{bits // 8}") if code != 6 else np.dtype(np.bool_)


# ----------------------------------------------------------------- export
_exports: dict[int, Any] = {}
_export_ids = itertools.count(1)
_export_lock = threading.Lock()


def _forget_export(managed: Any) -> None:
    """The DLPack deleter: the consumer is done with the tensor."""
    key = int(managed.contents.manager_ctx or 0)
    with _export_lock:
        _exports.pop(key, None)


def _destroy(raw: int) -> None:
    """The capsule destructor: a capsule nobody consumed still owns its tensor
    (consumers rename it first)."""
    if _raw_is_valid(raw, _CAPSULE_NAME):
        address = _raw_pointer(raw, _CAPSULE_NAME)
        if address:
            _forget_export(ctypes.cast(address, ctypes.POINTER(_DLManagedTensor)))


_delete_export = _DELETER(_forget_export)
_destroy_capsule = _CAPSULE_DESTRUCTOR(_destroy)


def dlpack_capsule(
    ptr: int,
    dtype: np.dtype[Any],
    shape: tuple[int, ...],
    device: tuple[int, int],
    owner: Any,
) -> Any:
    """A DLPack capsule over ``ptr`` that keeps ``owner`` alive until its consumer is done.

    Args:
        ptr: Address of the first element (device or host).
        dtype: Element type.
        shape: Shape (C-contiguous).
        device: ``(DLPack device type, ordinal)``.
        owner: Kept alive until the consumer calls the tensor's deleter.
    """
    if dtype.kind not in _DL_CODES:
        raise ValidationError(
            f"dtype {dtype} has no DLPack equivalent", fix="export an integer or float buffer."
        )
    shape_array = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    managed = _DLManagedTensor()
    tensor = managed.dl_tensor
    tensor.data = ptr
    tensor.device = _DLDevice(device[0], device[1])
    tensor.ndim = len(shape)
    tensor.dtype = _DLDataType(_DL_CODES[dtype.kind], dtype.itemsize * 8, 1)
    tensor.shape = ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.POINTER(ctypes.c_int64)()
    tensor.byte_offset = 0
    key = next(_export_ids)
    managed.manager_ctx = key
    managed.deleter = _delete_export
    with _export_lock:
        _exports[key] = (managed, shape_array, owner)
    return _capsule_new(ctypes.addressof(managed), _CAPSULE_NAME, _DESTROY_ADDRESS)


_DESTROY_ADDRESS = ctypes.cast(_destroy_capsule, ctypes.c_void_p).value


def live_exports() -> int:
    """DLPack exports whose consumer has not released them yet (tests, leak checks)."""
    with _export_lock:
        return len(_exports)
