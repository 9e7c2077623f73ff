"""The offload manifest (``clear_offload_manifest``, an opt-in beyond the reference;
docs/behaviour.md §4.13): its text, how it is recognised, and the clear pass leaving one.

Counts use the one-token-per-character counter of ``clear_support.chars`` (content plus
arguments; tool names are not counted). Every result is 400 characters and every
offloading placeholder naming ``/tmp/clear/cN`` is 94, so each cleared result frees 306.
A manifest is 173 characters (the wrapper and the first line, with their newlines) plus
each entry line and its newline.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from hypothesis import given

from reduction_app.engine import ChatModelAgentState, InMemoryBackend
from reduction_app.engine._clear._manifest import (
    is_offload_manifest,
    manifest_entries,
    manifest_text,
    with_manifest,
)
from reduction_app.engine._clear._phase import clear_range
from reduction_app.engine.access import tool_calls_of
from reduction_app.engine.blocks import AgenticMessage, UserInputText
from reduction_app.engine.config import ReductionConfig, ToolReductionConfig
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.messages import Message, MessagePart
from reduction_app.engine.notices import clear_placeholder, set_language, trunc_notice
from reduction_app.engine.tool_io import ClearResult, ToolDetail, ToolOutputPart, ToolResult
from tests.engine.clear_support import (
    DROPPED,
    agentic_call,
    agentic_results,
    agentic_text,
    applied_summary,
    assert_untouched,
    call_msg,
    chars,
    middleware,
    offload_placeholder,
    snapshot,
    state,
    summary,
)
from tests.engine.test_clear_properties import (
    CONFIGS,
    PATH_RE,
    SETTINGS,
    Round,
    agentic_conversation,
    chat_conversation,
    result_texts,
    rounds,
    shape,
)

FLAG = "_reduction_mw_processed"
A, B, C = "A" * 400, "B" * 400, "C" * 400
EN = (
    "These tool results were moved out of the context. To see one again, read its file "
    "with read_file(path) instead of re-running the tool:"
)
ZH = "以下工具结果已移出上下文。如需再次查看，请用 read_file(path) 读取其文件，不要重新运行工具："
LINE_C1 = '- grep({"q": "a"}) -> /tmp/clear/c1'
LINE_C2 = '- ls({"d": "b"}) -> /tmp/clear/c2'


def manifest(*lines: str, head: str = EN) -> str:
    """A manifest's text, spelled out."""
    return "\n".join(["<offload-manifest>", head, *lines, "</offload-manifest>"])


def flagged(msg: Any) -> Any:
    return dataclasses.replace(msg, extra={FLAG: True})


CHAT = [
    Message.user("q"),
    call_msg(("c1", "grep", '{"q": "a"}')),
    Message.tool(A, "c1"),
    call_msg(("c2", "ls", '{"d": "b"}')),
    Message.tool(B, "c2"),
    call_msg(("k", "ls", '{"d": "z"}')),
    Message.tool("kept", "k"),
]
"""1 + 10 + 400 + 10 + 400 + 10 + 4 = 835 tokens; the last round is retained."""
CHAT_CLEARED = [
    CHAT[0],
    flagged(CHAT[1]),
    Message.tool(offload_placeholder("c1"), "c1"),
    flagged(CHAT[3]),
    Message.tool(offload_placeholder("c2"), "c2"),
]
"""CHAT's first two rounds once a pass cleared them."""
AGENTIC = [
    agentic_text("user", "q"),
    agentic_call(("c1", "grep", '{"q": "a"}')),
    agentic_results(("c1", A)),
    agentic_call(("c2", "ls", '{"d": "b"}')),
    agentic_results(("c2", B)),
    agentic_call(("k", "ls", '{"d": "z"}')),
    agentic_results(("k", "kept")),
]
"""CHAT in content blocks: the same 835 tokens."""


def user_block(text: str) -> AgenticMessage:
    return AgenticMessage(role="user", content_blocks=(UserInputText(text=text),))


