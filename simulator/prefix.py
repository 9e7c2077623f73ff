"""The part of every request a recording left out, inferred from the provider's counts.

Claude Code logs keep the messages but not the system prompt and tool schemas sent
before them; the provider's counts did include them. The prefix is inferred per
conversation from the first calls' gaps, for recordings known to leave it out
(:data:`OMITS_PREFIX`), and :func:`with_prefix` adds it to every count of a whole
request (why and how well: docs/simulator.md, "The prefix a recording left out").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reduction_app.engine import (
    AgenticMessage,
    FunctionToolResult,
    Message,
    TokenCounter,
    ToolInfo,
    ToolResultContent,
    get_token_counter,
)
from simulator.importers import RECORDING_FORMATS
from simulator.metering import Meter
from simulator.pricing import Pricing
from simulator.recording import RecordedConversation
from simulator.transcript import model_calls

__all__ = [
    "FIT_CALLS",
    "OMITS_PREFIX",
    "PrefixedCounter",
    "fit_calls",
    "infer_prefix",
    "inferred_prefix",
    "omitted_tokens",
    "with_prefix",
]

OMITS_PREFIX = frozenset(name for name, f in RECORDING_FORMATS.items() if f.prefix_inferred)
"""Recording formats (``RecordedConversation.source``) whose messages leave out the
system prompt and tool schemas the provider was sent, and whose replays add their
inferred size (``RecordingFormat.prefix_inferred``)."""

FIT_CALLS = 3
"""How many of a conversation's first calls (those with a provider figure) the prefix is
inferred from."""


def fit_calls(
    conversation: RecordedConversation, messages: Sequence[Any] | None = None
) -> list[int]:
    """Message indices of the model calls the prefix is inferred from: the first
    :data:`FIT_CALLS` with a provider figure (none for a recording of another kind)."""
    if conversation.source not in OMITS_PREFIX:
        return []
    return _figured_calls(conversation, messages)


def _figured_calls(
    conversation: RecordedConversation, messages: Sequence[Any] | None = None
) -> list[int]:
    usage = conversation.usage
    if usage is None or not usage.prompt_tokens:
        return []
    calls = model_calls(conversation.messages if messages is None else messages)
    return [i for i in calls if i in usage.prompt_tokens][:FIT_CALLS]


def _gap(
    conversation: RecordedConversation, meter: Meter, messages: list[Any], calls: list[int]
) -> int | None:
    """The least, over ``calls``, of the provider's prompt tokens less ``meter``'s count
    of what the recording holds of that request (never below 0); ``None`` without calls."""
    if not calls:
        return None
    assert conversation.usage is not None
    tools = list(conversation.tools)
    gaps = [conversation.usage.prompt_tokens[i] - meter.request(messages[:i], tools) for i in calls]
    return max(0, min(gaps))


def infer_prefix(
    conversation: RecordedConversation, meter: Meter, messages: Sequence[Any] | None = None
) -> int | None:
    """Tokens of the prefix ``conversation`` left out, by ``meter``'s measure; ``None`` for
    a recording of a kind that keeps it, or without per-call provider figures. 0 when the
    replay already reaches the provider's counts. ``messages``: the conversation's
    messages as the replay holds them (the same values, counted once by ``meter``)."""
    messages = list(conversation.messages if messages is None else messages)
    return _gap(conversation, meter, messages, fit_calls(conversation, messages))


def omitted_tokens(conversation: RecordedConversation, pricing: Pricing) -> int | None:
    """About how many tokens of each request ``conversation`` left out, by ``pricing``'s
    measure (as :func:`inferred_prefix`'s): reckoned as :func:`infer_prefix` reckons it,
    but for a recording of any format, where the provider's per-call counts were kept;
    ``None`` where they were not. For one whose format's replays do not add it
    (``RecordingFormat.prefix_inferred``), a figure to read, not one a replay counts; for
    one that left out nothing (``importers.recording_omits``), it says how far the
    engine's count is from the provider's."""
    messages = list(conversation.messages)
    meter = Meter(pricing, get_token_counter("approx"))
    return _gap(conversation, meter, messages, _figured_calls(conversation, messages))


def inferred_prefix(conversation: RecordedConversation, pricing: Pricing) -> int | None:
    """:func:`infer_prefix` by ``pricing``'s measure (the default counter's, without a
    provider tokenizer), as a replay under ``pricing`` infers it."""
    return infer_prefix(conversation, Meter(pricing, get_token_counter("approx")))


class PrefixedCounter:
    """A counter whose counts of a whole request are ``inner``'s plus ``prefix``, as if the
    request held what the recording left out. A bare text counts as the engine counts it
    with ``inner`` (its own ``count_text``, else a one-result conversation in the
    conversation's style); ``count_message`` (one message, from ``inner``'s caches), the
    name and any other attribute are ``inner``'s.

    To the engine it is a counter of the caller's: each count of a request calls it
    whole, and a built-in ``inner`` finds what it counted before by its own running
    totals."""

    def __init__(self, inner: Any, prefix: int, agentic: bool) -> None:
        self.inner = inner
        self.prefix = prefix
        self.agentic = agentic

    def __call__(self, messages: Sequence[Any], tool_infos: Sequence[ToolInfo], /) -> int:
        return int(self.inner(messages, tool_infos)) + self.prefix

    def count_text(self, text: str) -> int:
        measure = getattr(self.inner, "count_text", None)
        if callable(measure):
            return int(measure(text))
        message: Any = Message.tool(text, "")
        if self.agentic:
            result = FunctionToolResult(content=(ToolResultContent(text=text),))
            message = AgenticMessage(role="user", content_blocks=(result,))
        return int(self.inner([message], []))

    def __getattr__(self, name: str) -> Any:
        # count_message, name, ...: the inner counter's own, when it has them.
        return getattr(self.inner, name)


def with_prefix(counter: TokenCounter, prefix: int, *, agentic: bool = False) -> TokenCounter:
    """``counter`` counting ``prefix`` more tokens in every whole request, and the same
    in a single text or message (``counter`` itself when ``prefix`` is 0). ``agentic``:
    the conversation's messages are agentic ones (how a caller's counter without
    ``count_text`` is asked for a bare text)."""
    if not prefix:
        return counter
    return PrefixedCounter(counter, prefix, agentic)
