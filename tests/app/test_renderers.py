"""The API's msgspec renderer writes what django-ninja's json renderer wrote, value for value."""

from __future__ import annotations

import enum
import json
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.test import RequestFactory
from hypothesis import given
from hypothesis import strategies as st
from ninja.renderers import JSONRenderer

from reduction_app.renderers import MsgspecJSONRenderer

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


# Not a StrEnum: the str() of this older form is "Colour.RED", not its value.
class Colour(str, enum.Enum):  # noqa: UP042
    RED = "red"


class Size(enum.IntEnum):
    BIG = 3


def _render(renderer: JSONRenderer, data: Any) -> Any:
    request = RequestFactory().get("/")
    out = renderer.render(request, data, response_status=200)
    return json.loads(out)


def _both(data: Any) -> tuple[Any, Any]:
    return _render(MsgspecJSONRenderer(), data), _render(JSONRenderer(), data)


@given(JSON_VALUES | st.integers())
def test_render_plain_json_reads_back_as_json_wrote_it(value: Any) -> None:
    fast, slow = _both({"value": value, "items": [value, value]})
    assert fast == slow


def test_render_non_json_values_as_django_ninja_did() -> None:
    """Dates keep Django's milliseconds, enums json's reading, decimals and ids their text."""
    data = {
        "at": datetime(2026, 12, 3, 17, 44, 21, 123456, tzinfo=UTC),
        "colour": Colour.RED,
        "size": Size.BIG,
        "price": Decimal("1.10"),
        "id": uuid.UUID(int=7),
        "pair": (1, "a"),
        "nested": [{"at": datetime(2026, 1, 1, tzinfo=UTC)}],
    }
    fast, slow = _both(data)
    assert fast == slow
    assert fast["at"] == "2026-12-03T17:44:21.123Z"
    assert fast["colour"] == "red"
    assert fast["size"] == 3


def test_render_sends_utf8_not_escapes() -> None:
    request = RequestFactory().get("/")
    out = MsgspecJSONRenderer().render(request, {"t": "日本"}, response_status=200)
    assert out == '{"t":"日本"}'.encode()


def test_render_falls_back_to_json_where_msgspec_differs() -> None:
    """Lone surrogates, NaN and non-text keys are written by json."""
    renderer = MsgspecJSONRenderer()
    request = RequestFactory().get("/")
    for data in ({"t": "a\udc80b"}, {"x": float("nan")}, {1: "one"}):
        out = renderer.render(request, data, response_status=200)
        assert out == JSONRenderer().render(request, data, response_status=200)


def test_render_keeps_unchanged_containers() -> None:
    """Plain data is encoded as it is, without a copy (a whole conversation, at each call)."""
    from reduction_app.renderers import _plain

    data = {"messages": [{"role": "user", "content": "hi"}], "n": 1}
    assert _plain(data, JSONRenderer.encoder_class().default) is data
