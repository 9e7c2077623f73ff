"""How the phases read and rewrite both message styles.

Chat messages carry results in ``tool`` messages; agentic messages carry
``function_tool_result`` blocks in user messages, possibly several in one. Every function
here takes either style and returns new values. It also owns how a call finds its results:
by call id, among the tool-result messages right after the call, a reused id taking the
next free result (docs/behaviour.md §4.6 step 1).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from reduction_app.engine.blocks import (
    AgenticMessage,
    FunctionToolCall,
    FunctionToolResult,
    ToolResultContent,
    ToolSearchResult,
)
from reduction_app.engine.errors import MessageError
from reduction_app.engine.messages import ROLE_ASSISTANT, ROLE_SYSTEM, ROLE_TOOL, ROLE_USER, Message
from reduction_app.engine.notices import is_clear_placeholder
from reduction_app.engine.parts import message_part_to_tool_part, tool_part_to_message_part
from reduction_app.engine.tool_io import ToolOutputPart, ToolResult

__all__ = [
    "PROCESSED_FLAG",
    "AnyMessage",
    "CallRef",
    "Slot",
    "call_results",
    "classify",
    "conversation_kind",
    "find_result",
    "has_tool_calls",
    "is_cleared",
    "is_processed",
    "mark_processed",
    "read_result",
    "result_ids",
    "tool_calls_of",
    "write_arguments",
    "write_result",
]

AnyMessage = Message | AgenticMessage
PROCESSED_FLAG = "_reduction_mw_processed"
"""The ``extra`` key the clear phase sets on assistant messages it went through."""

Kind = Literal["system", "user", "assistant", "tool_result"]


@dataclass(frozen=True, slots=True)
class CallRef:
    """One tool call of an assistant message, and where it sits in that message."""

    call_id: str
    name: str
    arguments: str
    position: int
    """Index in ``tool_calls`` (chat) or in ``content_blocks`` (agentic)."""


def conversation_kind(messages: Sequence[Any]) -> Literal["chat", "agentic"] | None:
    """``chat`` or ``agentic`` for a list of one style; refuse anything else."""
    # The clear phase asks this before every model call: one C-level pass for the usual case.
    types = set(map(type, messages))
    if types == {Message}:
        return "chat"
    if types == {AgenticMessage}:
        return "agentic"
    kinds = set()
    for index, msg in enumerate(messages):
        if not isinstance(msg, Message | AgenticMessage):
            raise MessageError(
                f"messages[{index}] is {type(msg).__name__}, not a Message or AgenticMessage"
            )
        kinds.add(msg.kind)
    if len(kinds) > 1:
        raise MessageError("messages mix chat Message and AgenticMessage values")
    return kinds.pop() if kinds else None


_CHAT_KINDS: dict[str, Kind] = {
    ROLE_SYSTEM: "system",
    ROLE_USER: "user",
    ROLE_ASSISTANT: "assistant",
    ROLE_TOOL: "tool_result",
}
_AGENTIC_KINDS: dict[str, Kind] = {ROLE_SYSTEM: "system", ROLE_ASSISTANT: "assistant"}


def classify(msg: AnyMessage) -> Kind | None:
    """The message's part in a conversation; ``None`` for a role the engine does not know."""
    if isinstance(msg, Message):
        return _CHAT_KINDS.get(msg.role)
    if msg.role == ROLE_USER:
        if any(isinstance(b, FunctionToolResult) for b in msg.content_blocks):
            return "tool_result"
        return "user" if msg.content_blocks else None
    return _AGENTIC_KINDS.get(msg.role)


def tool_calls_of(msg: AnyMessage) -> list[CallRef]:
    """The tool calls of an assistant message (empty for every other message)."""
    if msg.role != ROLE_ASSISTANT:
        return []
    if isinstance(msg, Message):
        return [
            CallRef(tc.id, tc.name, tc.arguments, position)
            for position, tc in enumerate(msg.tool_calls)
        ]
    return [
        CallRef(b.call_id, b.name, b.arguments, position)
        for position, b in enumerate(msg.content_blocks)
        if isinstance(b, FunctionToolCall)
    ]


def has_tool_calls(msg: AnyMessage) -> bool:
    """Whether ``msg`` is an assistant message with tool calls: ``bool(tool_calls_of(msg))``
    without building the calls, for the scans that only ask."""
    if msg.role != ROLE_ASSISTANT:
        return False
    if isinstance(msg, Message):
        return bool(msg.tool_calls)
    return any(isinstance(b, FunctionToolCall) for b in msg.content_blocks)


def result_ids(msg: AnyMessage) -> list[str]:
    """The call ids a tool-result message answers."""
    if isinstance(msg, Message):
        return [msg.tool_call_id] if msg.role == ROLE_TOOL else []
    if classify(msg) != "tool_result":
        return []
    return [
        b.call_id
        for b in msg.content_blocks
        if isinstance(b, FunctionToolResult | ToolSearchResult)
    ]


Slot = tuple[int, int]
"""Where a result for one call id sits: the message index and, among that message's
results for the same id, which one (agentic messages may answer an id more than once)."""


def find_result(
    messages: Sequence[AnyMessage], index: int, call_id: str, taken: Collection[Slot] = ()
) -> Slot | None:
    """The first result of ``call_id`` not in ``taken`` (slots of that same id) among the
    tool results right after ``index``; the scan stops at the first non-result."""
    j = index + 1
    while j < len(messages) and classify(messages[j]) == "tool_result":
        for occurrence in range(result_ids(messages[j]).count(call_id)):
            if (j, occurrence) not in taken:
                return j, occurrence
        j += 1
    return None


