"""No tool output and no API key in the logs: truncations, clears, reads, and the errors
around them, with every logger at DEBUG level and SQL run through Django's debug cursor
(what ``DJANGO_DEBUG=1`` does), captured from the root logger."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection

from reduction_app.workspaces.services import api_key_revoke
from tests.app.support import ApiClient

pytestmark = pytest.mark.django_db

OUTPUT = "SECRET-TOOL-OUTPUT-7f3a9c " * 8
"""A tool output no log line may hold, nor any part of it."""
MARK = "SECRET-TOOL-OUTPUT-7f3a9c"


class Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logs() -> Iterator[Everything]:
    """Every record any logger emits at DEBUG level and above; ``django.db.backends``
    keeps the level the settings give it."""
    handler = Everything()
    root = logging.getLogger()
    names = ["", "django", "django.request", "django.server", "ninja", "reduction_app"]
    names += [name for name in logging.root.manager.loggerDict if name.startswith("reduction")]
    levels = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    root.addHandler(handler)
    connection.force_debug_cursor = True
    try:
        yield handler
    finally:
        connection.force_debug_cursor = False
        root.removeHandler(handler)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def rendered(record: logging.LogRecord) -> str:
    """All a handler could write of ``record``: its message, arguments, traceback and
    extra attributes."""
    parts = [record.getMessage(), repr(record.args)]
    if record.exc_info:
        parts.append(logging.Formatter().formatException(record.exc_info))
    parts += [repr(value) for value in vars(record).values()]
    return "\n".join(parts)


def call(n: int) -> list[dict[str, Any]]:
    call_id = f"call_{n}"
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": OUTPUT * 20},
    ]


def test_logs_hold_no_tool_output_and_no_key(
    api: ApiClient, logs: Everything, settings: Any
) -> None:
    assert logging.getLogger("django.db.backends").getEffectiveLevel() == logging.INFO
    truncated = api.post(
        "/truncate",
        {
            "config": {"max_length_for_trunc": 20},
            "tool_name": "grep",
            "tool_call_id": "call_0",
            "result": OUTPUT,
            "conversation_id": "run-1",
        },
    )
    assert truncated.status_code == HTTPStatus.OK
    path = truncated.json()["offload_path"]
    messages = [{"role": "user", "content": "go"}, *call(1), *call(2), *call(3)]
    config = {"max_tokens_for_clear": 50, "clear_at_least_tokens": 0, "clear_exclude_tools": []}
    cleared = api.post(
        "/clear", {"config": config, "messages": messages, "conversation_id": "run-1"}
    )
    assert cleared.status_code == HTTPStatus.OK
    assert cleared.json()["applied"] is True
    assert api.get("/files/read", {"path": path}).status_code == HTTPStatus.OK
    assert api.get("/files/raw", {"path": path}).status_code == HTTPStatus.OK
    assert api.get("/conversations/run-1").status_code == HTTPStatus.OK
    # Errors, whose answers django.request logs (with the request, whose repr shows the
    # query string: paths and filters, never output; the key is in a header, never shown):
    # a bad body quoting the output, a missing file, the offload quota, the rate limit, a
    # revoked key.
    bad = api.post("/truncate", {"tool_name": OUTPUT, "result": OUTPUT, "extra": OUTPUT})
    assert bad.status_code == 422
    missing = api.get("/files/read", {"path": "/tmp/trunc/missing"})
    assert missing.status_code == HTTPStatus.NOT_FOUND
    settings.REDUCTION_QUOTA_OFFLOAD_BYTES = 1
    over = api.post(
        "/truncate",
        {
            "config": {"max_length_for_trunc": 20},
            "tool_name": "grep",
            "tool_call_id": "call_9",
            "result": MARK * 3,
        },
    )
    assert over.status_code == HTTPStatus.TOO_MANY_REQUESTS
    settings.REDUCTION_RATE_LIMIT = 1
    assert [api.get("/events").status_code for _ in range(2)] == [
        HTTPStatus.OK,
        HTTPStatus.TOO_MANY_REQUESTS,
    ]
    settings.REDUCTION_RATE_LIMIT = 0
    api_key_revoke(key=api.key)
    assert api.get("/events").status_code == HTTPStatus.UNAUTHORIZED

    texts = [rendered(record) for record in logs.records]
    assert [t for t in texts if MARK in t or api.raw_key in t] == []
    # The capture works: django.request logged each error answer (path only).
    warnings = [r.getMessage() for r in logs.records if r.name == "django.request"]
    assert warnings == [
        f"{HTTPStatus(422).phrase}: /api/v1/truncate",  # "Entity" before Python 3.13
        "Not Found: /api/v1/files/read",
        "Too Many Requests: /api/v1/truncate",
        "Too Many Requests: /api/v1/events",
        "Unauthorized: /api/v1/events",
    ]
