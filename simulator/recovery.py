"""Recovery measured on real agents: what they did after their own tool cut an output.

The price of a miss (``RECOVERY`` in :mod:`simulator.misses`) is set from this
measurement rather than assumed: agents that cut oversized outputs themselves
(:data:`MARKERS`) show in their recordings what going back cost them. It replays
nothing; the rules are docs/simulator.md's "Recovery on real agents".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from reduction_app.engine import (
    AgenticMessage,
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    Message,
    get_token_counter,
)
from reduction_app.engine.inspect import count_text
from simulator.misses import strings_in
from simulator.recording import RecordedConversation

__all__ = [
    "MARKERS",
    "WINDOW",
    "WINDOWS",
    "CorpusRecovery",
    "Truncation",
    "corpus_recovery",
    "pooled",
    "table",
    "truncations",
]

WINDOWS = (1, 3, 5)
"""How many model calls after a cut the table looks for going back in."""
WINDOW = WINDOWS[-1]
"""The recovery starts at the first call going back within this many calls of the cut."""

_SIZE_UNITS = {"B": 1, "KB": 1024, "MB": 1024 * 1024}

MARKERS: dict[str, re.Pattern[str]] = {
    "elided": re.compile(
        r"<output_head>.*<elided_chars>\s*(?P<chars>\d+) characters elided\s*</elided_chars>",
        re.DOTALL,
    ),
    "persisted": re.compile(
        r"\A\s*<persisted-output>\s*Output too large \((?P<size>[\d.]+)\s*(?P<unit>B|KB|MB)?\)\."
        r" Full output saved to: (?P<path>\S+)"
    ),
    "cut": re.compile(
        r"\.\.\. \[(?:(?P<chars>\d+) characters|(?P<lines>\d+) lines) truncated\] \.\.\."
    ),
    "refused": re.compile(
        r"\A\s*File content \((?P<tokens>\d+) tokens\) exceeds maximum allowed tokens"
    ),
}
"""Each agent's notice of an output it cut, by kind; the groups give the hidden size."""

_NEW_LINE_CHARS = 8
"""A line shows something new only if it has this many characters (stripped): shorter
ones (a brace, ``return``, a blank) recur everywhere."""


@dataclass(frozen=True, slots=True)
class _Call:
    """One model call of the recording, flattened from either message kind."""

    index: int
    """Its assistant message's index in the conversation."""
    text: str
    """What the model wrote (its text and its calls' arguments), for counting tokens."""
    arguments: tuple[str, ...]
    """Its tool calls' arguments, as written."""
    results: tuple[str, ...] = ()
    """The texts of the results answering its calls."""


def _flatten(messages: Sequence[Any]) -> list[_Call]:
    """The model calls of a conversation, each with its calls' results."""
    calls: list[_Call] = []
    by_id: dict[str, int] = {}
    results: dict[int, list[str]] = {}

    def answer(call_id: str, text: str) -> None:
        position = by_id.get(call_id, len(calls) - 1)
        if position >= 0:
            results.setdefault(position, []).append(text)

    for index, msg in enumerate(messages):
        if isinstance(msg, Message):
            if msg.role == "assistant":
                args = tuple(c.arguments for c in msg.tool_calls)
                for c in msg.tool_calls:
                    by_id[c.id] = len(calls)
                calls.append(_Call(index, "\n".join((msg.content, *args)), args))
            elif msg.role == "tool":
                answer(msg.tool_call_id, msg.content)
            continue
        assert isinstance(msg, AgenticMessage)
        if msg.role == "assistant":
            blocks = msg.content_blocks
            args = tuple(b.arguments for b in blocks if isinstance(b, FunctionToolCall))
            texts = [b.text for b in blocks if isinstance(b, AssistantGenText)]
            for b in blocks:
                if isinstance(b, FunctionToolCall):
                    by_id[b.call_id] = len(calls)
            calls.append(_Call(index, "\n".join((*texts, *args)), args))
        for b in msg.content_blocks:
            if isinstance(b, FunctionToolResult):
                answer(b.call_id, "\n".join(c.text for c in b.content if c.text))
    return [
        _Call(c.index, c.text, c.arguments, tuple(results.get(i, ()))) for i, c in enumerate(calls)
    ]


def _values(arguments: str) -> list[str]:
    """The string values of a call's JSON arguments (its keys name no file or symbol), or the
    text itself when it is not JSON."""
    try:
        data = json.loads(arguments)
    except ValueError:
        return [arguments]
    out: list[str] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return out


