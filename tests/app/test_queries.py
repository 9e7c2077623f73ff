"""One row per value, whatever the rows that share it (``reduction_app.queries``)."""

from __future__ import annotations

from typing import Any

import pytest

from reduction_app.models import Conversation, OffloadedFile, Workspace
from reduction_app.queries import one_row_each
from reduction_app.workspaces.services import workspace_get_or_create

pytestmark = pytest.mark.django_db


def _file(workspace: Workspace, conversation: Conversation | None, path: str, sha: str) -> Any:
    return OffloadedFile(
        workspace=workspace,
        conversation=conversation,
        path=path,
        storage_name=f"ws{workspace.pk}/{sha[:2]}/{sha}.txt",
        size_chars=1,
        tokens=1,
        sha256=sha,
        phase="clear",
    )


def test_one_row_each_gives_one_row_of_each_value_held(
    workspace: Workspace, django_assert_num_queries: Any
) -> None:
    """30 conversations name /a, one names /b, none /c; another workspace's row of /c is
    not the workspace's."""
    conversations = Conversation.objects.bulk_create(
        Conversation(workspace=workspace, client_id=f"run-{n}", message_format="openai_chat")
        for n in range(30)
    )
    OffloadedFile.objects.bulk_create(
        [
            *(_file(workspace, c, "/a", "a" * 64) for c in conversations),
            _file(workspace, conversations[0], "/b", "b" * 64),
            _file(workspace_get_or_create(name="Other"), None, "/c", "c" * 64),
        ]
    )
    files = OffloadedFile.objects.filter(workspace=workspace)
    with django_assert_num_queries(1):
        [batch] = one_row_each(files, "path", ["/a", "/b", "/c"])
        found = sorted(batch.values_list("path", "sha256"))
    assert found == [("/a", "a" * 64), ("/b", "b" * 64)]


def test_one_row_each_batches_many_values(
    workspace: Workspace, django_assert_num_queries: Any
) -> None:
    """401 values: two queries of up to 400 look-ups each; values with quotes and
    percent signs are parameters like any other."""
    paths = [f"/p'{n}%s" for n in range(401)]
    OffloadedFile.objects.bulk_create(
        _file(workspace, None, p, f"{n:064x}") for n, p in enumerate(paths)
    )
    files = OffloadedFile.objects.filter(workspace=workspace)
    with django_assert_num_queries(2):
        found = {
            p
            for batch in one_row_each(files, "path", paths)
            for p in batch.values_list("path", flat=True)
        }
    assert found == set(paths)
    assert list(one_row_each(files, "path", [])) == []
