"""The offload quota: a request whose new offloads would take its workspace over answers
429, records nothing and leaves no content in the storage."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest

from reduction_app.models import Conversation, EventRecord, OffloadedFile, Workspace
from reduction_app.workspaces.quotas import offload_usage
from tests.app.support import ApiClient, error, stored_files
from tests.app.support import truncate_over_20 as truncate

pytestmark = pytest.mark.django_db

TEXT_A = "0123456789abcdefghijKLMNO"
TEXT_B = "ABCDEFGHIJ0123456789klmno"
"""25 bytes each; a result over 20 characters is offloaded whole."""


def over_quota(usage: int, added: int, quota: int) -> dict[str, Any]:
    return error(
        f"offload quota exceeded: the workspace holds {usage} bytes of offloaded content and "
        f"this request would add {added}, over its quota of {quota} bytes; nothing was recorded"
    )


def test_quota_request_over_it_is_429_and_records_nothing(
    api: ApiClient, settings: Any, offload_dir: Path
) -> None:
    settings.REDUCTION_QUOTA_OFFLOAD_BYTES = 40
    assert truncate(api, TEXT_A, "call_1").status_code == HTTPStatus.OK
    files_before = stored_files(offload_dir)
    counts_before = (OffloadedFile.objects.count(), EventRecord.objects.count())

    response = truncate(api, TEXT_B, "call_2", conversation_id="run-2")

    assert response.status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert response.json() == over_quota(25, 25, 40)
    assert "Retry-After" not in response
    assert stored_files(offload_dir) == files_before
    assert (OffloadedFile.objects.count(), EventRecord.objects.count()) == counts_before
    assert list(Conversation.objects.values_list("client_id", flat=True)) == ["run-1"]
    assert held(api.workspace) == 25


def held(workspace: Workspace) -> int:
    """The usage the workspace keeps, after checking it against a count from the rows."""
    kept = Workspace.objects.get(pk=workspace.pk).offload_bytes
    assert kept == offload_usage(workspace=workspace)
    return kept


def test_quota_up_to_it_exactly_passes(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_QUOTA_OFFLOAD_BYTES = 50
    assert truncate(api, TEXT_A, "call_1").status_code == HTTPStatus.OK
    assert truncate(api, TEXT_B, "call_2").status_code == HTTPStatus.OK
    assert held(api.workspace) == 50


def test_quota_usage_is_kept_with_the_quota_off(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_QUOTA_OFFLOAD_BYTES = 0
    for n in range(3):
        assert truncate(api, f"{n}{TEXT_A}", f"call_{n}").status_code == HTTPStatus.OK
    assert held(api.workspace) == 78


def test_quota_deleting_a_conversation_gives_its_bytes_back(api: ApiClient, settings: Any) -> None:
    """Content still held under another conversation's path stays counted."""
    settings.REDUCTION_QUOTA_OFFLOAD_BYTES = 50
    assert truncate(api, TEXT_A, "call_1", conversation_id="run-1").status_code == HTTPStatus.OK
    assert truncate(api, TEXT_B, "call_2", conversation_id="run-1").status_code == HTTPStatus.OK
    assert truncate(api, TEXT_A, "call_3", conversation_id="run-2").status_code == HTTPStatus.OK
    assert held(api.workspace) == 50
    assert api.delete("/conversations/run-1").status_code == HTTPStatus.NO_CONTENT
    assert held(api.workspace) == 25
    # 26 bytes do not fit beside the 25 still held; 25 do.
    assert truncate(api, TEXT_B + "!", "call_4").status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert truncate(api, TEXT_B, "call_4").status_code == HTTPStatus.OK
    assert held(api.workspace) == 50


def test_quota_counts_content_held_twice_once(api: ApiClient, settings: Any) -> None:
    """The same content under another path is stored once, and counted once."""
    settings.REDUCTION_QUOTA_OFFLOAD_BYTES = 25
    assert truncate(api, TEXT_A, "call_1").status_code == HTTPStatus.OK
    assert truncate(api, TEXT_A, "call_2", conversation_id="run-2").status_code == HTTPStatus.OK
    assert OffloadedFile.objects.count() == 2
    assert held(api.workspace) == 25


def test_quota_counts_bytes_not_characters(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_QUOTA_OFFLOAD_BYTES = 40
    accented = "é" * 21  # 21 characters, 42 bytes
    response = truncate(api, accented, "call_1")
    assert response.status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert response.json() == over_quota(0, 42, 40)


def test_quota_of_the_workspace_overrides_the_setting(
    api: ApiClient, other_api: ApiClient, settings: Any
) -> None:
    settings.REDUCTION_QUOTA_OFFLOAD_BYTES = 30
    Workspace.objects.filter(pk=api.workspace.pk).update(offload_quota_bytes=0)
    for n in range(3):
        assert truncate(api, f"{n}{TEXT_A}", f"call_{n}").status_code == HTTPStatus.OK
    Workspace.objects.filter(pk=other_api.workspace.pk).update(offload_quota_bytes=10)
    response = truncate(other_api, TEXT_A, "call_1")
    assert response.status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert response.json() == over_quota(0, 25, 10)


def test_quota_is_per_workspace(api: ApiClient, other_api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_QUOTA_OFFLOAD_BYTES = 25
    assert truncate(api, TEXT_A, "call_1").status_code == HTTPStatus.OK
    assert truncate(other_api, TEXT_B, "call_1").status_code == HTTPStatus.OK
    assert truncate(api, TEXT_B, "call_2").status_code == HTTPStatus.TOO_MANY_REQUESTS


def test_quota_clear_over_it_is_429(api: ApiClient, settings: Any, offload_dir: Path) -> None:
    """The clear phase's offloads count as the truncation's do."""
    settings.REDUCTION_QUOTA_OFFLOAD_BYTES = 10
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n in range(3):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": f"{n}" * 400},
        ]
    config = {"max_tokens_for_clear": 10, "clear_at_least_tokens": 0, "clear_exclude_tools": []}
    response = api.post("/clear", {"config": config, "messages": messages})
    assert response.status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert response.json()["detail"].startswith("offload quota exceeded: the workspace holds 0 ")
    assert stored_files(offload_dir) == []
    assert EventRecord.objects.count() == 0