def tool_event(call_id: str, tool: str) -> ReductionEvent:
    return ReductionEvent(
        phase="clear",
        kind="tool",
        tool_name=tool,
        call_id=call_id,
        chars_before=400,
        chars_after=94,
        tokens_before=400,
        tokens_after=94,
        tokens_saved=306,
        offload_path=f"/tmp/clear/{call_id}",
    )


# --- the text ---------------------------------------------------------------------------------


def test_manifest_text_lists_results_oldest_first() -> None:
    entries = [("grep", '{"q": "a"}', "/tmp/clear/c1"), ("ls", '{"d": "b"}', "/tmp/clear/c2")]
    text = manifest_text(entries, read_tool_name="read_file")
    assert text == manifest(LINE_C1, LINE_C2)
    assert len(text) == 173 + 36 + 34 == 243


def test_manifest_text_names_the_configured_read_tool() -> None:
    text = manifest_text([("ls", "{}", "/x")], read_tool_name="open_offload")
    assert text.splitlines()[1] == EN.replace("read_file(path)", "open_offload(path)")


def test_manifest_text_arguments_on_one_line_cut_in_the_middle_to_80() -> None:
    long = '{"command": "view", "path": "/home/project/src/main/java/com/example/deep/Thing.java"}'
    assert len(long) == 86
    text = manifest_text(
        [("view", long, "/tmp/clear/c1"), ("sh", '{"cmd":\n  "ls   -la"}', "/tmp/clear/c2")],
        read_tool_name="read_file",
    )
    # The first 39 characters, an ellipsis, the last 40.
    cut = '{"command": "view", "path": "/home/proj…/main/java/com/example/deep/Thing.java"}'
    assert len(cut) == 80
    assert text.splitlines()[2:4] == [
        f"- view({cut}) -> /tmp/clear/c1",
        '- sh({"cmd": "ls -la"}) -> /tmp/clear/c2',
    ]


def test_manifest_text_lists_the_newest_30_and_counts_the_rest() -> None:
    entries = [("ls", f'{{"n": {i}}}', f"/tmp/clear/c{i}") for i in range(1, 36)]
    lines = manifest_text(entries, read_tool_name="read_file").splitlines()
    assert lines[2] == "(5 earlier results not listed)"
    assert lines[3:-1] == [f'- ls({{"n": {i}}}) -> /tmp/clear/c{i}' for i in range(6, 36)]
    assert len(lines) == 2 + 1 + 30 + 1
    thirty = manifest_text(entries[:30], read_tool_name="read_file").splitlines()
    assert len(thirty) == 2 + 30 + 1 and thirty[2].startswith("- ls")
    zh = manifest_text(entries, read_tool_name="read_file", language="zh").splitlines()
    assert zh[1:3] == [ZH, "（另有 5 条更早的结果未列出）"]


def test_manifest_text_follows_the_process_language() -> None:
    set_language("zh")
    try:
        text = manifest_text([("grep", '{"q": "a"}', "/tmp/clear/c1")], read_tool_name="read_file")
    finally:
        set_language("en")
    assert text == manifest(LINE_C1, head=ZH)
    assert manifest_text([], read_tool_name="read_file", language="en").splitlines()[1] == EN


# --- recognising a manifest message -------------------------------------------------------------


def test_is_manifest_only_whole_user_messages_in_either_language() -> None:
    text, zh = manifest(LINE_C1), manifest(LINE_C1, head=ZH)
    assert is_offload_manifest(Message.user(text)) and is_offload_manifest(Message.user(zh))
    assert is_offload_manifest(user_block(text)) and is_offload_manifest(user_block(zh))
    assert is_offload_manifest(
        Message(role="user", user_input_multi_content=(MessagePart(type="text", text=text),))
    )
    assert is_offload_manifest(Message.user(manifest(LINE_C1, head=EN.replace("read_file", "cat"))))
    for other in (
        Message.user(f"what does this mean?\n{text}"),
        Message.user(f"{text}\nthanks"),
        Message.user("<offload-manifest>\nmy own notes\n</offload-manifest>"),
        Message.user(manifest(head=EN)),  # no line at all: never written
        Message.system(text),
        Message.assistant(text),
        Message.tool(text, "c1"),
        AgenticMessage(
            role="user", content_blocks=(UserInputText(text=text), UserInputText(text="and"))
        ),
        agentic_text("assistant", text),
        agentic_results(("c1", text)),
    ):
        assert not is_offload_manifest(other), other


