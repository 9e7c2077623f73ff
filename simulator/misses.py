"""Misses: hidden content the agent used later.

Re-fetches see the agent asking again for what was hidden; misses find it *needing* what
was hidden, from the strings its recorded messages use that the context sent did not
show (the rules: docs/simulator.md, "Misses and cost with recovery"). :class:`Strings`
indexes a conversation once; :class:`Misses` follows one replay's contexts as running
counts, as the tracker does for tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reduction_app.engine import (
    AgenticMessage,
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    Message,
)
from reduction_app.engine.inspect import render_tool
from simulator.metering import message_texts

__all__ = [
    "RECOVERY",
    "STRING",
    "Misses",
    "Part",
    "RecoveryPrice",
    "Strings",
    "is_name",
    "strings_in",
]


@dataclass(frozen=True, slots=True)
class RecoveryPrice:
    """What reading back one miss costs: a call sending the context of the call that
    missed with part of the hidden output as new input, and more calls sending that
    context again."""

    calls: float
    """Model calls spent going back, each sending the context of the call that missed."""
    output_share: float
    """The share of the whole hidden output those calls bring as new input: agents fetch
    the part they need (a ``grep``, a range of lines), not all of it."""


RECOVERY = RecoveryPrice(calls=1.7, output_share=0.21)
"""The price of a miss, measured on real agents that cut their own outputs
(:mod:`simulator.recovery`, ``python -m simulator recovery``): on the 43 mini-swe-agent
runs and the long Claude Code sessions (26 conversations) of the recordings folder, 33 of
57 cut outputs
were gone back for within 5 calls, in 1.70 calls on average, bringing 21% of the
outputs' tokens as new input (ratio of the sums)."""

STRING = re.compile(r"[A-Za-z_][A-Za-z0-9_./:-]{7,}")
"""A candidate string: 8 or more characters of identifier, path or dotted name, starting
with a letter or underscore. It runs on through dots and colons, so a sentence's last
period stays on the word before it; :func:`is_name` keeps the names among them."""

_NAME_MARK = re.compile(r"[0-9_/]|[.:](?![.:]*$)|(?<=.)[A-Z]")
"""What makes a candidate a name: an underscore, slash or digit anywhere; a dot or colon
with more than dots and colons after it (a trailing one ends a sentence or a label); a
capital letter after the first character."""


def is_name(string: str) -> bool:
    """Whether a candidate string is a name (``getValue``, ``LLVM_DIR``, ``a.py:12``)
    rather than a plain word (``actually``, ``Makefile``, ``expression.``)."""
    return _NAME_MARK.search(string) is not None


def strings_in(texts: Iterable[str]) -> tuple[str, ...]:
    """The names among the strings of ``texts``, each once, in order of first appearance.
    Plain words are dropped here, where a conversation's strings are indexed (once per
    message), so no replay step filters them again."""
    found: dict[str, None] = {}
    search = _NAME_MARK.search
    for text in texts:
        if text:
            found.update(dict.fromkeys(s for s in STRING.findall(text) if search(s)))
    return tuple(found)


def _used_texts(msg: Any) -> list[str]:
    """What an assistant message says itself: its text and its tool calls' arguments."""
    if isinstance(msg, Message):
        texts = [msg.content]
        texts += [p.text for p in msg.assistant_gen_multi_content if p.type == "text"]
        return texts + [call.arguments for call in msg.tool_calls]
    assert isinstance(msg, AgenticMessage)
    return [
        b.text if isinstance(b, AssistantGenText) else b.arguments
        for b in msg.content_blocks
        if isinstance(b, AssistantGenText | FunctionToolCall)
    ]


def _part_texts(item: Any) -> list[str]:
    """The output of an original result: a chat tool message or a result block."""
    if isinstance(item, FunctionToolResult):
        return [c.text for c in item.content if c.text]
    return message_texts(item)


