"""The offload manifest of the opt-in ``clear_offload_manifest`` (docs/behaviour.md
§4.13): its text, how a manifest message is recognised again (the whole text of a user
message), and :func:`with_manifest`, which puts a conversation's one manifest in place
right before the retained rounds. ``_pass`` decides when, as it counts a pass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reduction_app.engine.access import (
    AnyMessage,
    call_results,
    conversation_kind,
    has_tool_calls,
    is_cleared,
    read_result,
    result_ids,
    tool_calls_of,
)
from reduction_app.engine.blocks import AgenticMessage, UserInputText
from reduction_app.engine.messages import ROLE_USER, Message
from reduction_app.engine.notices import Language, clear_placeholder_path, get_language

__all__ = [
    "ARGUMENT_CHARS",
    "MAX_ENTRIES",
    "is_offload_manifest",
    "manifest_entries",
    "manifest_text",
    "with_manifest",
]

MAX_ENTRIES = 30
"""The most results a manifest lists: the newest ones."""
ARGUMENT_CHARS = 80
"""The longest a result's arguments are shown, in characters (an ellipsis included)."""

_OPEN = "<offload-manifest>"
_CLOSE = "</offload-manifest>"
_HEADER = {
    "en": (
        "These tool results were moved out of the context. To see one again, read its file "
        "with {read_tool_name}(path) instead of re-running the tool:"
    ),
    "zh": (
        "以下工具结果已移出上下文。如需再次查看，"
        "请用 {read_tool_name}(path) 读取其文件，不要重新运行工具："
    ),
}
_LEFT_OUT = {
    "en": "({count} earlier results not listed)",
    "zh": "（另有 {count} 条更早的结果未列出）",
}
_HEADER_RE = "|".join(
    re.escape(text).replace(re.escape("{read_tool_name}"), r"\S+") for text in _HEADER.values()
)
# The whole text: a user's message that only quotes or mentions a manifest is not one.
_MANIFEST_RE = re.compile(
    rf"{re.escape(_OPEN)}\n(?:{_HEADER_RE})(?:\n[^\n]*)+\n{re.escape(_CLOSE)}"
)

Entry = tuple[str, str, str]
"""``(tool name, arguments, offload path)`` of one listed result."""


def manifest_entries(messages: Sequence[AnyMessage]) -> list[Entry]:
    """Each cleared result of ``messages`` whose placeholder names an offload file, with
    its call, in conversation order (a result with no call before it is left out)."""
    out: list[Entry] = []
    for index, msg in enumerate(messages):
        if not has_tool_calls(msg):
            continue
        for ref, slot in call_results(messages, index):
            read = None if slot is None else read_result(messages[slot[0]], ref.call_id, slot[1])
            if read is None or not is_cleared(read[0]):
                continue
            # Several text parts give several copies of the same placeholder.
            paths = [clear_placeholder_path(p.text) for p in read[0].parts if p.type == "text"]
            if paths[0] is not None:
                out.append((ref.name, ref.arguments, paths[0]))
    return out


def _one_line(text: str, limit: int | None = None) -> str:
    """``text`` on one line (runs of whitespace become one space); past ``limit``
    characters its middle becomes an ellipsis, so both the start (a command, the first
    argument) and the end (often a file name) still show."""
    text = " ".join(text.split())
    if limit is None or len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head) :]


def manifest_text(
    entries: Sequence[Entry], *, read_tool_name: str, language: Language | None = None
) -> str:
    """The manifest listing ``entries`` (oldest first); only the newest
    :data:`MAX_ENTRIES` are listed."""
    lang = get_language(language)
    lines = [_OPEN, _HEADER[lang].format(read_tool_name=read_tool_name)]
    left_out = len(entries) - MAX_ENTRIES
    if left_out > 0:
        lines.append(_LEFT_OUT[lang].format(count=left_out))
    for name, arguments, path in entries[max(left_out, 0) :]:
        lines.append(f"- {_one_line(name)}({_one_line(arguments, ARGUMENT_CHARS)}) -> {path}")
    lines.append(_CLOSE)
    return "\n".join(lines)


def is_offload_manifest(msg: AnyMessage) -> bool:
    """Whether ``msg`` is a manifest message: a user message whose only text is a whole
    manifest (in either language)."""
    if msg.role != ROLE_USER:
        return False
    if isinstance(msg, Message):
        if msg.user_input_multi_content:
            parts = msg.user_input_multi_content
            if len(parts) != 1 or parts[0].type != "text":
                return False
            return _MANIFEST_RE.fullmatch(parts[0].text) is not None
        return _MANIFEST_RE.fullmatch(msg.content) is not None
    blocks = msg.content_blocks
    return (
        len(blocks) == 1
        and isinstance(blocks[0], UserInputText)
        and _MANIFEST_RE.fullmatch(blocks[0].text) is not None
    )


def _open_group(before: Sequence[AnyMessage], after: Sequence[AnyMessage]) -> int | None:
    """Where the last group of calls in ``before`` starts when a message put between
    ``before`` and ``after`` would cut a call from a result: ``after`` starts with results,
    or a call at the end of ``before`` has no result in it yet; otherwise ``None``."""
    answered: set[str] = set()
    i = len(before) - 1
    while i >= 0 and not has_tool_calls(before[i]) and result_ids(before[i]):
        answered.update(result_ids(before[i]))
        i -= 1
    if i < 0 or not has_tool_calls(before[i]):
        return None
    if (after and result_ids(after[0])) or any(
        ref.call_id not in answered for ref in tool_calls_of(before[i])
    ):
        return i
    return None


def with_manifest(
    messages: Sequence[AnyMessage],
    end: int,
    *,
    read_tool_name: str,
    language: Language | None = None,
) -> list[AnyMessage]:
    """``messages`` without the manifests they hold and, when a cleared result in them
    names an offload file, with a new manifest right before ``messages[end]`` (at the end
    when ``end == len(messages)``), or before the tool calls that place would cut from
    their results: with no round retained, the conversation may end on calls the model
    just made, whose results come next. A new list; the messages are not changed."""
    before = [m for m in messages[:end] if not is_offload_manifest(m)]
    after = [m for m in messages[end:] if not is_offload_manifest(m)]
    entries = manifest_entries([*before, *after])
    if not entries:
        return [*before, *after]
    cut = _open_group(before, after)
    while cut is not None:
        before, after = before[:cut], [*before[cut:], *after]
        cut = _open_group(before, after)
    text = manifest_text(entries, read_tool_name=read_tool_name, language=language)
    manifest: AnyMessage
    # The user role in both styles: Anthropic takes no system message inside the
    # conversation, and both OpenAI APIs take a user message anywhere.
    if conversation_kind(messages) == "agentic":
        manifest = AgenticMessage(role=ROLE_USER, content_blocks=(UserInputText(text=text),))
    else:
        manifest = Message(role=ROLE_USER, content=text)
    return [*before, manifest, *after]
