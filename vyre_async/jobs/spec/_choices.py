"""The allowed values of a job file's field, for msgspec's "Invalid enum value" errors.

msgspec names the path (``$.job.backend``) and the value it refused, not the values
it would take; they are found by walking the spec's types along that path, so every
``Literal`` or ``enum.Enum`` field (and any added later) gets its choices listed.
"""

from __future__ import annotations

import enum
import re
import types
import typing
from typing import Annotated, Any, Literal

import msgspec

_STEP = re.compile(r"\.([A-Za-z_]\w*)|\[(\d+)\]")


def with_choices(message: str, root: type) -> str:
    """Add ``expected one of ...`` to a ``"$.path: Invalid enum value ..."`` message.

    Args:
        message: msgspec's message with its path first (``$.a.b: Invalid enum value 'x'``).
        root: The struct type the whole document decodes into.

    Returns:
        The message with the allowed values appended, or unchanged for other errors
        (or a path that does not lead to a choice).
    """
    path, sep, text = message.partition(": ")
    if not sep or not text.startswith("Invalid enum value") or not path.startswith("$"):
        return message
    field = type_at(root, path[1:])
    choices = _choices(field)
    if not choices:
        return message
    others = _other_kinds(field)
    return f"{message}; expected one of {', '.join(repr(c) for c in choices)}" + (
        f" (or {' or '.join(others)})" if others else ""
    )


def type_at(root: Any, path: str) -> Any:
    """The type a ``.field[index]...`` path (after ``$``; ``""`` is ``root``) leads to,
    or ``None``."""
    current: Any = root
    position = 0
    while position < len(path):
        match = _STEP.match(path, position)
        if match is None:
            return None
        position = match.end()
        field, index = match.groups()
        current = _step(current, field, index is not None)
        if current is None:
            return None
    return current


def members(tp: Any, *, keep_annotated: bool = False) -> list[Any]:
    """The types a field may hold: unions and Optional flattened, Annotated unwrapped
    (or kept, for its metadata)."""
    if typing.get_origin(tp) is Annotated and not keep_annotated:
        return members(typing.get_args(tp)[0])
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return [
            m for arg in typing.get_args(tp) for m in members(arg, keep_annotated=keep_annotated)
        ]
    return [tp]


def _step(tp: Any, field: str | None, is_index: bool) -> Any:
    for member in members(tp):
        if is_index and typing.get_origin(member) in (list, tuple):
            return typing.get_args(member)[0]
        if field is not None and isinstance(member, type) and issubclass(member, msgspec.Struct):
            for info in msgspec.structs.fields(member):
                if info.encode_name == field:
                    return info.type
    return None


_KIND_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}


def _other_kinds(tp: Any) -> list[str]:
    """What else than a choice the field takes (``devices``: an integer or a list)."""
    names: list[str] = []
    for member in members(tp):
        if typing.get_origin(member) is Literal or member is type(None):
            continue
        if isinstance(member, type) and issubclass(member, enum.Enum):
            continue
        origin = typing.get_origin(member) or member
        if origin in (list, tuple):
            names.append("a list")
        elif isinstance(origin, type) and issubclass(origin, msgspec.Struct):
            names.append("a table")
        else:
            names.append(_KIND_NAMES.get(origin, getattr(origin, "__name__", str(origin))))
    return names


def _choices(tp: Any) -> list[object]:
    """Every value a ``Literal`` or ``Enum`` member of ``tp`` allows, in source order."""
    found: list[object] = []
    for member in members(tp) if tp is not None else []:
        if typing.get_origin(member) is Literal:
            found += typing.get_args(member)
        elif isinstance(member, type) and issubclass(member, enum.Enum):
            found += [item.value for item in member]
    return found
