"""What crosses the wire: answers and errors as JSON (the default) or msgpack.

A kind's answer is whatever its session call returns: an int (a count), a NumPy row
(levels, ranks, distances, a path), a tuple of rows (levels and parents) or a named
tuple of rows (a top-k result). :func:`to_wire` turns each into plain values without
naming a kind: numbers stay numbers, arrays become lists, named tuples objects with
their fields. JSON has no infinity or NaN, so msgspec writes those floats as
``null`` (shortest paths' unreachable vertices); msgpack keeps them.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import numpy as np

JSON = "application/json"
MSGPACK = "application/msgpack"
#: The media types a client may send a body as, or ask an answer in.
_MSGPACK_TYPES = ("application/msgpack", "application/x-msgpack", "application/vnd.msgpack")
#: Elements past which an answer is encoded in a worker thread, not on the event loop.
LARGE_ANSWER = 1 << 16

_json = msgspec.json.Encoder()
_msgpack = msgspec.msgpack.Encoder()


def is_msgpack(media_type: str | None) -> bool:
    """Whether a ``Content-Type`` or ``Accept`` header names msgpack."""
    return media_type is not None and any(t in media_type for t in _MSGPACK_TYPES)


def to_wire(answer: Any) -> Any:
    """``answer`` as plain numbers, lists and dicts (see the module docstring)."""
    if isinstance(answer, np.ndarray):
        return answer.tolist()
    if isinstance(answer, np.generic):
        return answer.item()
    if isinstance(answer, tuple):
        fields = getattr(answer, "_fields", None)
        if fields is not None:
            return {name: to_wire(value) for name, value in zip(fields, answer, strict=True)}
        return [to_wire(value) for value in answer]
    if isinstance(answer, list):
        return [to_wire(value) for value in answer]
    return answer


def size_of(answer: Any) -> int:
    """Elements an answer holds (arrays count their elements, other values 1)."""
    if isinstance(answer, np.ndarray):
        return int(answer.size)
    if isinstance(answer, tuple | list):
        return sum(size_of(value) for value in answer)
    return 1


def encode(payload: Any, msgpack: bool) -> bytes:
    """``payload`` (plain values) as msgpack or JSON bytes."""
    return _msgpack.encode(payload) if msgpack else _json.encode(payload)


async def encode_answer(key: str, answer: Any, msgpack: bool) -> bytes:
    """``{key: answer}`` encoded, in a worker thread when the answer is large."""
    if size_of(answer) < LARGE_ANSWER:
        return encode({key: to_wire(answer)}, msgpack)
    return await anyio.to_thread.run_sync(lambda: encode({key: to_wire(answer)}, msgpack))
