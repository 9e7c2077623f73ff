"""The counters' caches: per message by identity, per text by value, and the running
totals of the last list counted. Kept apart from the counting itself."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["CacheInfo", "IdentityCache", "TextCache", "shared_prefix"]

T = TypeVar("T")


@dataclass(frozen=True)
class CacheInfo:
    """How a counter's caches have been used since it was made."""

    message_hits: int
    message_misses: int
    messages_cached: int
    tool_hits: int
    tool_misses: int
    tools_cached: int


class IdentityCache(Generic[T]):
    """Counts of live objects, keyed by ``id``; an entry leaves when its object dies.

    Thread safety: lookups and stores are single dict operations, atomic under the GIL, and
    a hit is trusted only if the stored weakref still points at the very object asked
    about, so a reused id or a racing eviction can cost a recount, never a wrong count.
    The weakref callback takes no lock: GC may run it in a thread that already holds one.
    The hit and miss tallies take no lock either (a hit is on the clear phase's hot path):
    under concurrent use they are statistics, not exact counts.
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[T], int]] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_count(self, obj: T, count: Callable[[T], int]) -> int:
        key = id(obj)
        entry = self._entries.get(key)
        if entry is not None and entry[0]() is obj:
            self.hits += 1
            return entry[1]
        value = count(obj)
        ref = weakref.ref(obj, self._evictor(key))
        self._entries[key] = (ref, value)
        self.misses += 1
        return value

    def _evictor(self, key: int) -> Callable[[weakref.ref[T]], None]:
        entries = self._entries

        def evict(ref: weakref.ref[T]) -> None:
            entry = entries.get(key)
            if entry is not None and entry[0] is ref:
                entries.pop(key, None)

        return evict


def shared_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading items ``a`` and ``b`` share: the same objects, or equal ones (equal
    messages count the same and carry the same flags).

    Compares slices, a loop in C that takes an item as equal on identity before calling
    ``__eq__`` (lists check identity inline, about four times faster than tuples); the
    first difference is found by halving, which compares about ``2n`` items. Two lists or
    two tuples are compared as they are; any other pair as tuples (a list never equals a
    tuple).
    """
    if not (type(a) is type(b) and isinstance(a, list | tuple)):
        a, b = tuple(a), tuple(b)
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], and a[lo:hi] != b[lo:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class TextCache:
    """Counts of texts by value, least recently used first out, bounded in characters.

    The per-message cache goes by identity, which a REST client defeats: it sends the
    whole conversation again on every call, parsed into new objects; and a clear pass
    rewrites a message around blocks that did not change. Hashing a text is far cheaper
    than encoding it (about a hundred times, even for a short one), so equal texts are
    encoded once. A text may be given as the tuple of the pieces it is joined from
    (:meth:`get_or_count_pieces`): the entry then holds the pieces the messages already
    hold, never a joined copy. Each entry is charged its characters plus
    :attr:`ENTRY_CHARS`, so many short texts are bounded as surely as a few long ones.
    """

    ENTRY_CHARS = 200
    """What an entry costs beyond its characters (its slot, key and value), in
    characters: a short text is charged about the memory it takes."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[str | tuple[str, ...], tuple[int, int]] = OrderedDict()
        """Key -> (count, characters charged)."""
        self._lock = threading.Lock()

    def get_or_count(self, text: str, count: Callable[[str], int]) -> int:
        with self._lock:
            entry = self._entries.get(text)
            if entry is not None:
                self._entries.move_to_end(text)
                self.hits += 1
                return entry[0]
        return self._store(text, len(text), count(text))

    def get_or_count_pieces(self, pieces: tuple[str, ...], count: Callable[[str], int]) -> int:
        """The count of ``"".join(pieces)``, joined only when it has to be counted."""
        with self._lock:
            entry = self._entries.get(pieces)
            if entry is not None:
                self._entries.move_to_end(pieces)
                self.hits += 1
                return entry[0]
        return self._store(pieces, sum(map(len, pieces)), count("".join(pieces)))

    def _store(self, key: str | tuple[str, ...], size: int, value: int) -> int:
        charged = size + self.ENTRY_CHARS
        with self._lock:
            self.misses += 1
            if key not in self._entries and charged <= self.max_chars:
                self._entries[key] = (value, charged)
                self.chars += charged
                while self.chars > self.max_chars:
                    _, (_, old_charge) = self._entries.popitem(last=False)
                    self.chars -= old_charge
        return value