def call_results(messages: Sequence[AnyMessage], index: int) -> list[tuple[CallRef, Slot | None]]:
    """Each tool call of ``messages[index]`` with its result's slot (``None`` when it has
    none); a call id used twice gets the first result, the next use the second."""
    taken: dict[str, list[Slot]] = {}
    out: list[tuple[CallRef, Slot | None]] = []
    for ref in tool_calls_of(messages[index]):
        slot = find_result(messages, index, ref.call_id, taken.get(ref.call_id, ()))
        if slot is not None:
            taken.setdefault(ref.call_id, []).append(slot)
        out.append((ref, slot))
    return out


def is_cleared(result: ToolResult) -> bool:
    """Whether every text part of ``result`` is one of our clear placeholders."""
    texts = [p.text for p in result.parts if p.type == "text"]
    return bool(texts) and all(is_clear_placeholder(t) for t in texts)


def is_processed(msg: AnyMessage) -> bool:
    """Whether the clear phase already went through this message (only ``True`` counts)."""
    return msg.extra.get(PROCESSED_FLAG) is True


def mark_processed(msg: AnyMessage) -> AnyMessage:
    """``msg`` carrying the processed flag (``msg`` itself when it already does)."""
    if is_processed(msg):
        return msg
    return _with(msg, extra={**msg.extra, PROCESSED_FLAG: True})


def _with(msg: AnyMessage, **changes: Any) -> AnyMessage:
    """``dataclasses.replace(msg, **changes)`` for changes that ``__post_init__`` would
    leave as they are (a string, a dict, a tuple), without its checks of every field:
    the clear phase rewrites two messages per cleared result, and ``replace`` costs
    several times a copy of the fields."""
    if type(msg) is not Message and type(msg) is not AgenticMessage:
        return replace(msg, **changes)  # a subclass may check more in __post_init__
    new = object.__new__(type(msg))
    fields = new.__dict__
    fields.update(msg.__dict__)
    fields.update(changes)
    return new


def read_result(
    msg: AnyMessage, call_id: str, occurrence: int = 0
) -> tuple[ToolResult, bool] | None:
    """The result ``msg`` holds for ``call_id`` and whether it is plain content.

    ``occurrence`` picks among several result blocks answering the same id (an
    agentic message; models do reuse ids). ``None`` when that slot holds no
    clearable result (a tool search result).
    """
    if isinstance(msg, Message):
        if msg.role != ROLE_TOOL:
            raise MessageError(f"message role {msg.role} is not a tool")
        if msg.user_input_multi_content:
            parts = tuple(message_part_to_tool_part(p) for p in msg.user_input_multi_content)
            return ToolResult(parts=parts), False
        return ToolResult.of_text(msg.content), True
    index = _result_slot(msg, call_id, occurrence)
    block = None if index is None else msg.content_blocks[index]
    if not isinstance(block, FunctionToolResult):
        return None
    parts = tuple(_content_to_part(c) for c in block.content)
    if not parts:
        return ToolResult.of_text(""), True
    return ToolResult(parts=parts), len(parts) == 1 and parts[0].type == "text"


def write_result(
    msg: AnyMessage,
    call_id: str,
    parts: Sequence[ToolOutputPart],
    from_content: bool,
    occurrence: int = 0,
) -> AnyMessage:
    """``msg`` with its ``occurrence``-th result for ``call_id`` replaced by ``parts``."""
    if isinstance(msg, Message):
        if from_content:
            return _with(msg, content=parts[0].text) if parts else msg
        try:
            converted = tuple(tool_part_to_message_part(p) for p in parts)
        except MessageError:
            return msg
        return _with(msg, user_input_multi_content=converted)
    index = _result_slot(msg, call_id, occurrence)
    block = None if index is None else msg.content_blocks[index]
    if index is None or not isinstance(block, FunctionToolResult):
        return msg
    content = tuple(c for c in (_part_to_content(p) for p in parts) if c is not None)
    blocks = list(msg.content_blocks)
    blocks[index] = replace(block, content=content)
    return _with(msg, content_blocks=tuple(blocks))


def write_arguments(msg: AnyMessage, ref: CallRef, arguments: str) -> AnyMessage:
    """``msg`` with the arguments of the call at ``ref.position`` replaced."""
    if ref.arguments == arguments:
        return msg
    if isinstance(msg, Message):
        calls = list(msg.tool_calls)
        calls[ref.position] = replace(calls[ref.position], arguments=arguments)
        return replace(msg, tool_calls=tuple(calls))
    blocks = list(msg.content_blocks)
    block = blocks[ref.position]
    assert isinstance(block, FunctionToolCall)
    blocks[ref.position] = replace(block, arguments=arguments)
    return replace(msg, content_blocks=tuple(blocks))


def _result_slot(msg: AgenticMessage, call_id: str, occurrence: int) -> int | None:
    """The block index of the ``occurrence``-th result block answering ``call_id``."""
    seen = 0
    for index, block in enumerate(msg.content_blocks):
        if isinstance(block, FunctionToolResult | ToolSearchResult) and block.call_id == call_id:
            if seen == occurrence:
                return index
            seen += 1
    return None


def _content_to_part(content: ToolResultContent) -> ToolOutputPart:
    return ToolOutputPart(
        type=content.type, text=content.text, media=content.media, extra=content.extra
    )


def _part_to_content(part: ToolOutputPart) -> ToolResultContent | None:
    if part.type == "text":
        return ToolResultContent(type="text", text=part.text, extra=part.extra)
    if part.type == "tool_search_result":
        raise MessageError("a tool_search_result part cannot be written into a function result")
    if part.media is None:
        return None
    return ToolResultContent(type=part.type, media=part.media, extra=part.extra)
