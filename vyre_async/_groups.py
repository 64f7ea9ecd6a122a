"""Unwrapping task-group exception groups that carry only deliberate errors.

anyio's task groups wrap what their tasks raise in an ``ExceptionGroup``. Where
several tasks do the same kind of work (one per device, one per pipeline stage)
and only VyreErrors come out, callers should see the VyreError itself, with its
message and fix, not a group.
"""

from __future__ import annotations

from .errors import VyreError


def leaves(error: BaseException) -> list[BaseException]:
    """The non-group exceptions inside ``error`` (itself when it is not a group)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def sole_vyre_error(group: BaseExceptionGroup[BaseException]) -> VyreError | None:
    """The first VyreError of ``group`` if every exception in it is one, else ``None``."""
    found = leaves(group)
    errors = [e for e in found if isinstance(e, VyreError)]
    return errors[0] if errors and len(errors) == len(found) else None