@dataclass(frozen=True, slots=True)
class Part:
    """One original tool output that a context may hide."""

    message_index: int
    """Where its message sits in the recorded conversation."""
    arrival: Any
    """Its :class:`~simulator.prepared.Arrival` (the tool's name, the original item)."""


class Strings:
    """The strings of one conversation's messages and parts, worked out once and shared
    by every replay of it (nothing here depends on a config)."""

    def __init__(
        self,
        messages: Sequence[Any],
        calls: Iterable[int],
        arrivals: Mapping[int, Sequence[Any]],
        tools: Sequence[Any],
    ) -> None:
        self._messages: dict[int, tuple[Any, frozenset[str]]] = {}
        self.used: dict[int, tuple[str, ...]] = {
            index: strings_in(_used_texts(messages[index])) for index in sorted(calls)
        }
        """Per model call (its message index): the strings its assistant message uses."""
        self.parts_with: dict[str, list[Part]] = {}
        """Per string: the parts that hold it, in order of arrival."""
        for index in sorted(arrivals):
            for arrival in arrivals[index]:
                part = Part(index, arrival)
                for string in strings_in(_part_texts(arrival.item)):
                    self.parts_with.setdefault(string, []).append(part)
        self.tools = frozenset(strings_in(render_tool(t) for t in tools))
        """The strings of the tool schemas, sent with every call."""

    def of(self, msg: Any) -> frozenset[str]:
        """The strings of a message as sent: its texts, tool calls and outputs."""
        hit = self._messages.get(id(msg))
        if hit is not None and hit[0] is msg:
            return hit[1]
        found = frozenset(strings_in(message_texts(msg)))
        self._messages[id(msg)] = (msg, found)
        return found


class Misses:
    """The parts one replay has missed so far, and the strings of the context last sent."""

    def __init__(self, strings: Strings) -> None:
        self.strings = strings
        self._visible: dict[str, int] = {}
        """String -> how many positions of the context last sent hold it."""
        self._sent: list[Any] = []
        """The context last sent."""
        self._positions: list[frozenset[str]] = []
        """Per position of ``_sent``, its strings."""
        self._missed: set[int] = set()
        """The missed parts, by the identity of their original item."""

    def copy(self) -> Misses:
        """An independent copy, for a replay that forks here (the index is shared)."""
        other = Misses.__new__(Misses)
        other.strings = self.strings
        other._visible = dict(self._visible)
        other._sent = self._sent  # replaced, never changed, by send
        other._positions = list(self._positions)
        other._missed = set(self._missed)
        return other

    def send(self, context: Sequence[Any], same: int) -> None:
        """``context`` is sent now; its first ``same`` messages are those of the context
        sent before, at the same positions. After them, a position holding the same
        message as before changes nothing either: a clear pass replaces a few results
        in place, so only those are counted again."""
        visible = self._visible
        sent = self._sent
        positions = self._positions
        for i in range(same, max(len(sent), len(context))):
            if i < len(sent) and i < len(context) and sent[i] is context[i]:
                continue
            if i < len(sent):
                for string in positions[i]:
                    n = visible[string]
                    if n == 1:
                        del visible[string]
                    else:
                        visible[string] = n - 1
            if i < len(context):
                found = self.strings.of(context[i])
                if i < len(positions):
                    positions[i] = found
                else:
                    positions.append(found)
                for string in found:
                    visible[string] = visible.get(string, 0) + 1
        del positions[len(context) :]
        self._sent = list(context)

    def missed_at(self, message_index: int) -> list[tuple[Part, str]]:
        """The parts the model call at ``message_index`` misses, given the context last
        sent is its own, each with the first string that showed it."""
        out = []
        strings = self.strings
        for string in strings.used.get(message_index, ()):
            if string in self._visible or string in strings.tools:
                continue
            parts = [
                p for p in strings.parts_with.get(string, ()) if p.message_index < message_index
            ]
            if not parts or any(id(p.arrival.item) in self._missed for p in parts):
                continue
            self._missed.add(id(parts[0].arrival.item))
            out.append((parts[0], string))
        return out
