"""The registry of query kinds: every kind's unit, looked up by name.

Each kind's package registers its :class:`~._kind.QueryKind` when it is imported
(``register(...)`` in its ``__init__``), and :mod:`vyre_async.algorithms` imports
every kind's package: adding a kind is its folder plus one import line there.
Sessions, jobs and the Ray executor find kinds here, never by importing one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import ValidationError
from ._kind import QueryKind

__all__ = ["kind_names", "lookup", "query_kinds", "register"]

_KINDS: dict[str, QueryKind[Any]] = {}


def register(*kinds: QueryKind[Any]) -> None:
    """Register query kinds under their names (a kind's package does this on import).

    Raises:
        ValueError: A kind of that name is registered already, or a record field
            is declared with another type by an earlier kind.
    """
    for kind in kinds:
        if kind.name in _KINDS:
            raise ValueError(f"a query kind named {kind.name!r} is registered already")
        types = {name: t for other in _KINDS.values() for name, t in other.record_fields}
        for name, field_type in kind.record_fields:
            if types.get(name, field_type) != field_type:
                raise ValueError(
                    f"kind {kind.name!r} declares record field {name!r} as {field_type}, "
                    f"another kind as {types[name]}"
                )
        _KINDS[kind.name] = kind


def lookup(name: str) -> QueryKind[Any]:
    """The kind registered as ``name``.

    Raises:
        ValidationError: No such kind (the message lists the known ones).
    """
    try:
        return _KINDS[name]
    except KeyError:
        raise ValidationError(
            f"no query kind is named {name!r}; the kinds are {', '.join(sorted(_KINDS))}",
            fix="use one of the kinds listed.",
        ) from None


def query_kinds() -> Iterator[QueryKind[Any]]:
    """Every registered kind, in registration order."""
    return iter(list(_KINDS.values()))


def kind_names() -> tuple[str, ...]:
    """The registered kinds' names, in registration order."""
    return tuple(_KINDS)
