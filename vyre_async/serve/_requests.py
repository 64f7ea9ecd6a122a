"""A query's request body: one struct per registered kind, decoded with msgspec.

Each kind gets two bodies, made from its parameters struct when the app is made (so
a kind registered before then has its endpoints without any change here):

- one query, ``POST /v1/graphs/{graph}/{kind}``: ``{"source": 7, "params": {...},
  "priority": 0, "timeout": 0.5}`` (``source`` only for a kind whose queries have
  one);
- many queries of one kind and parameters, ``POST /v1/graphs/{graph}/{kind}/batch``:
  ``{"sources": [7, 8, 9], "params": {...}, ...}`` (kinds with sources only).

``params`` is the kind's own struct (its bounds included) and may be left out when
every field has a default. Unknown fields are refused. A body that does not decode
is a :class:`~vyre_async.errors.ValidationError` naming the place (``$.params.k``)
and the fields the kind takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, cast

import msgspec

from ..algorithms import Params, QueryKind, query_kinds
from ..errors import ValidationError

#: A vertex id: vertex ids are int32 and a graph has at most 2**31 - 1 vertices.
VertexId = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 2)]
Priority = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
Timeout = Annotated[float, msgspec.Meta(gt=0.0, le=86_400.0)]


class QueryBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What every query body has besides its source(s) and parameters."""

    priority: Priority = 0
    timeout: Timeout | None = None


def _defaults(unit: QueryKind[Any]) -> Params | None:
    """The kind's default parameters, or ``None`` when a field has no default."""
    try:
        return unit.params()
    except TypeError:
        return None


def _body_struct(unit: QueryKind[Any], *, many: bool) -> type[msgspec.Struct]:
    defaults = _defaults(unit)
    params: tuple[Any, ...] = (
        ("params", unit.params) if defaults is None else ("params", unit.params, defaults)
    )
    fields: list[tuple[Any, ...]] = [params]
    if many:
        fields.insert(0, ("sources", Annotated[list[VertexId], msgspec.Meta(min_length=1)]))
    elif unit.takes_sources:
        fields.insert(0, ("source", VertexId))
    suffix = "Batch" if many else "Query"
    return msgspec.defstruct(
        f"{unit.params.__name__.removesuffix('Params')}{suffix}",
        fields,
        bases=(QueryBody,),
        frozen=True,
        forbid_unknown_fields=True,
        kw_only=True,
    )


def _field_list(unit: QueryKind[Any]) -> str:
    parts = []
    for field in msgspec.structs.fields(unit.params):
        required = field.required
        parts.append(f"{field.name} (required)" if required else field.name)
    return ", ".join(parts) if parts else "none"


class KindBodies:
    """A kind's request bodies and their decoders, made once.

    Attributes:
        unit: The registered kind.
        one: The one-query body's struct.
        many: The batch body's struct (``None`` for a kind without sources).
    """

    def __init__(self, unit: QueryKind[Any]) -> None:
        self.unit = unit
        self.one = _body_struct(unit, many=False)
        self.many = _body_struct(unit, many=True) if unit.takes_sources else None
        self._decoders = {
            (False, False): msgspec.json.Decoder(self.one),
            (False, True): msgspec.msgpack.Decoder(self.one),
        }
        if self.many is not None:
            self._decoders[True, False] = msgspec.json.Decoder(self.many)
            self._decoders[True, True] = msgspec.msgpack.Decoder(self.many)
        source = '"source": <vertex>, ' if unit.takes_sources else ""
        self._fix_one = (
            f'send {{{source}"params": {{...}}}} with {unit.name!r} parameters '
            f"({_field_list(unit)}), and optionally priority and timeout."
        )
        self._fix_many = (
            f'send {{"sources": [<vertex>, ...], "params": {{...}}}} with {unit.name!r} '
            f"parameters ({_field_list(unit)}), and optionally priority and timeout."
        )

    def decode(self, body: bytes, *, many: bool, msgpack: bool) -> Any:
        """The body as the kind's one-query (or batch) struct.

        Raises:
            ValidationError: It is not JSON (msgpack), or not such a struct.
        """
        decoder = cast(
            "msgspec.json.Decoder[Any] | msgspec.msgpack.Decoder[Any]",
            self._decoders[many, msgpack],
        )
        fix = self._fix_many if many else self._fix_one
        try:
            return decoder.decode(body)
        except msgspec.ValidationError as exc:
            raise ValidationError(
                f"the body is not a {self.unit.name!r} query: {exc}", fix=fix
            ) from None
        except msgspec.DecodeError as exc:
            media = "msgpack" if msgpack else "JSON"
            raise ValidationError(f"the body is not valid {media}: {exc}", fix=fix) from None


def kind_bodies() -> Mapping[str, KindBodies]:
    """Every registered kind's bodies, by name (the kinds registered by now)."""
    return {unit.name: KindBodies(unit) for unit in query_kinds()}