def _aims(arguments: Iterable[str]) -> frozenset[str]:
    return frozenset(strings_in(v for a in arguments for v in _values(a)))


def _aims_at(later: frozenset[str], cut: frozenset[str]) -> bool:
    """A later call aims at what the cut one did: a name in common, or a path inside one
    of the cut call's (``dir/file.go`` inside ``dir``)."""
    if later & cut:
        return True
    return any(n.startswith(c.rstrip("/") + "/") for n in later for c in cut)


def _lines(texts: Iterable[str]) -> set[str]:
    return {
        s
        for text in texts
        for line in text.splitlines()
        if len(s := line.strip()) >= _NEW_LINE_CHARS
    }


@dataclass(frozen=True, kw_only=True)
class Truncation:
    """One output an agent cut itself, and what it did next."""

    conversation: str
    call: int
    """The model call (0-based, among the recording's calls) whose tool output was cut."""
    kind: str
    """The notice: one of :data:`MARKERS`."""
    shown_chars: int
    """Characters of the result as the model saw it (the notice included)."""
    original_tokens: int
    """The whole output, in tokens: what one read back sends as new input."""
    went_back: int | None
    """How many calls after the cut the first call going back came (1 is the next), or
    ``None`` when none did within :data:`WINDOW`."""
    recovery_calls: int = 0
    """The consecutive calls going back, from the first."""
    recovery_tokens: int = 0
    """New input they brought (their messages and results), counted."""
    recovery_provider_tokens: int | None = None
    """The same by the provider's prompt tokens, where the recording kept them for each
    recovery call and the call after it."""


def _original_tokens(kind: str, match: re.Match[str], text: str, counter: Any) -> int:
    if kind == "refused":
        return int(match["tokens"])
    shown = max(1, len(text))
    rate = count_text(counter, text) / shown
    if kind == "persisted":
        chars = float(match["size"]) * _SIZE_UNITS[match["unit"] or "B"]
    elif match["chars"] is not None:
        chars = len(text) + int(match["chars"])
    else:  # lines cut: at the mean length of the lines shown
        shown_lines = max(1, text.count("\n") + 1)
        chars = len(text) + int(match["lines"]) * len(text) / shown_lines
    return round(chars * rate)


def truncations(
    conversation: RecordedConversation, *, tokenizer: str = "cl100k_base"
) -> list[Truncation]:
    """Every output the agent cut itself in ``conversation``, with what it did next."""
    counter = get_token_counter(tokenizer)
    calls = _flatten(conversation.messages)
    usage = conversation.usage.prompt_tokens if conversation.usage else {}
    # Per line, where it first came: (call, 0) in a call's own text, (call, 1) in its
    # results. A call's results show something new when one of their lines came first there.
    first: dict[str, tuple[int, int]] = {}
    for position, call in enumerate(calls):
        for line in _lines([call.text]):
            first.setdefault(line, (position, 0))
        for line in _lines(call.results):
            first.setdefault(line, (position, 1))

    def goes_back(j: int, aim: frozenset[str], path: str | None) -> bool:
        later = calls[j]
        if path and any(path in a for a in later.arguments):
            return True
        return _aims_at(_aims(later.arguments), aim) and any(
            first[line] == (j, 1) for line in _lines(later.results)
        )

    out = []
    for position, call in enumerate(calls):
        for text in call.results:
            found = [(k, m) for k, p in MARKERS.items() if (m := p.search(text))]
            if not found:
                continue
            kind, match = found[0]
            aim = _aims(call.arguments)
            path = match["path"] if kind == "persisted" else None
            ahead = range(position + 1, min(position + WINDOW + 1, len(calls)))
            start = next((j for j in ahead if goes_back(j, aim, path)), None)
            recovery: list[int] = []
            while start is not None and start < len(calls) and goes_back(start, aim, path):
                recovery.append(start)
                start += 1
            out.append(
                Truncation(
                    conversation=conversation.name,
                    call=position,
                    kind=kind,
                    shown_chars=len(text),
                    original_tokens=_original_tokens(kind, match, text, counter),
                    went_back=recovery[0] - position if recovery else None,
                    recovery_calls=len(recovery),
                    recovery_tokens=sum(
                        count_text(counter, t)
                        for j in recovery
                        for t in (calls[j].text, *calls[j].results)
                    ),
                    recovery_provider_tokens=_provider_tokens(calls, recovery, usage),
                )
            )
    return out


