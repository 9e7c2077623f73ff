"""``manage.py seed_demo``: the demo workspace, made live through the engine."""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import django
import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db.models import Max, Min
from django.test import Client

from reduction_app.conversations.selectors import (
    conversation_get,
    conversation_transcript,
    recorded_conversation,
)
from reduction_app.demo import DEMO_SLUG, LIVE, SeedReport, demo_seed, demo_tree
from reduction_app.demo.specs import GUESTBOOK, JQUERY
from reduction_app.models import (
    ConfigProfile,
    Conversation,
    EventRecord,
    OffloadedFile,
    RecordingImport,
    Workspace,
)
from reduction_app.records.storage import offload_storage, read_stored
from simulator.corpus import SourceTree
from tests.app.pages_support import elements, parsed, text
from tests.conftest import CONVERSATIONS, needs_recordings

pytestmark = pytest.mark.django_db

PASSWORD = "a long demo password"
SMALL_LIVE = [s.client_id for s in LIVE if s.small]
OPENHANDS_ID = "openhands-codeactagent--ponylang__ponyc-4595--llama-4-maverick"
TAU_BENCH_ID = "tau-bench-agent--task-3-trial-0--tau-bench-airline-gpt-4o"
SMALL_IMPORTED = [OPENHANDS_ID, TAU_BENCH_ID]
NOW = datetime(2026, 3, 14, 15, 9, 26, tzinfo=UTC)
HOW = (
    "pass --recordings DIR or set REDUCTION_RECORDINGS_DIR to the folder of recorded agent "
    "runs (a copy of shared/data/conversations)"
)


def seed(*args: str) -> list[str]:
    out = StringIO()
    call_command("seed_demo", *args, stdout=out, stderr=out)
    return out.getvalue().splitlines()


def counts() -> dict[str, int]:
    workspace = Workspace.objects.get(slug=DEMO_SLUG)
    return {
        "conversations": workspace.conversations.count(),
        "configs": workspace.configs.count(),
        "events": workspace.events.count(),
        "files": workspace.files.count(),
        "members": workspace.members.count(),
    }


def stored(file: OffloadedFile) -> str:
    return read_stored(offload_storage(), file.storage_name)


def tool_calls(conversation: Conversation) -> dict[str, dict[str, Any]]:
    """Every tool call of the stored transcript, by id: ``{"name", "arguments"}``."""
    return {
        call["id"]: call["function"]
        for message in conversation_transcript(conversation=conversation)
        for call in message.get("tool_calls") or []
    }


@pytest.fixture(scope="module")
def tree() -> SourceTree:
    return demo_tree()


@needs_recordings
def test_seed_demo_creates_the_workspace_and_a_member_who_can_sign_in(client: Client) -> None:
    lines = seed("--small", "--user", "ada", "--password", PASSWORD)
    workspace = Workspace.objects.get(slug=DEMO_SLUG)
    user = User.objects.get(username="ada")
    assert (workspace.name, list(workspace.members.all())) == ("Demo", [user])
    assert (user.is_staff, user.is_superuser, user.is_active) == (False, False, True)
    assert client.login(username="ada", password=PASSWORD)
    assert lines[-2:] == [
        "Created user 'ada', a member of 'demo'.",
        f"Sign in at /accounts/login/ as ada / {PASSWORD}",
    ]
    assert sorted(workspace.conversations.values_list("client_id", flat=True)) == sorted(
        SMALL_LIVE + SMALL_IMPORTED
    )


def test_seed_demo_names_the_site_in_the_sign_in_line() -> None:
    """``make run`` passes where it serves, so the closing line is a link to open."""
    lines = seed("--small", "--user", "ada", "--password", PASSWORD, "--site", "http://[::1]:8765/")
    assert lines[-1] == f"Sign in at http://[::1]:8765/accounts/login/ as ada / {PASSWORD}"


@needs_recordings
def test_seed_demo_without_user_only_seeds() -> None:
    lines = seed("--small")
    assert Workspace.objects.get(slug=DEMO_SLUG).members.count() == 0
    assert not User.objects.exists()
    assert lines[-1].startswith("Seeded workspace 'demo' in ")
    assert "4 conversations, 3 configs, 4 config versions" in lines[-1]


