"""The part of every request a recording left out, inferred from the provider's counts.

Claude Code session logs keep the messages, not what Claude Code sends before them: its
system prompt, its tool schemas, and the CLAUDE.md files and reminders it adds. The
provider counted all of it: each call's ``message.usage`` is the whole prompt. Replayed
as logged, the shipped long sessions are a median 33,000 to 80,000 tokens a call short
of the bill, so a clear threshold would fire late and costs would read about half.

The omitted prefix is inferred per conversation as the smallest gap (the provider's
prompt tokens minus the replayed context, by the price preset's measure) over the first
:data:`FIT_CALLS` calls with a provider figure. The gap is not constant over a session:
it grows with the context (by 0.15 to 0.78 tokens per replayed token on the shipped
long sessions), because the Claude tokenizer is not available offline (Claude presets count
with ``cl100k_base``) and because Claude Code adds reminders the log does not keep. The
first calls, whose replayed context is a few hundred tokens, carry the least of that
growing part, so the smallest of their gaps is the fixed prefix, and the rest of the
session is left to judge it (:mod:`simulator.calibration`).

Only recordings of a kind known to leave the prefix out get one (:data:`OMITS_PREFIX`):
τ²-bench replays match the bill once their agent's prompt and tools are put back, and
mini-swe-agent's gap changes sign within a run (the model's tokenizer against the
preset's, not a missing prefix).

A replay counts the prefix as the provider did: first in every request (so a prompt
cache serves it from the second call on), and in every count the clear phase compares
with its thresholds, through :func:`with_prefix`, a counter that adds it to each count of
a whole request and to nothing else (the figures of a single result or message stay
those of the config's own counter).
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
    "with_prefix",
]

OMITS_PREFIX = frozenset({"claude_code"})
"""Recording formats (``RecordedConversation.source``) whose messages leave out the
system prompt and tool schemas the provider was sent."""

FIT_CALLS = 3
"""How many of a conversation's first calls (those with a provider figure) the prefix is
inferred from."""


def fit_calls(
    conversation: RecordedConversation, messages: Sequence[Any] | None = None
) -> list[int]:
    """Message indices of the model calls the prefix is inferred from: the first
    :data:`FIT_CALLS` with a provider figure (none for a recording of another kind)."""
    usage = conversation.usage
    if conversation.source not in OMITS_PREFIX or usage is None or not usage.prompt_tokens:
        return []
    calls = model_calls(conversation.messages if messages is None else messages)
    return [i for i in calls if i in usage.prompt_tokens][:FIT_CALLS]


def infer_prefix(
    conversation: RecordedConversation, meter: Meter, messages: Sequence[Any] | None = None
) -> int | None:
    """Tokens of the prefix ``conversation`` left out, by ``meter``'s measure; ``None`` for
    a recording of a kind that keeps it, or without per-call provider figures. 0 when the
    replay already reaches the provider's counts. ``messages``: the conversation's
    messages as the replay holds them (the same values, counted once by ``meter``)."""
    messages = list(conversation.messages if messages is None else messages)
    calls = fit_calls(conversation, messages)
    if not calls:
        return None
    assert conversation.usage is not None
    tools = list(conversation.tools)
    gaps = [conversation.usage.prompt_tokens[i] - meter.request(messages[:i], tools) for i in calls]
    return max(0, min(gaps))


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
