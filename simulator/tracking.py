"""What the context a replay sends holds, kept up to date from one model call to the next.

A context grows by a few messages a call and changes in the middle only where a clear
pass applies, so :class:`Tracker` keeps running figures (prefix tokens, results still
whole) and moves to the next context at the cost of its new positions only: summing
the whole context at every call made a replay quadratic in its length.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from reduction_app.engine import AgenticMessage
from reduction_app.engine.inspect import classify
from simulator.metering import Meter
from simulator.transcript import Key, unflagged

__all__ = ["Tracker", "shared_prefix"]


def shared_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items ``a`` and ``b`` share, by identity."""
    n = min(len(a), len(b))
    if all(map(operator.is_, a[:n], b[:n])):
        return n
    for i in range(n):
        if a[i] is not b[i]:
            return i
    return n


class Tracker:
    """The original results arrived so far, and the measures of the context last sent."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.originals: list[Any] = []
        """Every original result (chat message or result block), kept alive so that the
        ``id`` keys below stay theirs."""
        self.keys: dict[int, Key] = {}
        self.texts: dict[int, str] = {}
        self.tokens: dict[int, int] = {}
        self.total = 0
        """Tokens of every original result arrived so far."""
        self.by_key: dict[Key, list[int]] = {}
        self.sent: list[Any] = []
        """The context of the last call, as sent."""
        self._prefix: list[int] = [0]
        """Tokens of ``sent[:i]``, for each ``i``."""
        self._owned: list[tuple[int, ...]] = []
        """Per position of ``sent``: the original results it holds whole."""
        self._present: dict[int, int] = {}
        """Original result -> how many positions of ``sent`` hold it whole."""
        self.seen = 0
        """Tokens of the original results ``sent`` holds whole (each counted once)."""
        self._visible: dict[Key, int] = {}
        """Call key -> how many of its original results ``sent`` holds whole."""

    def copy(self) -> Tracker:
        """An independent copy (the meter is shared: its counts are values)."""
        other = Tracker.__new__(Tracker)
        other.__dict__.update(self.__dict__)
        other.originals = list(self.originals)
        other.keys = dict(self.keys)
        other.texts = dict(self.texts)
        other.tokens = dict(self.tokens)
        other.by_key = {k: list(v) for k, v in self.by_key.items()}
        other.sent = list(self.sent)
        other._prefix = list(self._prefix)
        other._owned = list(self._owned)
        other._present = dict(self._present)
        other._visible = dict(self._visible)
        return other

    # Results as they arrive -------------------------------------------------------------

    def arrived(self, item: Any, key: Key, tokens: int) -> None:
        """An original result arrived (the same object again takes its new call's key)."""
        i = id(item)
        self.originals.append(item)
        old = self.keys.get(i)
        if old is None:
            self.total += tokens
            self.by_key.setdefault(key, []).append(i)
        elif old != key:
            ids = self.by_key[old]
            ids.remove(i)
            if not ids:
                del self.by_key[old]
            self.by_key.setdefault(key, []).append(i)
            if self._present.get(i):
                self._visible[old] -= 1
                self._visible[key] = self._visible.get(key, 0) + 1
        self.keys[i] = key
        self.tokens[i] = tokens

    def answered(self, item: Any, text: str) -> None:
        """The output text of an arrived result."""
        self.texts[id(item)] = text

    # The context sent -------------------------------------------------------------------

    @property
    def body(self) -> int:
        """Tokens of every message of the context last sent."""
        return self._prefix[-1]

    @property
    def share(self) -> float | None:
        """The share of the arrived results' tokens still whole in the context last sent
        (``None`` before any result arrived)."""
        return self.seen / self.total if self.tokens else None

    def send(self, context: Sequence[Any]) -> int:
        """Measure ``context`` as the one sent now; returns how many leading messages it
        shares (by identity) with the context sent before."""
        old = self.sent
        same = shared_prefix(old, context)
        for owned in self._owned[same:]:
            for i in owned:
                self._hide(i)
        del self._owned[same:]
        del self._prefix[same + 1 :]
        total = self._prefix[-1]
        for msg in context[same:]:
            total += self.meter.message(msg)
            self._prefix.append(total)
            owned = self._whole(msg)
            self._owned.append(owned)
            for i in owned:
                self._show(i)
        self.sent = list(context)
        return same

    def cached_body(self, previous: Sequence[Any], same: int) -> int:
        """Tokens of the longest prefix the context last sent shares with ``previous``
        (the context sent before it; ``same`` leading messages are the same objects),
        where a message equal but for the clear phase's processed flag still counts."""
        end = same
        for a, b in zip(previous[same:], self.sent[same:], strict=False):
            if a is not b and unflagged(a) != unflagged(b):
                break
            end += 1
        return self._prefix[end]

    def hidden(self, key: Key) -> list[str] | None:
        """The outputs of the arrived results with call key ``key`` when none of them is
        whole in the context last sent; ``None`` when one is, or none arrived."""
        ids = self.by_key.get(key)
        if not ids or self._visible.get(key):
            return None
        return [self.texts.get(i, "") for i in ids]

    def _whole(self, msg: Any) -> tuple[int, ...]:
        if classify(msg) != "tool_result":
            return ()
        items = (msg, *msg.content_blocks) if isinstance(msg, AgenticMessage) else (msg,)
        return tuple(id(item) for item in items if id(item) in self.keys)

    def _show(self, i: int) -> None:
        n = self._present.get(i, 0)
        self._present[i] = n + 1
        if n == 0:
            self.seen += self.tokens[i]
            key = self.keys[i]
            self._visible[key] = self._visible.get(key, 0) + 1

    def _hide(self, i: int) -> None:
        n = self._present[i]
        if n > 1:
            self._present[i] = n - 1
            return
        del self._present[i]
        self.seen -= self.tokens[i]
        self._visible[self.keys[i]] -= 1
