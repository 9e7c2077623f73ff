"""The clear phase never returns a conversation a provider would reject: after the
rewriter, the strategies and the post-process, an output that splits a call from its
result where the input did not raises PairingError; an input that was already unpaired
is left to behave as before. Exact cases, properties over random conversations in the
three wire formats, and the shipped recordings."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reduction_app.engine import ChatModelAgentState, InMemoryBackend
from reduction_app.engine._clear._pairing import (
    PairingProblem,
    pairing_problems,
    wire_pairing_problems,
)
from reduction_app.engine.blocks import AgenticMessage, UserInputText
from reduction_app.engine.errors import PairingError
from reduction_app.engine.formats import messages_to_anthropic, messages_to_responses
from reduction_app.engine.messages import Message
from simulator.importers import load_conversations
from simulator.transcript import model_calls
from tests.conftest import CONVERSATIONS, max_examples, needs_recordings
from tests.engine.clear_support import (
    agentic_call,
    agentic_results,
    agentic_text,
    assert_untouched,
    call_msg,
    middleware,
    snapshot,
)
from tests.engine.test_clear_properties import (
    Round,
    agentic_conversation,
    chat_conversation,
    rounds,
)

LOW = {"max_tokens_for_clear": 10, "backend": InMemoryBackend()}


def chat_run() -> list[Message]:
    return [
        Message.system("s"),
        Message.user("q" * 100),
        call_msg(("a", "grep")),
        Message.tool("A" * 200, "a"),
        call_msg(("b", "grep")),
        Message.tool("B" * 200, "b"),
    ]


def drop_results(msg: Any, results: list[Any]) -> list[Any]:
    """A rewriter that keeps the call and loses its results: a provider would refuse it."""
    return [msg]


# Exact cases -----------------------------------------------------------------------------


def test_clear_rewriter_dropping_a_result_raises_pairing_error() -> None:
    mw, events = middleware(clear_message_rewriter=drop_results, **LOW)
    s = ChatModelAgentState(messages=chat_run())
    snap = snapshot(s)
    with pytest.raises(PairingError) as info:
        mw.before_model_rewrite_state(s)
    assert str(info.value) == (
        "clear_message_rewriter split a tool call from its result: messages[2]: tool call 'a' "
        "(grep) has no result in the tool messages after it (before messages[3])"
    )
    assert info.value.step == "clear_message_rewriter"
    assert info.value.problems == (
        PairingProblem(
            2,
            "a",
            "tool call 'a' (grep) has no result in the tool messages after it (before messages[3])",
        ),
    )
    assert_untouched(s, snap)
    assert events == []


def test_clear_rewriter_dropping_a_call_raises_pairing_error_async() -> None:
    def drop_call(msg: Any, results: list[Any]) -> list[Any]:
        return results

    mw, _ = middleware(clear_message_rewriter=drop_call, **LOW)
    with pytest.raises(PairingError) as info:
        asyncio.run(mw.abefore_model_rewrite_state(ChatModelAgentState(messages=chat_run())))
    assert str(info.value) == (
        "clear_message_rewriter split a tool call from its result: messages[2]: tool message "
        "for call 'a' follows no assistant message with calls"
    )


def test_clear_rewriter_keeping_groups_whole_is_fine() -> None:
    """The reference's own uses: a group replaced by a reminder, or removed whole."""

    def reminder(msg: Any, results: list[Any]) -> list[Any]:
        return [Message.user("<system-reminder>grep ran</system-reminder>")]

    for rewriter in (reminder, lambda msg, results: []):
        mw, _ = middleware(clear_message_rewriter=rewriter, **LOW)
        out = mw.before_model_rewrite_state(ChatModelAgentState(messages=chat_run()))
        assert pairing_problems("openai_chat", out.messages) == []


def test_clear_rewriter_on_an_already_unpaired_input_keeps_its_behaviour() -> None:
    """The input already has a call with no result before a user message: the rewriter's
    output is not checked there, and the phase returns as before."""
    messages = [
        Message.system("s"),
        Message.user("q" * 100),
        call_msg(("a", "grep")),
        Message.user("never mind"),
        call_msg(("b", "grep")),
        Message.tool("B" * 200, "b"),
    ]
    mw, _ = middleware(clear_message_rewriter=drop_results, **LOW)
    out = mw.before_model_rewrite_state(ChatModelAgentState(messages=messages))
    assert [m.role for m in out.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]


def test_clear_post_process_breaking_pairing_raises() -> None:
    def post_process(state: ChatModelAgentState) -> None:
        assert isinstance(state.messages, list)
        del state.messages[3]

    mw, _ = middleware(clear_post_process=post_process, **LOW)
    with pytest.raises(PairingError) as info:
        mw.before_model_rewrite_state(ChatModelAgentState(messages=chat_run()))
    assert str(info.value) == (
        "clear_post_process split a tool call from its result: messages[2]: tool call 'a' "
        "(grep) has no result in the tool messages after it (before messages[3])"
    )


