"""Every error of a job document, not only the first, each with its ``$.path``.

msgspec stops at the first error. Once it has refused a document, :func:`document_errors`
walks the decoded document (dicts, lists and scalars) against the spec's types as
msgspec describes them (:func:`msgspec.structs.fields`, a struct's config,
:func:`msgspec.inspect.type_info`) and collects every error:

- an unknown field, with the known name closest to it ("did you mean") or the known ones;
- a missing required field;
- a value msgspec refuses, checked by msgspec itself field by field, with the allowed
  values of a choice and, for a string with a ``msgspec.Meta(description=...)``, that
  rule in words instead of a regex;
- the rules across a struct's fields (its ``__post_init__``: one per line, each naming
  its field as ``.field: ...``), once the struct's own fields are right.

The walk names no field: it follows whatever structs, lists, unions and tagged unions
the spec is made of, so sections and fields added later are covered as they are.
msgspec stays the authority on what is valid: the walk runs only on a document msgspec
refused, and when it finds nothing, msgspec's own error is the one reported.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any

import msgspec

from ._choices import members, type_at, with_choices

#: Errors reported at most; a longer list ends with how many more there are.
MAX_ERRORS = 50
_AT = " - at `"


def document_errors(document: object, root: type[msgspec.Struct], first: str) -> list[str]:
    """Every error of ``document`` as a ``root``, each as ``"$.path: what is wrong"``.

    Args:
        document: The decoded file: dicts, lists and scalars.
        root: The struct type the whole document decodes into.
        first: msgspec's message for the document (its first error); reported when the
            walk finds none.

    Returns:
        At least one error, in document order; past :data:`MAX_ERRORS`, a last line
        says how many more there are.
    """
    errors: list[str] = []
    _walk(document, root, "$", errors)
    if not errors:
        errors = _located(first, "$", root, None)
    if len(errors) > MAX_ERRORS:
        more = len(errors) - MAX_ERRORS
        errors = [*errors[:MAX_ERRORS], f"... and {more} more error(s)"]
    return errors


def _walk(value: object, tp: Any, path: str, errors: list[str]) -> None:
    """Collect the errors of ``value``, meant as a ``tp``, found at ``path``."""
    structs = [m for m in members(tp) if _is_struct(m)]
    if isinstance(value, dict) and structs:
        chosen = _chosen_struct(value, structs, path, errors)
        if chosen is not None:
            _walk_struct(value, chosen, path, errors)
        return
    listed = _struct_list(tp) if isinstance(value, list) else None
    if isinstance(value, list) and listed is not None:
        _walk_list(value, *listed, path, errors)
        return
    try:  # no struct below it: msgspec checks the value whole
        msgspec.convert(value, tp)
    except msgspec.ValidationError as exc:
        errors.extend(_located(str(exc), path, tp, value))


def _walk_struct(
    value: dict[Any, Any], cls: type[msgspec.Struct], path: str, errors: list[str]
) -> None:
    fields = {info.encode_name: info for info in msgspec.structs.fields(cls)}
    config = cls.__struct_config__
    before = len(errors)
    for key, item in value.items():
        info = fields.get(key) if isinstance(key, str) else None
        if info is not None:
            _walk(item, info.type, f"{path}.{key}", errors)
        elif key != config.tag_field and config.forbid_unknown_fields:
            errors.append(f"{path}: {_unknown_field(key, list(fields))}")
    for name, info in fields.items():
        if info.required and name not in value:
            errors.append(f"{path}: Object missing required field `{name}`")
    if len(errors) == before:  # its own fields are right: now the rules across them
        try:
            msgspec.convert(value, cls)
        except msgspec.ValidationError as exc:
            errors.extend(_located(str(exc), path, cls, None))


def _walk_list(value: list[Any], member: Any, item: Any, path: str, errors: list[str]) -> None:
    info = msgspec.inspect.type_info(member)
    bounds = info.type if isinstance(info, msgspec.inspect.Metadata) else info
    if isinstance(bounds, msgspec.inspect.ListType):
        if bounds.min_length is not None and len(value) < bounds.min_length:
            errors.append(f"{path}: Expected `array` of length >= {bounds.min_length}")
            return
        if bounds.max_length is not None and len(value) > bounds.max_length:
            errors.append(f"{path}: Expected `array` of length <= {bounds.max_length}")
            return
    for index, element in enumerate(value):
        _walk(element, item, f"{path}[{index}]", errors)


def _located(message: str, path: str, tp: Any, value: object) -> list[str]:
    """msgspec's ``message`` about ``value`` (a ``tp`` at ``path``) as ``"$.path: what"``
    lines, explained.

    msgspec ends a message with `` - at `$...` `` below the value it was given; each line
    of a rule that starts with ``.field`` names a field below that place.
    """
    text, sep, where = message.rpartition(_AT)
    if not (sep and where.startswith("$") and where.endswith("`")):
        text, where = message, "$`"
    inner = where[1:-1]
    lines: list[str] = []
    for line in text.splitlines() or [text]:
        field, what = line.partition(": ")[::2] if line.startswith(".") else ("", line)
        below = inner + field
        lines.append(f"{path}{below}: {_explained(what, tp, below, _value_at(value, below))}")
    return lines


def _explained(what: str, tp: Any, below: str, value: object) -> str:
    """msgspec's ``what``, with a choice's values, or a string's rule in words."""
    what = with_choices(f"${below}: {what}", tp).partition(": ")[2]
    if what.startswith("Expected `str`") and ("regex" in what or "length" in what):
        rule = _description(type_at(tp, below))
        if rule is not None and isinstance(value, str):
            return f"{_short_repr(value)} is not {rule}"
        if rule is not None:
            return f"expected {rule}"
    return what


