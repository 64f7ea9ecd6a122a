"""What crosses between the job's driver and its Ray actors: msgspec-encoded bytes.

Ray moves the bytes; the job's own data (sources and results of any kind) never goes
through pickle. Arrays travel as raw little-endian bytes with their dtype and shape.
"""

from __future__ import annotations

import msgspec
import numpy as np

from ..jobs import BlockResult


class WireArray(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A NumPy array as dtype string, shape and raw bytes."""

    dtype: str
    shape: tuple[int, ...]
    data: bytes

    @classmethod
    def of(cls, array: np.ndarray) -> WireArray:
        """Encode an array (made contiguous and little-endian)."""
        little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        return cls(little.dtype.str, tuple(little.shape), little.tobytes())

    def array(self) -> np.ndarray:
        """Decode into a new, writable array."""
        return np.frombuffer(self.data, dtype=np.dtype(self.dtype)).reshape(self.shape).copy()


class BlockRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One block: its workload's index in the job file and its sources."""

    workload: int
    sources: WireArray


class BlockReply(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What an actor computed for a block: its kind's result array, whatever the kind."""

    result: WireArray


def encode_result(result: BlockResult) -> bytes:
    """A block's result as bytes for the driver."""
    return msgspec.msgpack.encode(BlockReply(WireArray.of(result.result)))


def decode_result(data: bytes) -> BlockResult:
    """The driver's side of :func:`encode_result`."""
    return BlockResult(msgspec.msgpack.decode(data, type=BlockReply).result.array())
