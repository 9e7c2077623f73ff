"""Hostile tool output on every dashboard page: what an agent's tools returned (and what
its client named things) is recorded through the REST API, then every page of
``reduction_app.urls`` is fetched, whole and as its htmx partial, and the hostile
strings may appear only escaped.

The pages are enumerated from the URL patterns: a new page without an entry in
:data:`PAGES` fails :func:`test_xss_every_page_is_visited`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from reduction_app import urls
from reduction_app.conversations.imports import recording_import_inline
from reduction_app.models import (
    ConfigProfile,
    Conversation,
    OffloadedFile,
    RecordingImport,
    Simulation,
    TelemetryGroup,
)
from reduction_app.prices.services import price_create
from reduction_app.workspaces.services import api_key_create, workspace_get_or_create
from tests.app.pages_support import member_client
from tests.app.support import ApiClient

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
JS_URL = "javascript:alert(1)"
HOSTILE = SCRIPT + BREAKOUT
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
"""``HOSTILE`` as Django's autoescape writes it (quotes as ``&quot;`` or ``&#x27;``)."""

# Markup a hostile string would make if it went out unescaped.
UNESCAPED = re.compile(
    r"<script>alert|<img src=x|\"><img|(?:href|src|action|formaction)\s*=\s*[\"']?\s*javascript:",
    re.I,
)