def _chosen_struct(
    value: dict[Any, Any], structs: list[type[msgspec.Struct]], path: str, errors: list[str]
) -> type[msgspec.Struct] | None:
    """The struct a table is meant as: the only one, or the one its tag names."""
    if len(structs) == 1:
        return structs[0]
    tag_field = structs[0].__struct_config__.tag_field
    tags = {cls.__struct_config__.tag: cls for cls in structs}
    choices = ", ".join(repr(tag) for tag in tags)
    if tag_field is None or tag_field not in value:
        errors.append(
            f"{path}: Object missing required field `{tag_field}`; expected one of {choices}"
        )
        return None
    chosen = tags.get(value[tag_field])
    if chosen is None:
        errors.append(
            f"{path}.{tag_field}: Invalid value {_short_repr(value[tag_field])}; "
            f"expected one of {choices}"
        )
    return chosen


def _unknown_field(key: object, known: list[str]) -> str:
    name = _short_repr(key)[1:-1] if isinstance(key, str) else _short_repr(key)
    text = f"Object contains unknown field `{name}`"
    import difflib  # only a file with an unknown field needs it

    close = difflib.get_close_matches(key, known, n=1) if isinstance(key, str) else []
    if close:
        return f"{text}; did you mean `{close[0]}`?"
    return f"{text}; the fields here are {', '.join(f'`{field}`' for field in known)}"


def _struct_list(tp: Any) -> tuple[Any, Any] | None:
    """``(member, item type)`` of the member of ``tp`` that is a list of structs."""
    for member in members(tp, keep_annotated=True):
        inner = typing.get_args(member)[0] if typing.get_origin(member) is Annotated else member
        if typing.get_origin(inner) is list:
            item = typing.get_args(inner)[0]
            if any(_is_struct(m) for m in members(item)):
                return member, item
    return None


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _description(tp: Any) -> str | None:
    """The ``msgspec.Meta(description=...)`` of ``tp``, or of a member of its union."""
    for member in members(tp, keep_annotated=True) if tp is not None else []:
        if typing.get_origin(member) is Annotated:
            for meta in typing.get_args(member)[1:]:
                if isinstance(meta, msgspec.Meta) and meta.description:
                    return meta.description
    return None


def _value_at(value: object, below: str) -> object:
    """The part of ``value`` at ``below`` (``"[3]"``, ``".a"``), or ``None``."""
    for step in below.replace("[", ".[").split(".")[1:]:
        if step.startswith("[") and isinstance(value, list):
            index = int(step[1:-1])
            value = value[index] if index < len(value) else None
        elif isinstance(value, dict):
            value = value.get(step)
        else:
            return None
    return value


def _short_repr(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"
