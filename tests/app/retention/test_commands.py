"""``manage.py purge [--older-than DAYS] [--workspace SLUG] [--dry-run]``, committing as
it does outside tests (so the content goes as each batch commits), on the local folder;
and ``manage.py workspace_retention SLUG [DAYS | forever]``."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from reduction_app.models import Conversation, Workspace
from reduction_app.workspaces.services import workspace_get_or_create
from tests.app.retention.support import conversation, counts, record
from tests.app.support import stored_files
from tests.conftest import REPO

pytestmark = pytest.mark.django_db(transaction=True)

_HEADING = re.compile(r"^(?P<what>.*), before (?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC:$")


def purge(*args: str) -> tuple[list[str], str]:
    out, err = StringIO(), StringIO()
    call_command("purge", *args, stdout=out, stderr=err)
    return out.getvalue().splitlines(), err.getvalue()


def heading(line: str, days: int) -> str:
    """The heading without its cutoff, once the cutoff is checked to be ``days`` ago."""
    match = _HEADING.match(line)
    assert match, line
    at = datetime.strptime(match["at"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    ago = timezone.now() - at
    assert timedelta(days=days) <= ago < timedelta(days=days, seconds=30)
    return match["what"]


@pytest.fixture
def alpha() -> Workspace:
    return workspace_get_or_create(name="alpha")


@pytest.fixture
def beta() -> Workspace:
    return workspace_get_or_create(name="beta")


def test_purge_older_than_deletes_in_every_workspace_and_says_what(
    alpha: Workspace, beta: Workspace, offload_dir: Path
) -> None:
    conversation(alpha, "old", "a" * 10, "b" * 20, days=40, messages=3)
    conversation(alpha, "new", "c" * 30, days=10)
    conversation(beta, "old", "d" * 40, days=31)
    record(beta, None, "e" * 50, days=60)
    lines, err = purge("--older-than", "30")
    assert [heading(lines[0], 30), *lines[1:]] == [
        "Deleted in all workspaces",
        "  conversations 2 (5 transcript messages), events 4, files 4, "
        "simulations 0 (0 sweep parts), trace records 0",
        "  stored files 4, 120 bytes freed",
    ]
    assert err == ""
    assert list(Conversation.objects.values_list("client_id", flat=True)) == ["new"]
    [left] = stored_files(offload_dir)
    assert left.read_text() == "c" * 30


def test_purge_dry_run_of_one_workspace_deletes_nothing(
    alpha: Workspace, beta: Workspace, offload_dir: Path
) -> None:
    conversation(alpha, "old", "a" * 10, "b" * 20, days=40)
    conversation(beta, "old", "d" * 40, days=40)
    before = (counts(alpha), counts(beta), stored_files(offload_dir))
    lines, _ = purge("--older-than", "30", "--workspace", "alpha", "--dry-run")
    assert [heading(lines[0], 30), *lines[1:]] == [
        "Would delete in workspace alpha",
        "  conversations 1 (2 transcript messages), events 2, files 2, "
        "simulations 0 (0 sweep parts), trace records 0",
        "  stored files 2, 30 bytes to free",
    ]
    assert (counts(alpha), counts(beta), stored_files(offload_dir)) == before


def test_purge_without_older_than_applies_each_workspace_retention(
    alpha: Workspace, beta: Workspace
) -> None:
    assert purge()[0] == [
        "No workspace has retention_days set: nothing to delete (--older-than DAYS deletes by age)."
    ]
    year = workspace_get_or_create(name="year")
    Workspace.objects.filter(slug="alpha").update(retention_days=30)
    Workspace.objects.filter(slug="year").update(retention_days=365)
    for each in (alpha, beta, year):
        conversation(each, "run", "same output", days=60)
    lines, _ = purge()
    assert [heading(lines[0], 30), lines[1], lines[2], heading(lines[3], 365), *lines[4:]] == [
        "Deleted in workspace alpha (30 days)",
        "  conversations 1 (2 transcript messages), events 1, files 1, "
        "simulations 0 (0 sweep parts), trace records 0",
        "  stored files 1, 11 bytes freed",
        "Deleted in workspace year (365 days)",
        "  conversations 0 (0 transcript messages), events 0, files 0, "
        "simulations 0 (0 sweep parts), trace records 0",
        "  stored files 0, 0 bytes freed",
    ]
    assert sorted(Conversation.objects.values_list("workspace__slug", flat=True)) == [
        "beta",
        "year",
    ]
    assert purge("--workspace", "beta")[0] == [
        "Workspace beta has no retention_days: it keeps everything."
    ]


def test_purge_says_when_the_storage_failed_to_remove_content(
    alpha: Workspace, offload_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.core.files.storage import FileSystemStorage

    def refuse(self: Any, name: str) -> None:
        raise PermissionError(name)

    conversation(alpha, "old", "a" * 10, days=40)
    monkeypatch.setattr(FileSystemStorage, "delete", refuse)
    lines, err = purge("--older-than", "30")
    assert lines[2] == "  stored files 0, 0 bytes freed"
    assert err == "  1 stored files could not be removed (logged; their rows are deleted)\n"
    assert (Conversation.objects.count(), len(stored_files(offload_dir))) == (0, 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than", "-1"], "Error: argument --older-than: days cannot be negative: '-1'"),
        (
            ["--older-than", "soon"],
            "Error: argument --older-than: not a whole number of days: 'soon'",
        ),
        (["--older-than", "999999999"], "--older-than 999999999 goes back too far"),
        (["--older-than", "1", "--workspace", "nope"], "workspace 'nope' not found"),
    ],
)
def test_purge_refuses_bad_input(args: list[str], message: str) -> None:
    with pytest.raises(CommandError) as raised:
        purge(*args)
    assert str(raised.value) == message


def test_purge_bad_input_exits_non_zero() -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "purge", "--older-than", "soon"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "manage.py purge: error: argument --older-than: not a whole number of days: 'soon'"
    )


def workspace_retention(*args: str) -> list[str]:
    out = StringIO()
    call_command("workspace_retention", *args, stdout=out)
    return out.getvalue().splitlines()


def test_workspace_retention_shows_and_sets_the_days(alpha: Workspace) -> None:
    assert workspace_retention("alpha") == ["Workspace alpha keeps its records forever."]
    assert workspace_retention("alpha", "30") == ["Workspace alpha keeps its records 30 days."]
    assert Workspace.objects.get(slug="alpha").retention_days == 30
    assert workspace_retention("alpha", "1") == ["Workspace alpha keeps its records 1 day."]
    assert workspace_retention("alpha", "forever") == ["Workspace alpha keeps its records forever."]
    assert Workspace.objects.get(slug="alpha").retention_days is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["alpha", "0"], "retention must be at least 1 day, not 0"),
        (["alpha", "a month"], "DAYS must be a whole number of days or 'forever', not 'a month'"),
        (["nope", "30"], "workspace 'nope' not found"),
    ],
)
def test_workspace_retention_refuses_bad_input(
    alpha: Workspace, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError) as raised:
        workspace_retention(*args)
    assert str(raised.value) == message
    assert Workspace.objects.get(slug="alpha").retention_days is None