def recorded(client: Client) -> dict[str, Any]:
    """A workspace whose every recorded name and output is hostile, seen by ``client``'s
    user; what the pages' addresses need."""
    user = client.session.get("_auth_user_id")
    workspace = workspace_get_or_create(name="x " + HOSTILE)
    workspace.members.add(user)
    workspace_get_or_create(name="y " + HOSTILE).members.add(user)  # a switcher to show
    key, raw = api_key_create(workspace=workspace, name=HOSTILE)
    api = ApiClient(Client(), raw, key, workspace)
    conversation_id = "c " + HOSTILE
    truncated = api.post(
        "/truncate",
        {
            "config": {"max_length_for_trunc": 20},
            "tool_name": "t" + HOSTILE,
            "tool_call_id": "call" + HOSTILE,
            "result": (HOSTILE + "\n" + JS_URL + "\n") * 3,
            "conversation_id": conversation_id,
        },
    )
    assert truncated.status_code == HTTPStatus.OK, truncated.json()
    messages: list[dict[str, Any]] = [{"role": "user", "content": HOSTILE}]
    for n in range(3):
        call_id = f"c{n}{HOSTILE}"
        messages += [
            {
                "role": "assistant",
                "content": JS_URL,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": "ls" + HOSTILE,
                            "arguments": '{"p": "' + JS_URL + '"}',
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": (HOSTILE + "\n") * 40},
        ]
    messages.append({"role": "assistant", "content": "done " + HOSTILE})
    config = {"max_tokens_for_clear": 50, "clear_at_least_tokens": 0, "clear_exclude_tools": []}
    cleared = api.post(
        "/clear", {"config": config, "messages": messages, "conversation_id": conversation_id}
    )
    assert cleared.status_code == HTTPStatus.OK, cleared.json()
    assert cleared.json()["applied"] is True
    api.post("/conversations", {"conversation_id": JS_URL, "title": HOSTILE})
    Conversation.objects.filter(client_id=conversation_id).update(title=HOSTILE)
    made = api.post("/configs", {"name": "k" + HOSTILE, "config": config})
    assert made.status_code == HTTPStatus.CREATED, made.json()
    simulated = api.post(
        "/simulations",
        {
            "conversation_id": conversation_id,
            "configs": [{"name": "s" + HOSTILE, "config": config}, {"name": JS_URL}],
        },
    )
    assert simulated.status_code in (HTTPStatus.OK, HTTPStatus.CREATED), simulated.json()
    conversation = Conversation.objects.get(workspace=workspace, client_id=conversation_id)
    chat = [{"role": "user", "content": HOSTILE}, {"role": "assistant", "content": HOSTILE}]
    imported = recording_import_inline(
        workspace=workspace,
        files=[("i" + HOSTILE + ".json", json.dumps({"messages": chat}).encode())],
        fmt=None,
        replace=False,
    )
    failed = RecordingImport.objects.create(
        workspace=workspace, status="failed", progress_total=1, error=HOSTILE
    )
    totals = {"cost_usd": 0.5, "cost_with_recovery_usd": 0.5, "refetches": 0, "misses": 0}
    swept = Simulation.objects.create(
        workspace=workspace,
        conversation=conversation,
        kind="sweep",
        grid={"max_length_for_trunc": [200]},
        options={"pricing": "gpt-4o", "corpus": True},
        status="done",
        results={
            "runs": [HOSTILE],
            "baseline": {"name": "no reduction", "totals": {**totals, "cost_usd": 1.0}},
            "combinations": [
                {
                    "name": "s" + HOSTILE,
                    "config": {"max_length_for_trunc": 200, "read_file_tool_name": HOSTILE},
                    "totals": totals,
                    "cost_saved": 0.5,
                    "cost_saved_with_recovery": 0.5,
                    "pareto": True,
                }
            ],
        },
    )
    swept.conversations.set([conversation])
    TelemetryGroup.objects.create(
        workspace=workspace,
        key="session:" + HOSTILE,
        conversations=[conversation_id, JS_URL],
        error=HOSTILE,
    )
    # A name of the greatest length a price may have, as hostile as it fits.
    price = price_create(workspace=workspace, data={"name": HOSTILE[:64], "input": 1})
    return {
        "price": price,
        "swept": swept,
        "import": imported,
        "failed_import": failed,
        "workspace": workspace,
        "key": key,
        "conversation": conversation,
        "profile": ConfigProfile.objects.get(workspace=workspace),
        "simulation": Simulation.objects.get(workspace=workspace, kind="replay"),
        "file": OffloadedFile.objects.filter(workspace=workspace, phase="truncation").get(),
    }


Request = tuple[str, str, dict[str, Any]]
"""``(method, address, data)``."""


def _get(address: str, **query: Any) -> Request:
    return ("get", address, query)


PAGES: dict[str, Callable[[dict[str, Any]], list[Request]]] = {
    "login": lambda r: [_get(reverse("login"), next=JS_URL)],
    "logout": lambda r: [],  # visited last, by the test itself
    "workspace_switch": lambda r: [
        ("post", reverse("workspace_switch"), {"workspace": r["workspace"].slug, "next": JS_URL}),
        ("post", reverse("workspace_switch"), {"workspace": r["workspace"].slug, "next": HOSTILE}),
    ],
    "overview": lambda r: [_get(reverse("overview"))],
    "conversation_list": lambda r: [
        _get(reverse("conversation_list")),
        _get(reverse("conversation_list"), q=HOSTILE, format=HOSTILE),
    ],
    "conversation": lambda r: [
        _get(reverse("conversation", args=[r["conversation"].client_id])),
        _get(reverse("conversation", args=[JS_URL])),
        _get(reverse("conversation", args=[HOSTILE])),
    ],
    "conversation_message": lambda r: (
        [
            _get(reverse("conversation_message", args=[r["conversation"].client_id, n]))
            for n in (1, 2, 3)
        ]
        + [_get(reverse("conversation_message", args=[HOSTILE, 1]))]
    ),
    "event_list": lambda r: [
        _get(reverse("event_list")),
        _get(reverse("event_list"), tool=HOSTILE, conversation=HOSTILE, phase=HOSTILE),
    ],
    "file_list": lambda r: [
        _get(reverse("file_list")),
        _get(reverse("file_list"), tool=HOSTILE, conversation=HOSTILE, min_chars=HOSTILE),
    ],
    "file_view": lambda r: [
        _get(reverse("file_view"), path=r["file"].path),
        _get(reverse("file_view"), path=r["file"].path, q=HOSTILE),
        _get(reverse("file_view"), path=HOSTILE),
    ],
    "file_raw": lambda r: [],  # text/plain, checked by test_xss_raw_file_is_inert_text
    "configs": lambda r: [_get(reverse("configs"))],
    "config_new": lambda r: [
        _get(reverse("config_new")),
        ("post", reverse("config_new"), {"name": HOSTILE, "max_length_for_trunc": HOSTILE}),
    ],
    "config_edit": lambda r: [
        _get(reverse("config_edit", args=[r["profile"].pk])),
        ("post", reverse("config_edit", args=[r["profile"].pk]), {"name": "", "x": HOSTILE}),
    ],
    "config_versions": lambda r: [_get(reverse("config_versions", args=[r["profile"].pk]))],
    "config_delete": lambda r: [_get(reverse("config_delete", args=[r["profile"].pk]))],
    "prices": lambda r: [_get(reverse("prices"))],
    "price_new": lambda r: [
        _get(reverse("price_new")),
        ("post", reverse("price_new"), {"name": HOSTILE, "input": HOSTILE}),
    ],
    "price_edit": lambda r: [
        _get(reverse("price_edit", args=[r["price"].pk])),
        ("post", reverse("price_edit", args=[r["price"].pk]), {"name": "", "x": HOSTILE}),
    ],
    "price_delete": lambda r: [_get(reverse("price_delete", args=[r["price"].pk]))],
    "compare": lambda r: [
        _get(reverse("compare")),
        _get(
            reverse("compare"),
            conversation=r["conversation"].pk,
            config=[str(r["profile"].pk), "defaults"],
        ),
        _get(reverse("compare"), conversation=r["conversation"].pk, config=HOSTILE),
        _get(reverse("compare"), simulation=r["simulation"].pk),
    ],
    "tune": lambda r: [
        _get(reverse("tune")),
        _get(reverse("tune"), conversation=r["conversation"].pk),
        _get(reverse("tune"), conversation=r["conversation"].pk, max_tokens_for_clear=HOSTILE),
    ],
    "tune_save": lambda r: [
        ("post", reverse("tune_save"), {"conversation": r["conversation"].pk, "name": HOSTILE}),
    ],
    "imports": lambda r: [
        _get(reverse("imports")),
        ("post", reverse("imports"), {"format": HOSTILE, "replace": HOSTILE}),
    ],
    "recording_import": lambda r: [
        _get(reverse("recording_import", args=[r["import"].pk])),
        _get(reverse("recording_import", args=[r["failed_import"].pk])),
    ],
    "simulation_list": lambda r: [_get(reverse("simulation_list"))],
    "simulation": lambda r: [
        _get(reverse("simulation", args=[r["simulation"].pk])),
        _get(reverse("simulation", args=[r["swept"].pk])),
    ],
    "sweep": lambda r: [
        _get(reverse("sweep")),
        _get(reverse("sweep"), q=HOSTILE, source=HOSTILE, format=HOSTILE, scope=HOSTILE),
    ],
    "sweep_count": lambda r: [
        ("post", reverse("sweep_count"), {"max_tokens_for_clear": HOSTILE, "pricing": HOSTILE}),
    ],
    "sweep_start": lambda r: [
        ("post", reverse("sweep_start"), {"conversation": HOSTILE, "max_tokens_for_clear": JS_URL}),
        (
            "post",
            reverse("sweep_start"),
            {"scope": "filter", "max_length_for_trunc": "200", "pricing": HOSTILE},
        ),
    ],
    "sweep_recommend": lambda r: [
        ("post", reverse("sweep_recommend"), {"scope": "filter", "max_seconds": HOSTILE}),
    ],
    "point": lambda r: [_get(reverse("point", args=[r["swept"].pk, 1]))],
    "point_compare": lambda r: [
        ("post", reverse("point_compare", args=[r["swept"].pk, 1]), {"conversation": HOSTILE}),
    ],
    "point_save": lambda r: [
        ("post", reverse("point_save", args=[r["swept"].pk, 1]), {"name": HOSTILE}),
    ],
    "api_keys": lambda r: [_get(reverse("api_keys"))],
    "api_key_new": lambda r: [("post", reverse("api_key_new"), {"name": HOSTILE})],
    "api_key_revoke": lambda r: [_get(reverse("api_key_revoke", args=[r["key"].pk]))],
    "traced_sessions": lambda r: [
        _get(reverse("traced_sessions")),
        _get(reverse("traced_sessions"), failed="1", page=HOSTILE),
    ],
}


def assert_inert(body: str, where: str) -> None:
    found = UNESCAPED.search(body)
    assert found is None, f"{where}: unescaped {found.group(0)!r}" if found else ""


def test_xss_every_page_is_visited() -> None:
    names = {p.name for p in urls.urlpatterns if isinstance(p, URLPattern)}
    assert len(names) == len(urls.urlpatterns)
    assert set(PAGES) == names


def test_xss_hostile_records_are_escaped_on_every_page() -> None:
    client, _ = member_client()
    records = recorded(client)
    client.post(reverse("workspace_switch"), {"workspace": records["workspace"].slug})
    shown_escaped = set()
    visits = 0
    for name, requests in PAGES.items():
        for method, address, data in requests(records):
            for htmx in (False, True):
                headers = {"HX-Request": "true"} if htmx else {}
                response = getattr(client, method)(address, data, headers=headers)
                where = f"{name} {method.upper()} {address} {data} htmx={htmx}"
                visits += 1
                assert response.status_code < HTTPStatus.INTERNAL_SERVER_ERROR, where
                assert_inert(response.content.decode(), where)
                location = response.get("Location", "")
                assert not location.lower().startswith("javascript"), where
                if ESCAPED in response.content.decode():
                    shown_escaped.add(name)
    # The pages that show recorded names and output showed the hostile ones, escaped.
    assert shown_escaped >= {
        "overview",
        "conversation_list",
        "conversation",
        "conversation_message",
        "event_list",
        "file_list",
        "file_view",
        "configs",
        "config_edit",
        "config_versions",
        "config_delete",
        "prices",
        "price_new",
        "price_edit",
        "price_delete",
        "compare",
        "tune",
        "simulation_list",
        "simulation",
        "sweep",
        "point",
        "imports",
        "recording_import",
        "traced_sessions",
        "api_keys",
        "api_key_new",
        "api_key_revoke",
    }
    assert visits == 2 * sum(len(requests(records)) for requests in PAGES.values())
    response = client.post(reverse("logout"))
    assert response.status_code == HTTPStatus.FOUND
    assert_inert(response.content.decode(), "logout")


def test_xss_raw_file_is_inert_text() -> None:
    """The exact bytes, hostile markup included, but as a text attachment no browser
    renders or sniffs into HTML."""
    client, _ = member_client()
    records = recorded(client)
    client.post(reverse("workspace_switch"), {"workspace": records["workspace"].slug})
    response = client.get(reverse("file_raw"), {"path": records["file"].path})
    assert response.status_code == HTTPStatus.OK
    assert b"".join(response.streaming_content).startswith(HOSTILE.encode())  # type: ignore[attr-defined]
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"].startswith("attachment;")
    assert "script-src 'self'" in response["Content-Security-Policy"]