def _provider_tokens(
    calls: Sequence[_Call], recovery: Sequence[int], usage: Mapping[int, int]
) -> int | None:
    """The rise of the provider's prompt tokens from each recovery call to the next call,
    summed; ``None`` unless the recording kept both for every one (and each rose)."""
    total = 0
    for j in recovery:
        if j + 1 >= len(calls) or calls[j].index not in usage or calls[j + 1].index not in usage:
            return None
        rise = usage[calls[j + 1].index] - usage[calls[j].index]
        if rise <= 0:
            return None
        total += rise
    return total if recovery else None


@dataclass(frozen=True, kw_only=True)
class CorpusRecovery:
    """The truncations of one corpus, and their sums."""

    corpus: str
    runs: int
    truncations: tuple[Truncation, ...] = field(default_factory=tuple)

    def went_back(self, within: int) -> int:
        """Truncations the agent went back for within ``within`` calls."""
        return sum(1 for t in self.truncations if t.went_back is not None and t.went_back <= within)

    @property
    def recovered(self) -> tuple[Truncation, ...]:
        return tuple(t for t in self.truncations if t.went_back is not None)

    def summary(self) -> dict[str, Any]:
        """The figures of the table, as JSON values: means per recovery, and the share of
        the whole outputs' tokens the recoveries brought (a ratio of sums)."""
        rec = self.recovered
        provider = [t.recovery_provider_tokens for t in rec if t.recovery_provider_tokens]
        read_back = sum(t.original_tokens for t in rec)
        return {
            "corpus": self.corpus,
            "runs": self.runs,
            "truncations": len(self.truncations),
            "went_back": {str(w): self.went_back(w) for w in WINDOWS},
            "calls_per_recovery": _mean([t.recovery_calls for t in rec]),
            "tokens_per_recovery": _mean([t.recovery_tokens for t in rec]),
            "provider_tokens_per_recovery": _mean(provider),
            "read_back_tokens": _mean([t.original_tokens for t in rec]),
            "output_share": (
                round(sum(t.recovery_tokens for t in rec) / read_back, 4) if read_back else None
            ),
        }

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary(), "items": [asdict(t) for t in self.truncations]}


def _mean(values: Sequence[int]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def corpus_recovery(
    corpus: str, conversations: Sequence[RecordedConversation], *, tokenizer: str = "cl100k_base"
) -> CorpusRecovery:
    """The truncations of every conversation of a corpus."""
    found = [t for c in conversations for t in truncations(c, tokenizer=tokenizer)]
    return CorpusRecovery(corpus=corpus, runs=len(conversations), truncations=tuple(found))


def pooled(corpora: Sequence[CorpusRecovery]) -> CorpusRecovery:
    """All the corpora as one, named ``all``."""
    return CorpusRecovery(
        corpus="all",
        runs=sum(c.runs for c in corpora),
        truncations=tuple(t for c in corpora for t in c.truncations),
    )


HEADERS = (
    "corpus", "runs", "cut", "back<=1", "back<=3", "back<=5", "calls/recovery",
    "new input tok", "provider tok", "read back tok", "share",
)  # fmt: skip


def table(corpora: Sequence[CorpusRecovery]) -> str:
    """One row per corpus (and ``all`` when there are several): the outputs cut, how many
    were gone back for within 1, 3 and 5 calls, and per recovery the calls and new input
    tokens it took (counted, and by the provider's prompt tokens where kept), beside the
    tokens of the whole output one read back would send; ``share`` is the recoveries'
    tokens over the whole outputs'."""
    rows = [*corpora, pooled(corpora)] if len(corpora) > 1 else list(corpora)
    lines: list[tuple[str, ...]] = [HEADERS]

    def num(value: float | None, digits: int = 0) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    for corpus in rows:
        f = corpus.summary()
        lines.append((
            corpus.corpus, str(f["runs"]), str(f["truncations"]),
            *(str(f["went_back"][str(w)]) for w in WINDOWS),
            num(f["calls_per_recovery"], 2), num(f["tokens_per_recovery"]),
            num(f["provider_tokens_per_recovery"]), num(f["read_back_tokens"]),
            "-" if f["output_share"] is None else f"{f['output_share']:.0%}",
        ))  # fmt: skip
    widths = [max(len(row[i]) for row in lines) for i in range(len(HEADERS))]
    return "".join(
        "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)
        ).rstrip()
        + "\n"
        for row in lines
    )