def test_manifest_entries_only_cleared_results_naming_a_file() -> None:
    """Dropped placeholders and whole results are not listed, nor a result with no call;
    a truncated result that was cleared names its truncation file; a digest is fine."""
    digest = clear_placeholder(file_path="/tmp/clear/c3", read_tool_name="read_file", digest="x")
    trunc = clear_placeholder(file_path="/tmp/trunc/c4", read_tool_name="read_file")
    msgs = [
        Message.tool(offload_placeholder("c0"), "c0"),  # no call before it
        call_msg(("c1", "a", "1"), ("c2", "b", "2")),
        Message.tool(DROPPED, "c1"),
        Message.tool(A, "c2"),
        call_msg(("c3", "c", "3"), ("c4", "d", "4")),
        Message.tool(trunc, "c4"),
        Message.tool(digest, "c3"),
    ]
    assert manifest_entries(msgs) == [("c", "3", "/tmp/clear/c3"), ("d", "4", "/tmp/trunc/c4")]


def test_with_manifest_replaces_every_old_one_and_leaves_mentions() -> None:
    mention = Message.user(f"see:\n{manifest(LINE_C1)}")
    msgs = [
        Message.user(manifest("- old")),
        *CHAT_CLEARED,
        mention,
        Message.user(manifest("- older", head=ZH)),
        *CHAT[5:],
    ]
    out = with_manifest(msgs, 8, read_tool_name="read_file")
    new = Message.user(manifest(LINE_C1, LINE_C2))
    assert out == [*CHAT_CLEARED, mention, new, *CHAT[5:]]
    assert with_manifest(msgs, 10, read_tool_name="read_file") == [
        *CHAT_CLEARED,
        mention,
        *CHAT[5:],
        new,
    ]
    assert with_manifest(CHAT, 5, read_tool_name="read_file") == CHAT  # nothing to list


# --- the clear pass ---------------------------------------------------------------------------


def test_clear_offload_manifest_chat_right_before_the_retained_round() -> None:
    backend = InMemoryBackend()
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=800, clear_offload_manifest=True
    )
    s = state(CHAT)
    snap = snapshot(s)
    out = mw.before_model_rewrite_state(s)
    assert_untouched(s, snap)
    assert list(out.messages) == [
        *CHAT_CLEARED,
        Message.user(manifest(LINE_C1, LINE_C2)),
        *CHAT[5:],
    ]
    assert backend.files == {"/tmp/clear/c1": A, "/tmp/clear/c2": B}
    # 835 - 2 * 306 = 223, plus the manifest's 243: no tool event of its own.
    assert events == [
        tool_event("c1", "grep"),
        tool_event("c2", "ls"),
        applied_summary(835, 466, 2, 800),
    ]


def test_clear_offload_manifest_agentic_is_a_user_text_block() -> None:
    mw, events = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=800,
        clear_offload_manifest=True,
    )
    out = mw.before_model_rewrite_state(state(AGENTIC))
    assert list(out.messages) == [
        AGENTIC[0],
        flagged(AGENTIC[1]),
        agentic_results(("c1", offload_placeholder("c1"))),
        flagged(AGENTIC[3]),
        agentic_results(("c2", offload_placeholder("c2"))),
        user_block(manifest(LINE_C1, LINE_C2)),
        *AGENTIC[5:],
    ]
    assert events[-1] == applied_summary(835, 466, 2, 800)


