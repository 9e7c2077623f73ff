"""The API's JSON answers, encoded with msgspec.

django-ninja's ``json.dumps`` is most of the time of rendering a large engine answer
(benchmarks/README.md, "The REST API under load"). Answers stay value for value what
they were; whatever msgspec would write differently goes to ``json.dumps`` as before.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import msgspec
from django.http import HttpRequest
from ninja.renderers import JSONRenderer

__all__ = ["MsgspecJSONRenderer"]

_PLAIN = (str, int, bool, type(None))
_ENCODE = msgspec.json.Encoder()


class _NotPlain(Exception):
    """A value msgspec would write differently from ``json``: the answer takes json."""


class MsgspecJSONRenderer(JSONRenderer):
    """django-ninja's JSON renderer, through msgspec for plain JSON values."""

    def render(self, request: HttpRequest, data: Any, *, response_status: int) -> Any:
        default = self.encoder_class().default
        try:
            return _ENCODE.encode(_plain(data, default))
        except (_NotPlain, UnicodeEncodeError, OverflowError, msgspec.EncodeError):
            return super().render(request, data, response_status=response_status)


def _plain(value: Any, default: Any) -> Any:
    """``value`` with every non-JSON value made what ``default`` makes of it, and
    subclasses of JSON's types made the base type, as ``json`` writes them; containers
    are copied only where something inside them changed."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict:
        return _plain_dict(value, default)
    if kind is list:
        items = [_plain(item, default) for item in value]
        return value if all(map(operator.is_, items, value)) else items
    if kind is float:
        if not math.isfinite(value):
            raise _NotPlain  # json writes NaN and Infinity, msgspec null
        return value
    # The order json's encoder tries the types in.
    if isinstance(value, str):
        return str.__str__(value)  # a str enum's value, as json writes it
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return _plain(float.__float__(value), default)
    if isinstance(value, list | tuple):
        return [_plain(item, default) for item in value]
    if isinstance(value, dict):
        return _plain_dict(dict(value), default)
    # What json gives to the encoder's default: turn it into JSON, then look again.
    return _plain(default(value), default)


def _plain_dict(value: dict[Any, Any], default: Any) -> dict[str, Any]:
    changed: dict[str, Any] | None = None
    for key, item in value.items():
        if type(key) is not str:
            raise _NotPlain  # json writes a key 1 as "1" and True as "true"
        new = _plain(item, default)
        if new is not item:
            if changed is None:
                changed = dict(value)
            changed[key] = new
    return value if changed is None else changed
