"""Digest placeholders (``clear_digest_tokens``, an opt-in beyond the reference): the
digest itself, its budget, and the clear phase keeping one in each placeholder."""

from __future__ import annotations

import pytest

from reduction_app.engine import InMemoryBackend, default_digest
from reduction_app.engine._handlers._digests import fit_digest, search_matches
from reduction_app.engine.config import ToolReductionConfig
from reduction_app.engine.messages import Message
from reduction_app.engine.notices import clear_placeholder_path, is_clear_placeholder
from tests.engine.clear_support import (
    ID1,
    ID2,
    PLACEHOLDER_ID1,
    QUESTION,
    agentic_call,
    agentic_results,
    agentic_text,
    call_msg,
    chars,
    middleware,
    state,
)

GREP = "src/a.py:3:import os\nsrc/a.py:9:os.path\nsrc/b.py:1:import os\n"
LISTING = "line one\nline two\nline three\n"


def test_digest_counts_lines_and_characters_then_first_lines() -> None:
    assert default_digest(LISTING) == "3 lines, 29 characters\nline one\nline two\nline three"


def test_digest_of_search_output_names_the_files_with_their_matches() -> None:
    assert default_digest(GREP) == (
        "3 lines, 61 characters; matches in 2 files: src/a.py (2), src/b.py (1)\n"
        "src/a.py:3:import os\nsrc/a.py:9:os.path\nsrc/b.py:1:import os"
    )


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["a.py:1:x", "b.py:2-y", "a.py:3:z"], {"a.py": 2, "b.py": 1}),
        (["a.py:1:x"], {}),  # one match line is not enough to call it a search
        (["a.py:1:x", "b.py:2:y", "text", "more", "even more"], {}),  # under half
        (["Error: no such file", "at main.py line 3"], {}),
    ],
)
def test_search_matches_needs_most_lines_to_look_like_search_output(
    lines: list[str], expected: dict[str, int]
) -> None:
    assert search_matches(lines) == expected


def test_fit_digest_keeps_whole_lines_within_the_budget() -> None:
    digest = "header\n" + "x" * 10 + "\n" + "y" * 10
    assert fit_digest(digest, 100) == digest
    assert fit_digest(digest, 5) == "header\n" + "x" * 10  # 20 characters: 17 fit
    assert fit_digest(digest, 1) == "hea…"  # a first line longer than the budget


def _conversation() -> list[Message]:
    return [
        Message.user(QUESTION),
        call_msg((ID1, "grep", '{"pattern": "os"}')),
        Message.tool(GREP, ID1),
        call_msg((ID2, "get_weather")),
        Message.tool("Sunny", ID2),
    ]


def test_clear_with_digest_keeps_the_digest_in_the_placeholder() -> None:
    backend = InMemoryBackend()
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=10, clear_digest_tokens=25
    )
    out = mw.before_model_rewrite_state(state(_conversation()))
    text = out.messages[2].content
    assert text == (
        "<persisted-output>Tool result saved to: /tmp/clear/call_987654321\n"
        "Use read_file to view\n"
        "Digest: 3 lines, 61 characters; matches in 2 files: src/a.py (2), src/b.py (1)\n"
        "src/a.py:3:import os</persisted-output>"
    )
    assert is_clear_placeholder(text)
    assert clear_placeholder_path(text) == "/tmp/clear/call_987654321"
    # Nothing lost: the offload file is the original, byte for byte.
    assert backend.read("/tmp/clear/call_987654321") == GREP
    assert [e.offload_path for e in events if e.kind == "tool"] == ["/tmp/clear/call_987654321"]


def test_clear_with_digest_is_idempotent() -> None:
    mw, _ = middleware(
        InMemoryBackend(), token_counter=chars, max_tokens_for_clear=10, clear_digest_tokens=25
    )
    once = mw.before_model_rewrite_state(state(_conversation()))
    unflagged = [
        Message(
            role=m.role, content=m.content, tool_calls=m.tool_calls, tool_call_id=m.tool_call_id
        )
        for m in once.messages
    ]
    again = mw.before_model_rewrite_state(state(unflagged))
    # A placeholder with a digest is recognised even without the processed flag.
    assert [m.content for m in again.messages] == [m.content for m in once.messages]


def test_digest_budget_bounds_the_digest() -> None:
    mw, _ = middleware(
        InMemoryBackend(), token_counter=chars, max_tokens_for_clear=10, clear_digest_tokens=3
    )
    out = mw.before_model_rewrite_state(state(_conversation()))
    digest = out.messages[2].content.split("Digest: ", 1)[1].removesuffix("</persisted-output>")
    assert digest == "3 lines, 61…"  # 12 characters, the budget of 3 tokens


def test_digests_are_off_by_default() -> None:
    mw, _ = middleware(InMemoryBackend(), token_counter=chars, max_tokens_for_clear=10)
    out = mw.before_model_rewrite_state(state(_conversation()))
    assert out.messages[2].content == PLACEHOLDER_ID1


def test_a_tool_can_have_its_own_digester() -> None:
    mw, _ = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=10,
        clear_digest_tokens=25,
        tool_config={"grep": ToolReductionConfig(clear_digester=lambda text: "three matches")},
    )
    out = mw.before_model_rewrite_state(state(_conversation()))
    assert out.messages[2].content.endswith("\nDigest: three matches</persisted-output>")


def test_digest_without_offload_and_in_chinese() -> None:
    mw, _ = middleware(
        None,
        skip_truncation=True,
        token_counter=chars,
        max_tokens_for_clear=10,
        clear_digest_tokens=25,
        language="zh",
    )
    out = mw.before_model_rewrite_state(state(_conversation()))
    text = out.messages[2].content
    assert text == (
        "[工具输出结果已清理]\n摘要: 3 lines, 61 characters; matches in 2 files: "
        "src/a.py (2), src/b.py (1)\nsrc/a.py:3:import os"
    )
    assert is_clear_placeholder(text)


def test_digest_in_content_block_messages() -> None:
    backend = InMemoryBackend()
    mw, _ = middleware(
        backend, token_counter=chars, max_tokens_for_clear=10, clear_digest_tokens=25
    )
    messages = [
        agentic_text("user", QUESTION),
        agentic_call((ID1, "list", "{}")),
        agentic_results((ID1, LISTING)),
        agentic_call((ID2, "get_weather")),
        agentic_results((ID2, "Sunny")),
    ]
    out = mw.before_model_rewrite_state(state(messages))
    (block,) = out.messages[2].content_blocks
    assert block.content[0].text == (
        "<persisted-output>Tool result saved to: /tmp/clear/call_987654321\n"
        "Use read_file to view\n"
        "Digest: 3 lines, 29 characters\nline one\nline two\nline three</persisted-output>"
    )
    assert backend.read("/tmp/clear/call_987654321") == LISTING


def test_clear_digest_tokens_is_checked() -> None:
    from reduction_app.engine.config import ReductionConfig, validate
    from reduction_app.engine.errors import ConfigError

    with pytest.raises(ConfigError, match="clear_digest_tokens must be at least 0, got -1"):
        validate(ReductionConfig(backend=InMemoryBackend(), clear_digest_tokens=-1))
    with pytest.raises(ConfigError, match=r"tool_config\['grep'\].clear_digester"):
        validate(
            ReductionConfig(
                backend=InMemoryBackend(),
                tool_config={"grep": ToolReductionConfig(clear_digester="short")},  # type: ignore[arg-type]
            )
        )
