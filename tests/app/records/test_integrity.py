"""The offload check: stored objects, file rows and the recorded quota usage agree, and
``manage.py offload_check`` says where they do not (exit status 1)."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.core.management.base import CommandError

from reduction_app.models import Conversation, OffloadedFile, Workspace
from reduction_app.records.integrity import Damage, FileRef, offload_check
from reduction_app.records.storage import offload_storage, storage_name_for
from tests.app.support import ApiClient, truncate_over_20
from tests.offload_stores import OffloadStore

pytestmark = pytest.mark.django_db

LONG = "x" * 30
"""30 bytes: over the 20-character limit below, so offloaded whole."""


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


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


def test_offload_check_names_damaged_content_with_the_files_that_point_at_it(
    api: ApiClient, offloads: OffloadStore
) -> None:
    """An emptied object (a write that stopped half-way): its size gives it away, its
    digest confirms it, and every conversation's row naming it is listed."""
    truncate(api, LONG, "call_1")
    truncate(api, LONG, "call_1", conversation_id="run-2")
    name = OffloadedFile.objects.values_list("storage_name", flat=True).first()
    offloads.put(name, b"")
    run_1, run_2 = (Conversation.objects.get(client_id=c).pk for c in ("run-1", "run-2"))

    check = offload_check(workspace=api.workspace)

    assert check.damaged == {
        name: Damage(
            size_recorded=30,
            size_found=0,
            sha256_recorded=sha256(LONG),
            sha256_found=sha256(""),
            files=(
                FileRef("/tmp/trunc/call_1", "run-1", run_1),
                FileRef("/tmp/trunc/call_1", "run-2", run_2),
            ),
        )
    }
    assert not check.consistent
    slug = api.workspace.slug
    assert check_command("--workspace", slug) == (
        1,
        [
            f"{slug}: 1 stored, 1 named by rows; usage recorded 30 bytes, stored 0 bytes",
            f"{slug}: 1 damaged, their bytes not those their rows recorded (offload_reclaim "
            "repairs each from a good copy where one exists):",
            f"  {name}: 0 bytes with SHA-256 {sha256('')}, recorded 30 bytes with SHA-256 "
            f"{sha256(LONG)}",
            f"    named by /tmp/trunc/call_1 (conversation 'run-1', #{run_1})",
            f"    named by /tmp/trunc/call_1 (conversation 'run-2', #{run_2})",
            f"{slug}: usage recorded 30 bytes differs from the 0 bytes stored for its rows",
        ],
    )


def test_offload_check_deep_finds_damage_of_the_right_size(
    api: ApiClient, offloads: OffloadStore
) -> None:
    truncate(api, LONG, "call_1", conversation_id=None)
    [name] = offloads.names()
    offloads.put(name, b"y" * 30)

    assert offload_check(workspace=api.workspace).consistent
    check = offload_check(workspace=api.workspace, deep=True)
    assert check.damaged[name].sha256_found == sha256("y" * 30)
    assert check.damaged[name].files == (FileRef("/tmp/trunc/call_1", None, None),)
    slug = api.workspace.slug
    assert check_command("--workspace", slug)[0] == 0
    code, lines = check_command("--workspace", slug, "--deep")
    assert code == 1
    assert lines == [
        f"{slug}: 1 stored, 1 named by rows; usage recorded 30 bytes, stored 30 bytes; "
        "SHA-256 of each checked",
        f"{slug}: 1 damaged, their bytes not those their rows recorded (offload_reclaim "
        "repairs each from a good copy where one exists):",
        f"  {name}: 30 bytes with SHA-256 {sha256('y' * 30)}, recorded 30 bytes with "
        f"SHA-256 {sha256(LONG)}",
        "    named by /tmp/trunc/call_1 (no conversation)",
    ]


def test_offload_check_takes_sizes_counted_in_characters_for_no_damage(
    api: ApiClient, offloads: OffloadStore
) -> None:
    """Rows recorded before sizes were counted in bytes hold the characters (0008_quotas):
    the digest says the content is whole."""
    text = "é" * 25  # 25 characters, 50 bytes
    truncate(api, text, "call_1")
    OffloadedFile.objects.update(size_bytes=25)
    Workspace.objects.filter(pk=api.workspace.pk).update(offload_bytes=25)

    check = offload_check(workspace=api.workspace, deep=False)
    assert check.damaged == {}
    assert (check.usage_recorded, check.usage_stored) == (25, 50)


def test_offload_check_counts_unfinished_writes_apart(api: ApiClient, offload_dir: Path) -> None:
    """A killed worker's temporary file is not content, nor a fault."""
    truncate(api, LONG, "call_1")
    [stored] = [p for p in offload_dir.rglob("*") if p.is_file()]
    (stored.parent / f".{stored.name}.0123456789ab.partial").write_bytes(b"xxx")

    check = offload_check(workspace=api.workspace)
    assert (check.stored, check.unnamed, check.damaged) == (1, {}, {})
    assert list(check.unfinished.values()) == [3]
    assert check.consistent
    assert check_command("--workspace", api.workspace.slug)[1][1:] == [
        f"{api.workspace.slug}: 1 unfinished writes (3 bytes): being written now, or left by "
        "workers killed while writing until offload_reclaim removes them"
    ]