@needs_recordings
def test_seed_demo_prints_progress_per_conversation() -> None:
    lines = seed("--small")
    assert [line.split(" (", 1)[0] for line in lines[:2]] == [
        "[1/2] demo-admin-jquery",
        "[2/2] demo-guestbook-xss",
    ]
    assert lines[0].startswith("[1/2] demo-admin-jquery (Defaults v1): ")
    assert lines[1].startswith("[2/2] demo-guestbook-xss (Tight (clear at 8k) v1): ")
    assert lines[2:5] == [
        f"imported {OPENHANDS_ID}: 47 messages, 4 tool schemas",
        f"imported {TAU_BENCH_ID}: 62 messages, 0 tool schemas",
        f"recordings: 1 OpenHands and 1 tau-bench runs imported from {CONVERSATIONS}",
    ]


def test_seed_demo_updates_an_existing_user_and_keeps_their_flags(client: Client) -> None:
    User.objects.create_user("root", password="old password 123", is_staff=True)
    lines = seed("--small", "--user", "root", "--password", PASSWORD)
    user = User.objects.get(username="root")
    assert user.is_staff
    assert client.login(username="root", password=PASSWORD)
    assert "Updated user 'root', a member of 'demo'." in lines


def test_seed_demo_adds_an_existing_user_without_changing_the_password(client: Client) -> None:
    User.objects.create_user("root", password="old password 123")
    seed("--small", "--user", "root")
    assert client.login(username="root", password="old password 123")
    assert Workspace.objects.get(slug=DEMO_SLUG).members.filter(username="root").exists()


def test_seed_demo_refuses_a_new_user_without_password_and_a_password_alone() -> None:
    with pytest.raises(CommandError, match=r"^user 'nobody' does not exist; give a password"):
        seed("--small", "--user", "nobody")
    with pytest.raises(CommandError, match=r"^--password needs --user$"):
        seed("--small", "--password", PASSWORD)


def test_seed_demo_warns_about_a_weak_password_and_goes_on(client: Client) -> None:
    lines = seed("--small", "--user", "ada", "--password", "ada")
    assert lines[0].startswith("Warning: a weak password for 'ada': ")
    assert client.login(username="ada", password="ada")


def test_seed_demo_makes_three_configs_one_with_two_versions() -> None:
    seed("--small")
    versions = {
        p.name: [(v.number, v.data["max_tokens_for_clear"]) for v in p.versions.order_by("number")]
        for p in ConfigProfile.objects.filter(workspace__slug=DEMO_SLUG)
    }
    assert versions == {
        "Cache-friendly (clear_at_least 4k)": [(1, 24_000), (2, 16_000)],
        "Defaults": [(1, 160_000)],
        "Tight (clear at 8k)": [(1, 8_000)],
    }


def test_seed_demo_records_both_phases_with_their_config() -> None:
    seed("--small")
    events = EventRecord.objects.filter(workspace__slug=DEMO_SLUG)
    xss = events.filter(conversation__client_id="demo-guestbook-xss")
    assert set(xss.values_list("phase", flat=True)) == {"truncation", "clear"}
    assert xss.filter(phase="clear", kind="summary", reason="applied").exists()
    assert set(xss.values_list("config_version__profile__name", flat=True)) == {
        "Tight (clear at 8k)"
    }
    jquery = events.filter(conversation__client_id="demo-admin-jquery")
    assert list(jquery.filter(phase="truncation").values_list("tool_name", flat=True)) == [
        "read_file"
    ]
    # Every model call ran the clear phase: one summary each, before every assistant message.
    conversation = Conversation.objects.get(client_id="demo-admin-jquery")
    assistants = sum(
        m["role"] == "assistant" for m in conversation_transcript(conversation=conversation)
    )
    assert jquery.filter(phase="clear", kind="summary").count() == assistants


def test_seed_demo_offloads_hold_exactly_what_the_real_tools_return(tree: SourceTree) -> None:
    seed("--small")
    files = OffloadedFile.objects.filter(workspace__slug=DEMO_SLUG).select_related("conversation")
    assert {f.phase for f in files} == {"truncation", "clear"}
    for file in files:
        assert file.conversation is not None
        call = tool_calls(file.conversation)[file.call_id]
        assert call["name"] == file.tool_name
        content = stored(file)
        assert content == tree.run_tool(call["name"], call["arguments"]), file.path
        assert (file.size_chars, file.sha256) == (
            len(content),
            hashlib.sha256(content.encode()).hexdigest(),
        )


