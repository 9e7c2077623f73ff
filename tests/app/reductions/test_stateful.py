"""``/clear`` with ``previous_revision``: a client sends only its new messages and the Lab
continues the context it answered last. Every answer, rebuilt as the client rebuilds it,
must equal what the whole-context protocol answers for the same call, with the same
events and offloaded files, whether the context was warm in this process or rebuilt
from the database."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reduction_app.conversations.selectors import conversation_transcript
from reduction_app.models import (
    ContextRevision,
    Conversation,
    EventRecord,
    OffloadedFile,
    TranscriptMessage,
)
from reduction_app.reductions import contexts
from tests.app.support import ApiClient, bare, documented

pytestmark = pytest.mark.django_db

CONFIG = {"max_tokens_for_clear": 300, "clear_retention_suffix_limit": 1}


@pytest.fixture(autouse=True)
def _cold_start() -> Iterator[None]:
    contexts.forget()
    yield
    contexts.forget()


def _output(i: int) -> str:
    # Sizes vary so that some calls clear and some do not; non-ASCII and a lone
    # surrogate (bytes a tool printed that are not UTF-8) must survive the round trips.
    return f"line {i} é\udcff\n" * (5 + (i * 37) % 60)


def chat_round(i: int) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": "grep", "arguments": json.dumps({"q": i})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"call_{i}", "content": _output(i)},
    ]


def anthropic_round(i: int) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"step {i}"},
                {"type": "tool_use", "id": f"tu_{i}", "name": "grep", "input": {"q": i}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"tu_{i}", "content": _output(i)}],
        },
    ]


def responses_round(i: int) -> list[dict[str, Any]]:
    # Some rounds say something before their calls and make two calls: one engine
    # message is then several items, which from_index counts.
    items: list[dict[str, Any]] = []
    if i % 3 == 0:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"step {i}"}],
            }
        )
    calls = [f"fc_{i}", f"fc_{i}b"] if i % 3 == 0 else [f"fc_{i}"]
    for call in calls:
        items.append({"type": "function_call", "call_id": call, "name": "grep", "arguments": "{}"})
    for call in calls:
        items.append({"type": "function_call_output", "call_id": call, "output": _output(i)})
    return items


OPENING = {
    "openai_chat": [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}],
    "anthropic": [{"role": "user", "content": "go"}],
    "openai_responses": [{"role": "user", "content": "go"}],
}
ROUNDS: dict[str, Callable[[int], list[dict[str, Any]]]] = {
    "openai_chat": chat_round,
    "anthropic": anthropic_round,
    "openai_responses": responses_round,
}


def whole(api: ApiClient, fmt: str, cid: str, messages: list[Any], **extra: Any) -> Any:
    body = {"format": fmt, "conversation_id": cid, "config": CONFIG, "messages": messages}
    response = api.post("/clear", {**body, **extra})
    assert response.status_code == HTTPStatus.OK, response.content
    return response.json()


def continued(
    api: ApiClient, fmt: str, cid: str, revision: int, new: list[Any], **extra: Any
) -> Any:
    body = {
        "format": fmt,
        "conversation_id": cid,
        "config": CONFIG,
        "previous_revision": revision,
        "messages": new,
    }
    return api.post("/clear", {**body, **extra})


def latest_revision() -> int:
    return ContextRevision.objects.order_by("-revision").values_list("revision", flat=True)[0]


def files_of(cid: str) -> dict[str, str]:
    rows = OffloadedFile.objects.filter(conversation__client_id=cid)
    return dict(rows.values_list("path", "sha256"))


def events_of(cid: str) -> list[dict[str, Any]]:
    rows = EventRecord.objects.filter(conversation__client_id=cid).order_by("id")
    fields = ("phase", "kind", "call_id", "offload_path", "tokens_before", "tokens_after", "reason")
    return [dict(zip(fields, row, strict=True)) for row in rows.values_list(*fields)]


def unnamed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "conversation_id"} for e in bare(events)]


def run_both(api: ApiClient, fmt: str, calls: int, *, between: Callable[[], None] = lambda: None):
    """Drive one session through both protocols, call by call; check every answer."""
    system = {"system": "be brief"} if fmt == "anthropic" else {}
    opening = OPENING[fmt]
    first = whole(api, fmt, "whole", opening, **system)
    first_s = whole(api, fmt, "stateful", opening, **system)
    assert first["revision"] == first_s["revision"] == 1
    assert first["from_index"] == 0
    context_w, context_s, revision = first["messages"], first_s["messages"], 1
    cleared = 0
    for i in range(calls):
        new = ROUNDS[fmt](i)
        answer_w = whole(api, fmt, "whole", context_w + new, **system)
        between()
        response = continued(api, fmt, "stateful", revision, new)
        assert response.status_code == HTTPStatus.OK, response.content
        answer_s = response.json()
        assert answer_s["revision"] == revision + 1
        assert answer_s["from_index"] <= len(context_s)
        context_s = context_s[: answer_s["from_index"]] + answer_s["messages"]
        context_w = answer_w["messages"]
        assert context_s == context_w, f"call {i}"
        for key in ("applied", "tokens_before", "tokens_after"):
            assert answer_s[key] == answer_w[key], (i, key)
        assert unnamed(answer_s["events"]) == unnamed(answer_w["events"])
        cleared += answer_s["applied"]
        revision = answer_s["revision"]
        if calls >= 12 and i >= calls - 8:
            # Late in the session a call answers what it changed and its new messages,
            # never the context back from the first call it went through again.
            assert len(answer_s["messages"]) <= len(new) + 3, (i, answer_s["from_index"])
    assert cleared >= calls // 6 > 0
    assert files_of("stateful") == files_of("whole")
    assert events_of("stateful") == events_of("whole")
    transcripts = [
        conversation_transcript(conversation=Conversation.objects.get(client_id=cid))
        for cid in ("whole", "stateful")
    ]
    assert transcripts[0] == transcripts[1]
    return context_s, revision


@pytest.mark.parametrize("fmt", ["openai_chat", "anthropic", "openai_responses"])
def test_only_new_messages_give_the_whole_context_answer(api: ApiClient, fmt: str) -> None:
    run_both(api, fmt, 24)


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses"])
def test_a_context_rebuilt_from_the_database_answers_the_same(api: ApiClient, fmt: str) -> None:
    # As when another web process answered the last call: nothing warm here.
    run_both(api, fmt, 16, between=contexts.forget)


class Processes:
    """Several web processes' warm contexts, one answering each call in turn: each holds
    a context some revisions behind, which it catches up with before answering."""

    def __init__(self, count: int, monkeypatch: pytest.MonkeyPatch) -> None:
        self.caches: list[Any] = [type(contexts._warm)() for _ in range(count)]
        self.turn = 0
        self.monkeypatch = monkeypatch
        self.switch()

    def switch(self) -> None:
        self.monkeypatch.setattr(contexts, "_warm", self.caches[self.turn % len(self.caches)])
        self.turn += 1


@pytest.mark.parametrize("fmt", ["openai_chat", "anthropic", "openai_responses"])
@pytest.mark.parametrize("count", [2, 3])
def test_processes_taking_turns_catch_up_and_answer_the_same(
    api: ApiClient, fmt: str, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    processes = Processes(count, monkeypatch)
    rebuilt: list[int] = []
    real = contexts.WarmContext.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        rebuilt.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(contexts.WarmContext, "__init__", counting)
    run_both(api, fmt, 20, between=processes.switch)
    # Each process builds its context once; after that it catches up.
    assert len(rebuilt) == count


def test_a_process_further_behind_than_the_revisions_kept_rebuilds(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ContextRevision, "KEPT", 3)
    slow = type(contexts._warm)()
    fast = type(contexts._warm)()
    calls = iter(range(100))

    def between() -> None:
        # The slow process answers every sixth call only: 5 revisions behind each time.
        monkeypatch.setattr(contexts, "_warm", slow if next(calls) % 6 == 0 else fast)

    run_both(api, "openai_chat", 18, between=between)
    assert ContextRevision.objects.filter(conversation__client_id="stateful").count() == 3


def test_a_whole_context_call_between_makes_the_next_rebuild(api: ApiClient) -> None:
    first = whole(api, "openai_chat", "c", OPENING["openai_chat"])
    one = continued(api, "openai_chat", "c", first["revision"], chat_round(1)).json()
    context = first["messages"][: one["from_index"]] + one["messages"]
    # The client sends its whole context once, changed (its first message reworded).
    changed = [{"role": "system", "content": "other"}, *context[1:], *chat_round(2)]
    two = whole(api, "openai_chat", "c", changed)
    three = continued(api, "openai_chat", "c", two["revision"], chat_round(3)).json()
    reference = whole(api, "openai_chat", "ref", two["messages"] + chat_round(3))
    assert two["messages"][: three["from_index"]] + three["messages"] == reference["messages"]


def test_no_warm_contexts_at_all_answers_the_same(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_WARM_CONTEXTS = 0
    run_both(api, "openai_chat", 12)


def test_only_new_messages_come_back_when_nothing_changes(api: ApiClient) -> None:
    opening = OPENING["openai_chat"]
    first = whole(api, "openai_chat", "c", opening, config={"max_tokens_for_clear": 10**6})
    new = chat_round(1)
    body = {"config": {"max_tokens_for_clear": 10**6}}
    answer = continued(api, "openai_chat", "c", first["revision"], new, **body).json()
    assert answer["from_index"] == len(opening)
    assert answer["messages"] == new
    assert answer["applied"] is False


def test_a_stale_revision_is_409_with_the_current_one_and_changes_nothing(
    api: ApiClient,
) -> None:
    context, revision = run_both(api, "openai_chat", 6)
    before = (
        conversation_transcript(conversation=Conversation.objects.get(client_id="stateful")),
        events_of("stateful"),
        files_of("stateful"),
    )
    response = continued(api, "openai_chat", "stateful", revision - 1, chat_round(50))
    assert response.status_code == HTTPStatus.CONFLICT
    body = response.json()
    assert body["revision"] == revision
    assert body["field"] == "previous_revision"
    assert "send the whole context" in body["detail"]
    after = (
        conversation_transcript(conversation=Conversation.objects.get(client_id="stateful")),
        events_of("stateful"),
        files_of("stateful"),
    )
    assert after == before
    # The client then sends its whole context, and may continue from that answer.
    again = whole(api, "openai_chat", "stateful", context + chat_round(50))
    assert again["revision"] == revision + 1
    follow = continued(api, "openai_chat", "stateful", again["revision"], chat_round(51))
    assert follow.status_code == HTTPStatus.OK
    assert follow.json()["revision"] == revision + 2


def test_a_conversation_with_no_context_is_409_with_no_revision(api: ApiClient) -> None:
    response = continued(api, "openai_chat", "never-seen", 1, chat_round(1))
    assert response.status_code == HTTPStatus.CONFLICT
    assert response.json()["revision"] is None
    assert not Conversation.objects.exists()


def test_the_same_revision_twice_answers_once(api: ApiClient) -> None:
    first = whole(api, "openai_chat", "c", OPENING["openai_chat"])
    ok = continued(api, "openai_chat", "c", first["revision"], chat_round(1))
    assert ok.status_code == HTTPStatus.OK
    # A retry of a call whose answer was lost is stale: the client sends its whole context.
    retry = continued(api, "openai_chat", "c", first["revision"], chat_round(1))
    assert retry.status_code == HTTPStatus.CONFLICT
    assert retry.json()["revision"] == ok.json()["revision"]


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"conversation_id": None}, "conversation_id"),
        ({"format": "anthropic", "system": "s"}, "system"),
        ({"format": "anthropic"}, "format"),
        ({"previous_revision": 0}, "previous_revision"),
    ],
)
def test_bad_continuations_are_422_naming_the_field(
    api: ApiClient, extra: dict[str, Any], field: str
) -> None:
    first = whole(api, "openai_chat", "c", OPENING["openai_chat"])
    body = {
        "format": "openai_chat",
        "conversation_id": "c",
        "previous_revision": first["revision"],
        "messages": [],
        **extra,
    }
    response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json()["field"] == field


def test_the_message_limit_counts_the_context_continued(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_MAX_MESSAGES = 6
    first = whole(api, "openai_chat", "c", OPENING["openai_chat"])
    ok = continued(api, "openai_chat", "c", first["revision"], chat_round(1)).json()
    over = continued(api, "openai_chat", "c", ok["revision"], [*chat_round(2), *chat_round(3)])
    assert over.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert "REDUCTION_MAX_MESSAGES" in over.json()["detail"]
    assert latest_revision() == ok["revision"]


def test_tools_left_out_are_the_conversation_s(api: ApiClient) -> None:
    tool = {
        "type": "function",
        "function": {"name": "grep", "description": "Search " * 40, "parameters": {}},
    }
    opening = OPENING["openai_chat"]
    first = whole(api, "openai_chat", "w", opening, tools=[tool])
    whole(api, "openai_chat", "s", opening, tools=[tool])
    answer_w = whole(api, "openai_chat", "w", first["messages"] + chat_round(1), tools=[tool])
    answer_s = continued(api, "openai_chat", "s", 1, chat_round(1)).json()
    assert answer_s["tokens_before"] == answer_w["tokens_before"]


def test_a_failed_continuation_leaves_the_context_as_it_was(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The storage fails while the call offloads: 503, nothing recorded, the revision
    stands, and the same call sent again is answered as if the first never happened."""
    from reduction_app.records import storage

    first = whole(api, "openai_chat", "c", OPENING["openai_chat"])
    context, revision = first["messages"], first["revision"]
    for i in range(4):
        answer = continued(api, "openai_chat", "c", revision, chat_round(i)).json()
        context = context[: answer["from_index"]] + answer["messages"]
        revision = answer["revision"]
    rows = (EventRecord.objects.count(), OffloadedFile.objects.count())
    transcript = conversation_transcript(conversation=Conversation.objects.get())
    real_save = storage.DjangoStorageBackend._save

    def failing(self: Any, staged: Any) -> bool:
        raise OSError("disk gone")

    monkeypatch.setattr(storage.DjangoStorageBackend, "_save", failing)
    big = chat_round(4)
    big[1]["content"] = "x" * 5000
    failed = continued(api, "openai_chat", "c", revision, big)
    assert failed.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert (EventRecord.objects.count(), OffloadedFile.objects.count()) == rows
    assert conversation_transcript(conversation=Conversation.objects.get()) == transcript
    assert latest_revision() == revision
    monkeypatch.setattr(storage.DjangoStorageBackend, "_save", real_save)
    again = continued(api, "openai_chat", "c", revision, big)
    assert again.status_code == HTTPStatus.OK
    assert again.json()["applied"] is True


def test_a_warm_call_reads_no_more_rows_late_in_a_session_than_early(api: ApiClient) -> None:
    first = whole(api, "openai_chat", "c", OPENING["openai_chat"])
    revision = first["revision"]
    counts: dict[int, int] = {}
    for i in range(40):
        with CaptureQueriesContext(connection) as queries:
            answer = continued(api, "openai_chat", "c", revision, chat_round(i)).json()
        revision = answer["revision"]
        reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")]
        # The transcript is never read back once the context is warm (the first call
        # after a whole-context one rebuilds it).
        assert i == 0 or not any('"reduction_app_transcriptmessage"' in sql for sql in reads), reads
        counts[i] = len(queries.captured_queries)
    assert max(counts[i] for i in range(30, 40)) <= max(counts[i] for i in range(5, 15))
    assert TranscriptMessage.objects.count() == Conversation.objects.get().message_count


def test_the_answer_and_conflict_are_documented(api: ApiClient) -> None:
    assert HTTPStatus.CONFLICT in documented(api, "post", "/clear")