def test_clear_offload_manifest_is_off_by_default() -> None:
    """Off, a pass is the reference's, and a manifest the caller sends is a user message
    like any other."""
    assert ReductionConfig().clear_offload_manifest is False
    mw, events = middleware(InMemoryBackend(), token_counter=chars, max_tokens_for_clear=800)
    out = mw.before_model_rewrite_state(state(CHAT))
    assert list(out.messages) == [*CHAT_CLEARED, *CHAT[5:]]
    assert events[-1] == applied_summary(835, 223, 2, 800)
    old = Message.user(manifest("- old"))
    grown = [*CHAT[:3], old, *CHAT[3:]]
    mw, _ = middleware(InMemoryBackend(), token_counter=chars, max_tokens_for_clear=800)
    out = mw.before_model_rewrite_state(state(grown))
    assert list(out.messages) == [*CHAT_CLEARED[:3], old, *CHAT_CLEARED[3:], *CHAT[5:]]


def test_clear_offload_manifest_second_pass_replaces_it() -> None:
    """One manifest, moved to the new retained round, listing both passes' results."""
    backend = InMemoryBackend()
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=800, clear_offload_manifest=True
    )
    first = list(mw.before_model_rewrite_state(state(CHAT)).messages)
    later = [
        call_msg(("c3", "grep", '{"q": "c"}')),
        Message.tool(C, "c3"),
        call_msg(("k2", "ls", '{"d": "y"}')),
        Message.tool("kept", "k2"),
    ]
    out = mw.before_model_rewrite_state(state([*first, *later]))
    line_k = '- ls({"d": "z"}) -> /tmp/clear/k'
    line_c3 = '- grep({"q": "c"}) -> /tmp/clear/c3'
    assert list(out.messages) == [
        *CHAT_CLEARED,
        flagged(CHAT[5]),
        Message.tool(offload_placeholder("k"), "k"),
        flagged(later[0]),
        Message.tool(offload_placeholder("c3"), "c3"),
        Message.user(manifest(LINE_C1, LINE_C2, line_k, line_c3)),
        *later[2:],
    ]
    assert sum(is_offload_manifest(m) for m in out.messages) == 1
    assert set(backend.files) == {f"/tmp/clear/{c}" for c in ("c1", "c2", "k", "c3")}
    # 466 + 10 + 400 + 10 + 4 = 890 before. "kept" (4) becomes a 93-character placeholder,
    # C (400) one of 94, and the manifest grows from 243 to 243 + 33 + 36 = 312.
    assert summary(events[3:]).tokens_before == 890
    assert summary(events[3:]).tokens_after == 890 + 89 - 306 + 69 == 742


def test_clear_offload_manifest_none_when_nothing_is_offloaded() -> None:
    """A tool's own handler that does not offload, or no backend at all: nothing to list,
    no manifest; one an earlier pass left, with nothing left to list, goes."""

    def gone(detail: ToolDetail) -> ClearResult:
        text = ToolResult(parts=(ToolOutputPart(type="text", text="gone"),))
        return ClearResult(need_clear=True, tool_argument=detail.tool_argument, tool_result=text)

    own = ToolReductionConfig(clear_handler=gone)
    mw, events = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=800,
        clear_offload_manifest=True,
        tool_config={"grep": own, "ls": own},
    )
    out = mw.before_model_rewrite_state(state(CHAT))
    assert not any(is_offload_manifest(m) for m in out.messages)
    assert [m.content for m in out.messages][2:5] == ["gone", "", "gone"]
    assert summary(events).calls_cleared == 2

    mw, _ = middleware(
        None, token_counter=chars, max_tokens_for_clear=800, clear_offload_manifest=True
    )
    out = mw.before_model_rewrite_state(
        state([*CHAT[:3], Message.user(manifest("- x")), *CHAT[3:]])
    )
    assert [m.content for m in out.messages] == ["q", "", DROPPED, "", DROPPED, "", "kept"]


def test_clear_offload_manifest_with_no_round_retained_goes_last() -> None:
    mw, _ = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=800,
        clear_retention_suffix_limit=-1,
        clear_offload_manifest=True,
    )
    out = mw.before_model_rewrite_state(state(CHAT))
    assert out.messages[-1] == Message.user(
        manifest(LINE_C1, LINE_C2, '- ls({"d": "z"}) -> /tmp/clear/k')
    )
    assert out.messages[-2] == Message.tool(offload_placeholder("k"), "k")