def test_seed_demo_offloads_a_file_large_enough_to_page_through() -> None:
    seed("--small")
    real = Path(django.__path__[0]).parent / JQUERY
    expected = real.read_text(encoding="utf-8")
    conversation = Conversation.objects.get(client_id="demo-admin-jquery")
    (call_id,) = [
        i
        for i, c in tool_calls(conversation).items()
        if json.loads(c["arguments"])["path"] == JQUERY
    ]
    file = OffloadedFile.objects.get(conversation=conversation, call_id=call_id)
    assert (file.phase, file.path) == ("truncation", f"/tmp/trunc/{call_id}")
    assert stored(file) == expected
    assert stored(file).count("\n") == expected.count("\n") > 3_000


def test_seed_demo_keeps_a_script_tag_as_tool_output() -> None:
    seed("--small")
    payload = "<script>alert(1)</script>"
    conversation = Conversation.objects.get(client_id="demo-guestbook-xss")
    with_payload = [f for f in conversation.files.all() if payload in stored(f)]
    assert {f.tool_name for f in with_payload} == {"read_file", "grep"}
    reads = [f for f in with_payload if f.tool_name == "read_file"]
    source = Path(__file__).resolve().parents[2] / GUESTBOOK.split("/", 1)[1]
    assert stored(reads[0]) == source.read_text(encoding="utf-8")


@needs_recordings
def test_seed_demo_dates_rows_over_days_before_now() -> None:
    report = demo_seed(small=True, now=NOW)
    anchor = NOW.replace(second=0, microsecond=0)
    started = {
        c.client_id: c.created_at for c in Conversation.objects.filter(workspace=report.workspace)
    }
    assert started == {
        "demo-admin-jquery": anchor - timedelta(days=8.1),
        "demo-guestbook-xss": anchor - timedelta(days=5.2),
        OPENHANDS_ID: anchor - timedelta(days=9.8),
        TAU_BENCH_ID: anchor - timedelta(days=9.0),
    }
    for client_id in SMALL_LIVE:
        events = EventRecord.objects.filter(conversation__client_id=client_id)
        span = events.aggregate(first=Min("created_at"), last=Max("created_at"))
        assert started[client_id] < span["first"] < span["last"] < anchor
        # Calls take seconds, not days: the whole conversation fits in an hour.
        assert span["last"] - span["first"] < timedelta(hours=1)
        by_id = list(events.order_by("id").values_list("created_at", flat=True))
        assert by_id == sorted(by_id)
    for file in OffloadedFile.objects.filter(workspace=report.workspace):
        first = EventRecord.objects.filter(offload_path=file.path).aggregate(t=Min("created_at"))
        assert file.created_at == first["t"], file.path


def test_seed_demo_is_deterministic() -> None:
    def snapshot(report: SeedReport) -> list[tuple[Any, ...]]:
        return list(
            EventRecord.objects.filter(workspace=report.workspace)
            .order_by("id")
            .values_list(
                "conversation__client_id", "phase", "kind", "call_id", "tokens_saved", "created_at"
            )
        )

    first = snapshot(demo_seed(small=True, now=NOW))
    second = snapshot(demo_seed(small=True, reset=True, now=NOW))
    assert first == second


@needs_recordings
def test_seed_demo_twice_adds_nothing() -> None:
    seed("--small", "--user", "ada", "--password", PASSWORD)
    before = counts()
    lines = seed("--small", "--user", "ada", "--password", PASSWORD)
    assert counts() == before
    assert lines[:2] == [
        "[1/2] demo-admin-jquery: already there",
        "[2/2] demo-guestbook-xss: already there",
    ]
    assert lines[2] == (
        f"recordings: 0 OpenHands and 0 tau-bench runs imported from {CONVERSATIONS} "
        "(2 were there already)"
    )
    assert lines[3].startswith("Workspace 'demo' is already seeded (4 conversations, ")
    assert lines[3].endswith("; nothing added. Use --reset to seed it again.")


