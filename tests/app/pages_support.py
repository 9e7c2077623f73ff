"""Helpers of the Configs, Compare and Tune page tests: a signed-in member of a
workspace, and a real recorded conversation stored in it."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from django.contrib.auth.models import User
from django.test import Client
from django.test.html import Element, parse_html

from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import Conversation, Workspace
from reduction_app.workspaces.services import workspace_get_or_create
from tests.conftest import CONVERSATIONS, skip_without_recordings

PASSWORD = "correct horse battery"


@cache
def openhands_run(index: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """OpenHands run ``index`` as OpenAI chat messages and tools (the simulator's importer)."""
    from simulator.importers import openhands_to_openai

    skip_without_recordings()
    path = CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl"
    line = path.read_text().splitlines()[index]
    return openhands_to_openai(json.loads(line))


def record_conversation(
    workspace: Workspace, client_id: str = "ponyc-4595", title: str = "", index: int = 0
) -> Conversation:
    messages, tools = openhands_run(index)
    return conversation_upsert(
        workspace=workspace,
        client_id=client_id,
        message_format="openai_chat",
        transcript=json.loads(json.dumps(messages)),
        tools=json.loads(json.dumps(tools)),
        title=title,
    )


def member_client(name: str = "ada", workspace: str = "Demo") -> tuple[Client, Workspace]:
    user = User.objects.create_user(name, password=PASSWORD)
    ws = workspace_get_or_create(name=workspace, user=user)
    client = Client()
    client.force_login(user)
    return client, ws


def html(response: Any) -> str:
    return response.content.decode()


# A conversation whose truncation hides a name the agent types later ---------------------

HIDDEN_NAME = "hidden_config_value.yaml"
"""The name in the middle of the listing, which the agent's answer types."""
CUT_LISTING = {"max_length_for_trunc": 200, "skip_clear": True}
"""Truncation alone, at 200 characters: the listing keeps its first and last 100."""


def cut_listing(tool: str = "grep_repo") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """OpenAI chat messages and tools of two model calls. Call 1 runs ``tool``, whose
    1,000-odd character listing holds :data:`HIDDEN_NAME` only in its middle; call 2
    answers with that name. Under :data:`CUT_LISTING` the middle is cut and nothing else
    the model is sent holds the name, so call 2 (0-based: 1) misses the listing: 1 miss.
    With no reduction: none."""
    filler = "lorem ipsum " * 40
    listing = f"begin of listing\n{filler}\nneedle at {HIDDEN_NAME}\n{filler}\nend of listing"
    call = {"name": tool, "arguments": json.dumps({"pattern": "needle"})}
    messages = [
        {"role": "user", "content": "Find the config file."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": call}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": listing},
        # A comma, not a period, after the name: a period would join the string.
        {"role": "assistant", "content": f"The file is {HIDDEN_NAME}, as found."},
    ]
    tools = [
        {
            "type": "function",
            "function": {
                "name": tool,
                "description": "Search the repository.",
                "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}},
            },
        }
    ]
    return messages, tools


def cut_listing_conversation(
    workspace: Workspace, *, tool: str = "grep_repo", client_id: str = "cut-listing"
) -> Conversation:
    """:func:`cut_listing` stored in ``workspace``."""
    messages, tools = cut_listing(tool)
    return conversation_upsert(
        workspace=workspace,
        client_id=client_id,
        message_format="openai_chat",
        transcript=messages,
        tools=tools,
    )


# Pages by structure -----------------------------------------------------------------------


def parsed(response: Any) -> Element:
    """The page as Django's test HTML tree (text unescaped, whitespace normalised)."""
    return parse_html(html(response))


def elements(node: Element | str, tag: str, **attrs: str) -> list[Element]:
    """Every ``tag`` element under ``node`` (itself included) whose attributes include
    ``attrs`` (``class_`` for ``class``, matching one class among several)."""
    if isinstance(node, str):
        return []
    found = []
    if node.name == tag and all(_has(node, k.rstrip("_"), v) for k, v in attrs.items()):
        found.append(node)
    for child in node.children:
        found += elements(child, tag, **attrs)
    return found


def _has(node: Element, name: str, value: str) -> bool:
    have = dict(node.attributes).get(name.replace("_", "-"))
    if have is None:
        return False
    return value in have.split() if name == "class" else have == value


def text(node: Element | str) -> str:
    """The text of ``node``, its children's joined by single spaces."""
    if isinstance(node, str):
        return node
    return " ".join(t for t in (text(c) for c in node.children) if t)


def row_of(page: Element, table_class: str, name: str) -> Element:
    """The row of a ``table_class`` table whose heading cell starts with ``name``."""
    for table in elements(page, "table", class_=table_class):
        for row in elements(table, "tr"):
            heads = elements(row, "th", scope="row")
            if heads and text(heads[0]).startswith(name):
                return row
    raise AssertionError(f"no row {name!r} in a table.{table_class}")


def metric(row: Element, key: str) -> str:
    """The text of a row's ``data-metric=key`` cell (its value only, where it has one)."""
    (cell,) = elements(row, "td", data_metric=key)
    values = elements(cell, "span", class_="value")
    return text(values[0] if values else cell)