def test_clear_offload_manifest_in_chinese() -> None:
    mw, _ = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=800,
        clear_offload_manifest=True,
        language="zh",
    )
    out = mw.before_model_rewrite_state(state(CHAT))
    assert out.messages[5] == Message.user(manifest(LINE_C1, LINE_C2, head=ZH))


def test_clear_offload_manifest_the_rewriter_never_sees_it() -> None:
    """An old manifest right after a round's results ends that round's window."""
    seen: list[Any] = []

    def rewriter(call: Any, results: list[Any]) -> list[Any]:
        seen.extend([call, *results])
        return [call, *results]

    old = manifest("- old")
    for msgs in (
        [*CHAT[:3], Message.user(old), *CHAT[3:]],
        [*AGENTIC[:3], user_block(old), *AGENTIC[3:]],
    ):
        seen.clear()
        mw, _ = middleware(
            InMemoryBackend(),
            token_counter=chars,
            max_tokens_for_clear=800,
            clear_offload_manifest=True,
            clear_message_rewriter=rewriter,
        )
        out = mw.before_model_rewrite_state(state(msgs))
        assert seen == [msgs[1], msgs[2], msgs[4], msgs[5]]
        assert [i for i, m in enumerate(out.messages) if is_offload_manifest(m)] == [5]
        assert not is_offload_manifest(out.messages[3])


def test_clear_offload_manifest_counts_toward_clear_at_least_tokens() -> None:
    """The pass frees 612 tokens, but the manifest costs 243: 369 < 400, not applied."""
    for on, applied in ((False, True), (True, False)):
        backend = InMemoryBackend()
        mw, events = middleware(
            backend,
            token_counter=chars,
            max_tokens_for_clear=800,
            clear_at_least_tokens=400,
            clear_offload_manifest=on,
        )
        s = state(CHAT)
        out = mw.before_model_rewrite_state(s)
        assert (out is not s) == applied
        assert bool(backend.files) == applied
        assert summary(events).reason == ("applied" if applied else "below_clear_at_least_tokens")


def test_clear_offload_manifest_a_pass_not_applied_leaves_it_as_sent() -> None:
    sent = [*CHAT_CLEARED, Message.user(manifest(LINE_C1, LINE_C2)), *CHAT[5:]]
    for threshold in (800, 300):  # nothing in range; below the threshold
        mw, events = middleware(
            InMemoryBackend(),
            token_counter=chars,
            max_tokens_for_clear=threshold,
            clear_offload_manifest=True,
        )
        s = state(sent)
        assert mw.before_model_rewrite_state(s) is s
        assert summary(events).applied is False


def test_clear_offload_manifest_is_counted_when_superseded_results_stop_the_pass() -> None:
    """c2 supersedes c1. Clearing c1 alone gives 835 - 306 = 529, plus a one-line manifest
    (173 + 36): 738. Under 740 the pass stops there; over 730 it goes on."""
    msgs = [*CHAT[:3], call_msg(("c2", "grep", '{"q": "a"}')), *CHAT[4:]]
    mw, events = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=740,
        clear_offload_manifest=True,
        clear_superseded=True,
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert list(out.messages) == [
        msgs[0],
        msgs[1],
        Message.tool(offload_placeholder("c1"), "c1"),
        *msgs[3:5],
        Message.user(manifest(LINE_C1)),
        *msgs[5:],
    ]
    assert summary(events).tokens_after == 738
    mw, events = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=730,
        clear_offload_manifest=True,
        clear_superseded=True,
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[5] == Message.user(manifest(LINE_C1, LINE_C1.replace("c1", "c2")))
    assert [e.strategy for e in events] == ["superseded", "", ""]
    assert summary(events).tokens_after == 223 + 173 + 2 * 36


def test_clear_offload_manifest_async_twin_gives_the_same() -> None:
    mw, events = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=800,
        clear_offload_manifest=True,
    )
    out = asyncio.run(mw.abefore_model_rewrite_state(state(AGENTIC)))
    assert out.messages[5] == user_block(manifest(LINE_C1, LINE_C2))
    assert events[-1] == applied_summary(835, 466, 2, 800)