def test_seed_demo_reset_wipes_the_workspace_and_seeds_it_again() -> None:
    seed("--small", "--user", "ada", "--password", PASSWORD)
    fresh = counts()
    workspace = Workspace.objects.get(slug=DEMO_SLUG)
    workspace.conversations.get(client_id="demo-guestbook-xss").delete()
    Conversation.objects.create(workspace=workspace, client_id="mine")
    lines = seed("--small", "--reset")
    assert lines[0] == "Emptied workspace 'demo'."
    assert counts() == fresh
    assert not workspace.conversations.filter(client_id="mine").exists()
    assert workspace.members.filter(username="ada").exists()


@needs_recordings
def test_seed_demo_imports_recordings_ready_to_replay() -> None:
    seed("--small")
    workspace = Workspace.objects.get(slug=DEMO_SLUG)
    for client_id in SMALL_IMPORTED:
        conversation = conversation_get(workspace=workspace, client_id=client_id)
        assert conversation is not None
        assert not conversation.events.exists()
        recorded = recorded_conversation(conversation)
        assert len(recorded.messages) == conversation.message_count > 40


@needs_recordings
def test_seed_demo_imports_recordings_as_a_person_imports_them(client: Client) -> None:
    """Seeded recordings go through the import path: one import on the Import page, the
    recording format and badge, titles naming task, agent and model, and the Sweep page's
    "every imported recording" takes them."""
    seed("--small", "--user", "ada", "--password", PASSWORD)
    assert client.login(username="ada", password=PASSWORD)
    workspace = Workspace.objects.get(slug=DEMO_SLUG)
    rows = workspace.conversations.exclude(source="").order_by("client_id")
    runs = json.loads((CONVERSATIONS / "tau-bench-airline-gpt-4o.json").read_text("utf-8"))
    [run] = [r for r in runs if (r["task_id"], r["trial"]) == (3, 0)]
    opening = next(m["content"] for m in run["traj"] if m["role"] == "user")
    opening = " ".join(opening.split())
    if len(opening) > 70:  # cut to 70 characters, the last an ellipsis
        opening = opening[:69].rstrip() + "…"
    assert [(c.client_id, c.source, c.imported_from, c.title, c.omits) for c in rows] == [
        (
            OPENHANDS_ID,
            "openhands",
            "openhands-multi-swe-bench-llama4.jsonl",
            "ponylang__ponyc-4595 · OpenHands CodeActAgent · llama-4-maverick",
            [],  # this run recorded its system prompt and tool schemas
        ),
        (
            TAU_BENCH_ID,
            "tau_bench",
            "tau-bench-airline-gpt-4o.json",
            f"task 3, trial 0: {opening} · tau-bench agent",
            ["the tool schemas"],
        ),
    ]
    job = RecordingImport.objects.get(workspace=workspace)
    assert job.status == "done"
    assert [(f["filename"], f["format"]) for f in job.result] == [
        ("openhands-multi-swe-bench-llama4.jsonl", "openhands"),
        ("tau-bench-airline-gpt-4o.json", "tau_bench"),
    ]
    assert [c["conversation_id"] for f in job.result for c in f["conversations"]] == [
        OPENHANDS_ID,
        TAU_BENCH_ID,
    ]

    page = parsed(client.get(f"/conversations/{TAU_BENCH_ID}/"))
    [heading] = elements(page, "h1")
    assert [text(b) for b in elements(heading, "span", class_="badge")] == ["recording: tau_bench"]
    [note] = elements(page, "p", id="omits-note")
    assert text(note) == (
        "This τ-bench trajectory leaves out part of what the model was sent: the tool schemas "
        ". It kept no token counts of the provider's for each call, so how much that was is "
        "not known. Token counts here are of what the recording holds."
    )

    imports_page = parsed(client.get("/imports/"))
    assert elements(imports_page, "p", class_="empty") == []
    [table] = elements(imports_page, "table", class_="imports")
    [row] = elements(table, "tr")[1:]
    assert [text(c) for c in elements(row, "code")] == [
        "openhands-multi-swe-bench-llama4.jsonl",
        "tau-bench-airline-gpt-4o.json",
    ]

    sweep = parsed(client.get("/sweep/", {"scope": "recordings"}))
    boxes = [dict(box.attributes) for box in elements(sweep, "input", name="conversation")]
    ticked = [box["value"] for box in boxes if "checked" in box]
    assert sorted(int(v) for v in ticked) == sorted(c.pk for c in rows)


