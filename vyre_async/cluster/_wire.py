"""What crosses between the job's driver and its Ray actors: msgspec-encoded bytes.

Ray moves the bytes; the job's own data (sources, counts, levels, ranks) never goes
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
    """What an actor computed for a block (one of the three arrays)."""

    counts: WireArray | None = None
    rows: WireArray | None = None
    ranks: WireArray | None = None


def encode_result(result: BlockResult) -> bytes:
    """A block's result as bytes for the driver."""

    def wire(array: np.ndarray | None) -> WireArray | None:
        return None if array is None else WireArray.of(array)

    reply = BlockReply(wire(result.counts), wire(result.rows), wire(result.ranks))
    return msgspec.msgpack.encode(reply)


def decode_result(data: bytes) -> BlockResult:
    """The driver's side of :func:`encode_result`."""
    reply = msgspec.msgpack.decode(data, type=BlockReply)

    def array(wire: WireArray | None) -> np.ndarray | None:
        return None if wire is None else wire.array()

    return BlockResult(counts=array(reply.counts), rows=array(reply.rows), ranks=array(reply.ranks))