# --- properties -------------------------------------------------------------------------------


def check_manifest_properties(original: list[Any], config: dict[str, Any]) -> None:
    """The caller's list is untouched; apart from the manifest every message is where it
    was (so every call keeps its results right after it); at most one manifest, exactly
    when a pass was applied and something names a file, right before the retained rounds
    and never between a call and its results; nothing is lost; a second pass changes
    nothing; appending rounds still leaves one."""
    backend = InMemoryBackend()
    mw, events = middleware(backend, **config, clear_offload_manifest=True)
    s = ChatModelAgentState(messages=original)
    snap = snapshot(s)
    out = list(mw.before_model_rewrite_state(s).messages)
    assert_untouched(s, snap)

    at = [i for i, m in enumerate(out) if is_offload_manifest(m)]
    rest = [m for m in out if not is_offload_manifest(m)]
    assert shape(rest) == shape(original)
    entries = manifest_entries(rest)
    if not summary(events).applied or not entries:
        assert at == []
    else:
        assert len(at) == 1
        retention = config["clear_retention_suffix_limit"] or 1
        assert at[0] == clear_range(rest, retention)[1]
        assert at[0] == len(out) - 1 or tool_calls_of(out[at[0] + 1])
        placed = out[at[0]]
        text = placed.content if isinstance(placed, Message) else placed.content_blocks[0].text
        assert text == manifest_text(entries, read_tool_name="read_file")
    for before, after in zip(original, rest, strict=True):
        for (_, old), (_, new) in zip(result_texts(before), result_texts(after), strict=True):
            if new != old:
                (path,) = PATH_RE.findall(new)
                assert backend.read(path) == old

    files = backend.files
    again = mw.before_model_rewrite_state(ChatModelAgentState(messages=list(out)))
    assert list(again.messages) == out
    assert backend.files == files

    grown = [*out, *original[1:]]
    more = list(mw.before_model_rewrite_state(ChatModelAgentState(messages=grown)).messages)
    assert sum(is_offload_manifest(m) for m in more) <= 1
    assert shape([m for m in more if not is_offload_manifest(m)]) == shape(
        [m for m in grown if not is_offload_manifest(m)]
    )


@SETTINGS
@given(rs=rounds(), config=CONFIGS)
def test_clear_offload_manifest_properties_chat(rs: list[Round], config: dict[str, Any]) -> None:
    check_manifest_properties(chat_conversation(rs), config)


@SETTINGS
@given(rs=rounds(), config=CONFIGS)
def test_clear_offload_manifest_properties_agentic(rs: list[Round], config: dict[str, Any]) -> None:
    check_manifest_properties(agentic_conversation(rs), config)


@SETTINGS
@given(rs=rounds(), config=CONFIGS)
def test_clear_offload_manifest_properties_with_the_other_strategies(
    rs: list[Round], config: dict[str, Any]
) -> None:
    settings = {**config, "clear_superseded": True, "clear_digest_tokens": 8}
    check_manifest_properties(chat_conversation(rs), settings)


@pytest.mark.parametrize("kind", ["chat", "agentic"])
def test_clear_offload_manifest_truncated_result_lists_its_truncation_file(kind: str) -> None:
    notice = trunc_notice(
        original_size=900,
        file_path="/tmp/trunc/c1",
        preview_size=5,
        preview_first="AAAAA",
        preview_last="AAAAA",
        read_tool_name="read_file",
    )
    msgs: list[Any]
    if kind == "chat":
        msgs = [CHAT[0], CHAT[1], Message.tool(notice, "c1"), *CHAT[3:]]
    else:
        msgs = [AGENTIC[0], AGENTIC[1], agentic_results(("c1", notice)), *AGENTIC[3:]]
    mw, _ = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=500,
        clear_offload_manifest=True,
    )
    out = mw.before_model_rewrite_state(state(msgs))
    line = '- grep({"q": "a"}) -> /tmp/trunc/c1'
    assert is_offload_manifest(out.messages[5])
    assert str(out.messages[5]).count(line) == 1