@needs_recordings
def test_seed_demo_keeps_recordings_seeded_under_their_old_ids() -> None:
    """A workspace seeded before seeding imported recordings keeps them, by their ids."""
    workspace = demo_seed(small=True).workspace
    workspace.conversations.exclude(source="").delete()
    RecordingImport.objects.all().delete()
    for old in ("openhands-ponylang__ponyc-4595", "tau-bench-airline-task3-trial0"):
        Conversation.objects.create(workspace=workspace, client_id=old)
    report = demo_seed(small=True)
    assert (report.imported, report.imported_before) == ({"OpenHands": 0, "tau-bench": 0}, 2)
    assert not RecordingImport.objects.exists()
    assert sorted(workspace.conversations.values_list("client_id", flat=True)) == sorted(
        [*SMALL_LIVE, "openhands-ponylang__ponyc-4595", "tau-bench-airline-task3-trial0"]
    )


@needs_recordings
def test_seed_demo_default_seeds_everything_in_time() -> None:
    report = demo_seed()
    assert report.seconds < 30
    assert report.counts["conversations"] == len(LIVE) + 3 + 5
    assert (report.recordings, report.imported) == (
        CONVERSATIONS,
        {"OpenHands": 3, "tau-bench": 5},
    )
    assert (report.counts["configs"], report.counts["config_versions"]) == (3, 4)
    live = Conversation.objects.filter(workspace=report.workspace, client_id__startswith="demo-")
    with_events = live.filter(events__isnull=False).distinct()
    assert with_events.count() == len(LIVE) - 1  # the unreduced recording has none
    tools = set(report.workspace.files.values_list("tool_name", flat=True))
    assert tools == {"read_file", "grep", "list_dir"}
    dates = report.workspace.events.aggregate(first=Min("created_at"), last=Max("created_at"))
    assert dates["last"] - dates["first"] > timedelta(days=8)


# Without the recordings folder ----------------------------------------------------------


def test_seed_demo_without_the_recordings_seeds_only_its_own(settings: Any, tmp_path: Path) -> None:
    """The recordings are not in the repository: without their folder the demo agent's
    conversations are seeded, and the output says where the recordings were looked for."""
    settings.REDUCTION_RECORDINGS_DIR = tmp_path / "none"
    lines = seed("--small")
    workspace = Workspace.objects.get(slug=DEMO_SLUG)
    assert sorted(workspace.conversations.values_list("client_id", flat=True)) == sorted(SMALL_LIVE)
    assert lines[2] == f"recordings: none imported; no recordings at {tmp_path / 'none'}: {HOW}"
    assert lines[3].startswith("Seeded workspace 'demo' in ")
    assert "2 conversations, 3 configs, 4 config versions" in lines[3]


def test_seed_demo_default_without_the_recordings_seeds_every_live_conversation(
    settings: Any, tmp_path: Path
) -> None:
    settings.REDUCTION_RECORDINGS_DIR = tmp_path / "none"
    report = demo_seed()
    assert report.counts["conversations"] == len(LIVE)
    assert (report.recordings, report.recordings_found, report.imported) == (
        tmp_path / "none",
        False,
        {},
    )
    assert (report.counts["configs"], report.counts["config_versions"]) == (3, 4)


def test_seed_demo_recordings_option_refuses_a_missing_folder(tmp_path: Path) -> None:
    """A folder asked for by name must be there (the setting's may be missing)."""
    with pytest.raises(CommandError) as info:
        seed("--small", "--recordings", str(tmp_path / "typo"))
    assert str(info.value) == f"no recordings at {tmp_path / 'typo'}: {HOW}"
    assert not Workspace.objects.filter(slug=DEMO_SLUG).exists()


@needs_recordings
def test_seed_demo_recordings_option_imports_from_that_folder(
    settings: Any, tmp_path: Path
) -> None:
    settings.REDUCTION_RECORDINGS_DIR = tmp_path / "none"
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("openhands-multi-swe-bench-llama4.jsonl", "tau-bench-airline-gpt-4o.json"):
        shutil.copy(CONVERSATIONS / name, folder / name)
    lines = seed("--small", "--recordings", str(folder))
    assert f"recordings: 1 OpenHands and 1 tau-bench runs imported from {folder}" in lines
    workspace = Workspace.objects.get(slug=DEMO_SLUG)
    assert sorted(workspace.conversations.values_list("client_id", flat=True)) == sorted(
        SMALL_LIVE + SMALL_IMPORTED
    )
