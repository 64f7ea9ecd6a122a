"""What crosses between the job's driver and its Ray actors: msgspec-encoded bytes.

Ray moves the bytes; the job's own data (sources and results of any kind) never goes
through pickle. Arrays travel as raw little-endian bytes with their dtype and shape.
An actor is created with an :class:`ActorJob`: what it needs of the job (each
workload's kind and parameters, the batching) and no more, so its constructor's
arguments stay small enough for Ray to carry inline, never in the object store.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from ..jobs import BatchingSection, BlockResult, JobSpec


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


class WireWorkload(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A workload as an actor runs it: its kind's name and parameters, not its sources."""

    kind: str
    params: dict[str, Any]


class ActorJob(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What an actor is created with (a few hundred bytes whatever the job's sources).

    Attributes:
        workloads: The job's workloads, in order (a block names one by index).
        batching: The job's ``[batching]``.
        graph_key: The graph's fingerprint, the key it is kept under in the
            cluster's :class:`~vyre_async.cluster.GraphStore`.
        run: The run's id; a graph its driver lent the store is given to this run's
            actors only.
    """

    workloads: list[WireWorkload]
    batching: BatchingSection
    graph_key: str
    run: str

    @classmethod
    def of(cls, spec: JobSpec, graph_key: str, run: str) -> ActorJob:
        """The actor's part of ``spec``."""
        workloads = [WireWorkload(w.kind, msgspec.to_builtins(w.params)) for w in spec.workload]
        return cls(workloads, spec.batching, graph_key, run)


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
