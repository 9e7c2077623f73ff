"""The offload check: stored objects, file rows and the recorded quota usage agree, and
``manage.py offload_check`` says where they do not (exit status 1)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.core.management.base import CommandError

from reduction_app.models import OffloadedFile, Workspace
from reduction_app.records.integrity import offload_check
from reduction_app.records.storage import offload_storage, storage_name_for
from tests.app.support import ApiClient, truncate_over_20
from tests.offload_stores import OffloadStore

pytestmark = pytest.mark.django_db

LONG = "x" * 30
"""30 bytes: over the 20-character limit below, so offloaded whole."""


def truncate(api: ApiClient, result: str, call_id: str, conversation_id: str = "run-1") -> Any:
    response = truncate_over_20(api, result, call_id, conversation_id)
    assert response.status_code == 200, response.content
    return response.json()


def check_command(*args: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    try:
        call_command("offload_check", *args, stdout=out)
    except CommandError as error:
        return error.returncode, out.getvalue().splitlines()
    return 0, out.getvalue().splitlines()


def test_offload_check_finds_recorded_content_consistent(
    api: ApiClient, offloads: OffloadStore
) -> None:
    truncate(api, LONG, "call_1")
    truncate(api, LONG, "call_2")  # the same content under another path: stored once
    truncate(api, "y" * 25, "call_3")

    check = offload_check(workspace=api.workspace)

    assert (check.stored, check.named, check.usage_recorded, check.usage_stored) == (
        2,
        2,
        55,
        55,
    )
    assert check.consistent
    assert check_command("--workspace", api.workspace.slug) == (
        0,
        [
            f"{api.workspace.slug}: 2 stored, 2 named by rows; usage recorded 55 bytes, "
            "stored 55 bytes: consistent"
        ],
    )


def test_offload_check_reports_content_no_row_names(api: ApiClient, offloads: OffloadStore) -> None:
    """What a request that died between storing and recording would leave."""
    truncate(api, LONG, "call_1")
    left = storage_name_for(api.workspace.pk, "ab" + "0" * 62)
    offload_storage().save(left, ContentFile(b"left behind"))

    check = offload_check(workspace=api.workspace)

    assert check.unnamed == {left: 11}
    assert not check.consistent
    code, lines = check_command("--workspace", api.workspace.slug)
    assert code == 1
    assert lines[1:] == [
        f"{api.workspace.slug}: 1 stored, named by no row (11 bytes):",
        f"  {left}",
    ]


def test_offload_check_reports_rows_without_content_and_usage_apart(
    api: ApiClient, offloads: OffloadStore
) -> None:
    truncate(api, LONG, "call_1")
    row = OffloadedFile.objects.get()
    offload_storage().delete(row.storage_name)

    check = offload_check(workspace=api.workspace)

    assert check.missing == {row.storage_name: ["/tmp/trunc/call_1"]}
    assert (check.usage_recorded, check.usage_stored) == (30, 0)
    code, lines = check_command()
    assert code == 1
    assert lines[1:] == [
        f"{api.workspace.slug}: 1 named by rows, not stored:",
        f"  {row.storage_name} (/tmp/trunc/call_1)",
        f"{api.workspace.slug}: usage recorded 30 bytes differs from the 0 bytes stored "
        "for its rows",
    ]


def test_offload_check_keeps_workspaces_apart(api: ApiClient, other_api: ApiClient) -> None:
    truncate(api, LONG, "call_1")
    Workspace.objects.filter(pk=other_api.workspace.pk).update(offload_bytes=7)

    assert offload_check(workspace=api.workspace).consistent
    assert check_command("--workspace", api.workspace.slug)[0] == 0
    code, lines = check_command()
    assert code == 1
    assert lines[-1] == (
        f"{other_api.workspace.slug}: usage recorded 7 bytes differs from the 0 bytes stored "
        "for its rows"
    )


def test_offload_check_names_an_unknown_workspace() -> None:
    with pytest.raises(CommandError, match="no workspace 'nowhere'"):
        call_command("offload_check", "--workspace", "nowhere", stdout=io.StringIO())


def test_offload_check_counts_a_path_two_conversations_share_once(
    api: ApiClient, offloads: OffloadStore
) -> None:
    truncate(api, LONG, "call_1")
    truncate(api, LONG, "call_1", conversation_id="run-2")
    assert OffloadedFile.objects.count() == 2

    check = offload_check(workspace=api.workspace)
    assert (check.stored, check.named, check.usage_recorded, check.usage_stored) == (1, 1, 30, 30)
    assert check.consistent

    name = OffloadedFile.objects.values_list("storage_name", flat=True).first()
    offload_storage().delete(name)
    assert offload_check(workspace=api.workspace).missing == {name: ["/tmp/trunc/call_1"]}