def test_clear_post_process_that_changes_nothing_structural_is_fine() -> None:
    def post_process(state: ChatModelAgentState) -> None:
        assert isinstance(state.messages, list)
        state.messages[1] = Message.user("shorter")

    mw, _ = middleware(clear_post_process=post_process, **LOW)
    out = mw.before_model_rewrite_state(ChatModelAgentState(messages=chat_run()))
    assert out.messages[1] == Message.user("shorter")


def test_clear_manifest_goes_before_a_pending_call() -> None:
    """Retention -1 keeps no round, so the manifest would go at the very end, after a call
    the model just made, between it and its result: it goes before that call instead."""
    messages = [*chat_run()[:4], call_msg(("b", "grep"))]
    mw, _ = middleware(clear_retention_suffix_limit=-1, clear_offload_manifest=True, **LOW)
    out = mw.before_model_rewrite_state(ChatModelAgentState(messages=messages))
    assert [m.role for m in out.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    assert out.messages[4].content.startswith("<offload-manifest>")
    assert out.messages[5].tool_calls == messages[4].tool_calls
    assert pairing_problems("openai_chat", out.messages) == []


def test_clear_manifest_goes_before_a_call_with_part_of_its_results() -> None:
    """A last group whose results are coming in one by one stays whole at the end too."""
    messages = [*chat_run()[:4], call_msg(("b", "grep"), ("c", "ls")), Message.tool("B" * 200, "b")]
    mw, _ = middleware(clear_retention_suffix_limit=-1, clear_offload_manifest=True, **LOW)
    out = mw.before_model_rewrite_state(ChatModelAgentState(messages=messages))
    assert [m.role for m in out.messages][-3:] == ["user", "assistant", "tool"]
    assert out.messages[-3].content.startswith("<offload-manifest>")


def test_clear_manifest_anthropic_keeps_results_next_to_their_call() -> None:
    messages = [
        agentic_text("system", "s"),
        agentic_text("user", "q" * 100),
        agentic_call(("t1", "grep")),
        agentic_results(("t1", "A" * 200)),
        agentic_call(("t2", "grep")),
        agentic_results(("t2", "B" * 200)),
    ]
    mw, _ = middleware(clear_offload_manifest=True, **LOW)
    out = mw.before_model_rewrite_state(ChatModelAgentState(messages=messages))
    assert [m.role for m in out.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
        "user",
    ]
    assert pairing_problems("anthropic", out.messages, allow_pending=False) == []


# Properties ------------------------------------------------------------------------------

SETTINGS = settings(max_examples=max_examples(60), deadline=None)


def _reminder(kind: str) -> Any:
    if kind == "chat":
        return Message.user("<system-reminder>tools ran</system-reminder>")
    text = UserInputText(text="<system-reminder>tools ran</system-reminder>")
    return AgenticMessage(role="user", content_blocks=(text,))


REWRITERS: dict[str, Callable[[str], Any]] = {
    "none": lambda kind: None,
    "keep": lambda kind: lambda msg, results: [msg, *results],
    "drop_group": lambda kind: lambda msg, results: [],
    "reminder": lambda kind: lambda msg, results: [_reminder(kind)],
    "drop_results": lambda kind: drop_results,
    "drop_call": lambda kind: lambda msg, results: results,
}
BREAKING = {"drop_results", "drop_call"}

CONFIGS = st.fixed_dictionaries(
    {
        "max_tokens_for_clear": st.integers(1, 60),
        "clear_retention_suffix_limit": st.sampled_from([-1, 0, 1, 2]),
        "clear_offload_manifest": st.booleans(),
        "clear_superseded": st.booleans(),
        "clear_digest_tokens": st.sampled_from([0, 0, 8]),
        "clear_at_least_tokens": st.sampled_from([0, 0, 20]),
    }
)


def _anthropic_rounds(rs: list[Round]) -> list[Round]:
    """The rounds with every round's results in one message, as Anthropic wants them."""
    return [Round(r.calls, r.order, [len(r.calls)], r.user_before, r.reply_after) for r in rs]


def _run(
    messages: list[Any], config: dict[str, Any], rewriter: str, kind: str
) -> tuple[list[Any] | None, PairingError | None]:
    mw, _ = middleware(
        InMemoryBackend(), clear_message_rewriter=REWRITERS[rewriter](kind), **config
    )
    s = ChatModelAgentState(messages=messages)
    snap = snapshot(s)
    try:
        out = mw.before_model_rewrite_state(s)
    except PairingError as exc:
        assert_untouched(s, snap)
        return None, exc
    return list(out.messages), None


def _check(fmt: str, messages: list[Any], config: dict[str, Any], rewriter: str) -> None:
    assert pairing_problems(fmt, messages) == []
    kind = "chat" if fmt == "openai_chat" else "agentic"
    out, error = _run(messages, config, rewriter, kind)
    if error is not None:
        # Only a rewriter that splits a group can have caused it (these inputs never end
        # on a pending call, so the manifest always sits before a call).
        assert rewriter in BREAKING
        assert error.step == "clear_message_rewriter"
        return
    assert out is not None
    assert pairing_problems(fmt, out, allow_pending=False) == []
    if fmt == "anthropic":
        system, wire = messages_to_anthropic(out)
        assert wire_pairing_problems(fmt, wire, system=system, allow_pending=False) == []
    elif fmt == "openai_responses":
        assert wire_pairing_problems(fmt, messages_to_responses(out), allow_pending=False) == []


@SETTINGS
@given(rs=rounds(), config=CONFIGS, rewriter=st.sampled_from(sorted(REWRITERS)))
def test_clear_pairing_properties_openai_chat(
    rs: list[Round], config: dict[str, Any], rewriter: str
) -> None:
    _check("openai_chat", chat_conversation(rs), config, rewriter)


@SETTINGS
@given(rs=rounds(), config=CONFIGS, rewriter=st.sampled_from(sorted(REWRITERS)))
def test_clear_pairing_properties_anthropic(
    rs: list[Round], config: dict[str, Any], rewriter: str
) -> None:
    _check("anthropic", agentic_conversation(_anthropic_rounds(rs)), config, rewriter)


@SETTINGS
@given(rs=rounds(), config=CONFIGS, rewriter=st.sampled_from(sorted(REWRITERS)))
def test_clear_pairing_properties_openai_responses(
    rs: list[Round], config: dict[str, Any], rewriter: str
) -> None:
    """Results spread over several messages: Responses pairing, not Anthropic's."""
    _check("openai_responses", agentic_conversation(rs), config, rewriter)


@SETTINGS
@given(rs=rounds(), config=CONFIGS, at=st.integers(0, 100))
def test_clear_pairing_post_process_dropping_a_message(
    rs: list[Round], config: dict[str, Any], at: int
) -> None:
    """A post-process that deletes one message: the output is paired, or the phase raised
    naming the post-process."""
    messages = chat_conversation(rs)

    def post_process(state: ChatModelAgentState) -> None:
        assert isinstance(state.messages, list)
        del state.messages[at % len(state.messages)]

    mw, _ = middleware(InMemoryBackend(), clear_post_process=post_process, **config)
    try:
        out = mw.before_model_rewrite_state(ChatModelAgentState(messages=messages))
    except PairingError as exc:
        assert exc.step == "clear_post_process"
        return
    assert pairing_problems("openai_chat", out.messages, allow_pending=False) == []


# The shipped recordings ------------------------------------------------------------------

RECORDINGS = [
    "claude-code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    "claude-code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "openhands-multi-swe-bench-llama4.jsonl",
    "openhands/fastjson2-2775-gpt-5.jsonl",
    "swe-agent/gpt-4o-test-repo-1c2844.traj",
    "swe-agent/gpt4-pydicom-1458.traj",
    "swe-agent/gpt4-test-repo-1c2844-old.traj",
    "swe-agent/gpt4-test-repo-i1.traj",
    "tau-bench-airline-gpt-4o.json",
    "tau2/airline-gpt-4.1-mini.json",
    "tau2/retail-gpt-4.1-mini.json",
    "tau2/telecom-gpt-4.1-mini.json",
]
"""The runs of the recordings folder, listed so that the tests are the same whether or not
the folder is there."""
NOT_READ = ("tau2/agent/", "mini-swe-agent/", "claude-code-long/")
"""Files of the folder left out here: the τ²-bench agent's tools and prompt, mini-swe-agent
trajectories (a format the importers do not know), and the long Claude Code sessions (too
long to replay a handful of times each here; some in a newer log format)."""
RECORDING_CONFIGS: dict[str, dict[str, Any]] = {
    "reference": {},
    "manifest": {"clear_offload_manifest": True},
    "superseded_digests": {"clear_superseded": True, "clear_digest_tokens": 40},
    "all_rounds": {"clear_retention_suffix_limit": -1, "clear_offload_manifest": True},
}


@needs_recordings
def test_recordings_are_all_found() -> None:
    found = [p.relative_to(CONVERSATIONS).as_posix() for p in CONVERSATIONS.rglob("*")]
    runs = [p for p in found if p.endswith((".json", ".jsonl", ".traj"))]
    assert sorted(p for p in runs if not p.startswith(NOT_READ)) == RECORDINGS


@needs_recordings
@pytest.mark.parametrize("recording", RECORDINGS)
def test_recordings_reduce_to_paired_conversations(recording: str) -> None:
    """Before a handful of model calls of each run (the context a model got: everything
    before its answer), every config's output keeps every call with its result."""
    for conversation in load_conversations(CONVERSATIONS / recording):
        messages = list(conversation.messages)
        fmt = conversation.format
        calls = model_calls(messages)
        picked = sorted({calls[len(calls) * k // 4] for k in range(4)} | {calls[-1]})
        for at in picked:
            context = messages[:at]
            assert pairing_problems(fmt, context, allow_pending=False) == []
            for config in RECORDING_CONFIGS.values():
                mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=500, **config)
                out = mw.before_model_rewrite_state(
                    ChatModelAgentState(messages=context, tool_infos=conversation.tools)
                )
                assert pairing_problems(fmt, out.messages, allow_pending=False) == []
