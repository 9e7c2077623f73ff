"""Helpers of the Django app's tests: clients that talk to the real URLs with a bearer
key, and the texts the engine writes, spelled out by hand."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any

from django.test import Client

from reduction_app import engine
from reduction_app.models import ApiKey, Workspace
from reduction_app.reductions.services import engine_session
from reduction_app.workspaces.services import api_key_create, workspace_get_or_create

API = "/api/v1"


@dataclass
class ApiClient:
    """Django's test client with a bearer key and JSON bodies."""

    client: Client
    raw_key: str
    key: ApiKey
    workspace: Workspace

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.raw_key}"}

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self.client.get(API + path, params or {}, headers=self.headers)

    def post(self, path: str, body: Any) -> Any:
        return self.client.post(
            API + path, json.dumps(body), content_type="application/json", headers=self.headers
        )

    def post_raw(self, path: str, data: bytes, content_type: str = "application/json") -> Any:
        return self.client.post(API + path, data, content_type=content_type, headers=self.headers)

    def put(self, path: str, body: Any) -> Any:
        return self.client.put(
            API + path, json.dumps(body), content_type="application/json", headers=self.headers
        )

    def delete(self, path: str) -> Any:
        return self.client.delete(API + path, headers=self.headers)


def grep_rounds(rounds: int, output: Callable[[int], str]) -> list[dict[str, Any]]:
    """OpenAI chat messages of ``rounds`` grep calls, the n-th answered with ``output(n)``,
    between a user's first message and a user's next one."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n in range(rounds):
        call = {"id": f"call_{n}", "type": "function"}
        call["function"] = {"name": "grep", "arguments": "{}"}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": output(n)})
    messages.append({"role": "user", "content": "next"})
    return messages


def make_api(name: str) -> ApiClient:
    workspace = workspace_get_or_create(name=name)
    key, raw = api_key_create(workspace=workspace, name=f"{name} key")
    return ApiClient(Client(), raw, key, workspace)


def truncate_over_20(
    api: ApiClient, result: str, call_id: str, conversation_id: str = "run-1"
) -> Any:
    """``POST /truncate`` of a grep result with a 20-character limit: a longer result is
    offloaded whole."""
    return api.post(
        "/truncate",
        {
            "config": {"max_length_for_trunc": 20},
            "tool_name": "grep",
            "tool_call_id": call_id,
            "result": result,
            "conversation_id": conversation_id,
        },
    )


def documented(api: ApiClient, method: str, path: str) -> set[HTTPStatus]:
    """The status codes the served OpenAPI document gives the operation at ``path``."""
    document = api.client.get(API + "/openapi.json").json()
    return {HTTPStatus(int(code)) for code in document["paths"][API + path][method]["responses"]}


def stored_files(folder: Path) -> list[Path]:
    """Every file under ``folder`` (the storage creates it on its first write)."""
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def error(detail: str, field: str | None = None) -> dict[str, Any]:
    return {"detail": detail, "field": field}


def trunc_notice(*, size: int, path: str, preview: int, first: str, last: str) -> str:
    """The English truncation notice, as the reference words it."""
    return (
        "<persisted-output>\n"
        f"Output too large ({size}). Full output saved to: {path}\n"
        f"Preview (first {preview}):\n{first}\n\n"
        f"Preview (last {preview}):\n{last}\n\n"
        "Use read_file to view\n"
        "</persisted-output>"
    )


def clear_placeholder(path: str) -> str:
    """The English placeholder of a cleared, offloaded tool result."""
    return (
        f"<persisted-output>Tool result saved to: {path}\nUse read_file to view</persisted-output>"
    )


EVENT_DEFAULTS: dict[str, Any] = {
    "tool_name": "",
    "call_id": "",
    "chars_before": 0,
    "chars_after": 0,
    "tokens_before": 0,
    "tokens_after": 0,
    "tokens_saved": 0,
    "offload_path": "",
    "streamed": False,
    "applied": False,
    "calls_cleared": 0,
    "reason": "",
    "threshold": 0,
    "strategy": "",
    "conversation_id": None,
    "config_id": None,
    "config_version": None,
}


def event(**fields: Any) -> dict[str, Any]:
    """An event as the API shows it, without its id and time (compare with :func:`bare`)."""
    return {**EVENT_DEFAULTS, **fields}


def bare(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events without ``id`` and ``created_at``, which a test cannot know beforehand."""
    return [{k: v for k, v in e.items() if k not in ("id", "created_at")} for e in events]


SMALL = {"max_length_for_trunc": 10}
"""A config that truncates anything over 10 characters."""


def offload(
    api: ApiClient,
    text: str,
    *,
    call_id: str = "call_1",
    tool: str = "grep",
    conversation: str | None = "run-1",
    **fields: Any,
) -> str:
    """Truncate ``text`` (over 10 characters) and return its offload path."""
    body = {
        "config": SMALL,
        "tool_name": tool,
        "tool_call_id": call_id,
        "result": text,
        "conversation_id": conversation,
        **fields,
    }
    response = api.post("/truncate", body)
    assert response.status_code == HTTPStatus.OK, response.json()
    path: str = response.json()["offload_path"]
    return path


def follow(api: ApiClient, path: str, **params: Any) -> list[list[Any]]:
    """Every page of a list, following ``next`` links from the first one."""
    pages = []
    response = api.get(path, {"page_size": 2, **params})
    while True:
        assert response.status_code == HTTPStatus.OK, response.json()
        body = response.json()
        pages.append(body["results"])
        if body["next"] is None:
            return pages
        response = api.client.get(body["next"], headers=api.headers)


def session_for(workspace: Workspace, **config: Any) -> Any:
    """An engine session of ``workspace`` under ``config`` (JSON fields)."""
    return engine_session(workspace=workspace, config_data=config, config_version=None)


def truncate_in(session: Any, text: str, call_id: str = "call_1") -> str:
    """Run a ``grep`` call returning ``text`` through the session's truncation phase."""
    ctx = engine.ToolContext(name="grep", call_id=call_id)
    out: str = session.middleware.wrap_invokable_tool_call(lambda _: text, ctx)("{}")
    return out
