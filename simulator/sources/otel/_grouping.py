"""Model calls chained into conversations: which call continues which, which
conversation is a session's main one, and the keys that name them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from simulator.sources.otel._messages import Call, loads

__all__ = ["conversations"]


def conversations(calls: Sequence[tuple[str, Call]]) -> list[tuple[str, list[Call]]]:
    """Each conversation of ``calls`` (``(session key, call)`` pairs in the order the
    calls started) with its key: ``KEY`` for a session's main conversation, ``KEY/side-N``
    for the others.

    Calls of one session key (none is a key of its own) chain as :func:`_chains` says. A
    conversation with no session key takes the trace id of its first call. Of the
    conversations under one key the main one has the most calls (then the most messages,
    then the earliest start); the rest are numbered from 1 in the order of their first
    calls: a title or a classifier the agent asked on the side.
    """
    sessions: dict[str, list[Call]] = {}
    for key, call in calls:
        sessions.setdefault(key, []).append(call)
    keyed: dict[str, list[list[Call]]] = {}
    for key, session in sessions.items():
        for chain in _chains(session):
            keyed.setdefault(key or chain[0].span.trace_id, []).append(chain)
    out = []
    for key, chains in keyed.items():
        main = min(
            chains,
            key=lambda c: (-len(c), -len(c[-1].input) - len(c[-1].output), _started(c)),
        )
        out.append((key, main))
        sides = sorted((c for c in chains if c is not main), key=_started)
        out.extend((f"{key}/side-{n}", chain) for n, chain in enumerate(sides, start=1))
    return out


def _started(chain: Sequence[Call]) -> tuple[int, int]:
    return chain[0].span.start, chain[0].span.order


def _chains(calls: Sequence[Call]) -> list[list[Call]]:
    """``calls`` as chains: a call joins the chain whose last call's input and output
    its own input starts with (each call is sent the whole history, its tool results
    perhaps replaced since: :func:`_comparable`), preferring a chain
    of its own trace, then the longest such history, then the latest; a call that
    continues none starts a chain. A retried call, sent what the failed one was (which
    answered nothing), continues it too."""
    chains: list[list[Call]] = []
    tails: list[_Messages] = []  # each chain's last call's input and output
    for call in calls:
        sent = _Messages([m for _, m in call.input])
        best: tuple[tuple[bool, int, int, int], int] | None = None
        for n, (chain, tail) in enumerate(zip(chains, tails, strict=True)):
            if tail.messages and sent.starts_with(tail):
                last = chain[-1].span
                rank = (
                    last.trace_id == call.span.trace_id,
                    len(tail.messages),
                    last.start,
                    last.order,
                )
                best = max(best, (rank, n)) if best is not None else (rank, n)
        history = _Messages(sent.messages + [m for _, m in call.output])
        if best is None:
            chains.append([call])
            tails.append(history)
        else:
            chains[best[1]].append(call)
            tails[best[1]] = history
    return chains


class _Messages:
    """Messages compared as :func:`_comparable` keys, which are made only when plain
    equality cannot settle it: a call repeats its chain's history as equal values, and
    serialising every message of every call again would cost most of a long session's
    reading."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages
        self._keys: list[str] | None = None

    def keys(self, count: int) -> list[str]:
        if self._keys is None:
            self._keys = [_comparable(m) for m in self.messages]
        return self._keys[:count]

    def starts_with(self, other: _Messages) -> bool:
        count = len(other.messages)
        if len(self.messages) < count:
            return False
        head = self.messages[:count]
        if head == other.messages and all(map(_alike, head, other.messages)):
            return True
        return self.keys(count) == other.keys(count)


def _alike(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b``, already equal, are so as JSON too: Python holds ``1``,
    ``1.0`` and ``True`` equal, JSON does not. (Keys are strings: the messages come from
    JSON and attribute names.) Equal strings are alike, and most values are strings."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return all(type(v) is str or _alike(v, b[k]) for k, v in a.items())
    if kind is list:
        return all(type(v) is str or _alike(v, w) for v, w in zip(a, b, strict=True))
    return True


def _comparable(message: Mapping[str, Any]) -> str:
    """``message`` as a key with its calls' arguments parsed, so spacing does not tell
    calls apart. A tool result is known by its call id alone: context management (the
    engine's clear pass, for one) replaces results already sent, and the call that sees
    the placeholder still continues the conversation."""
    if message.get("role") == "tool" and message.get("tool_call_id"):
        return json.dumps({"role": "tool", "tool_call_id": message["tool_call_id"]})
    calls = [
        {**c, "function": {**c["function"], "arguments": loads(c["function"]["arguments"])}}
        for c in message.get("tool_calls", [])
    ]
    return json.dumps({**message, "tool_calls": calls} if calls else message, sort_keys=True)
