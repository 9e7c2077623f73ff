"""Digests: what a cleared result's placeholder keeps when ``clear_digest_tokens > 0``
(docs/behaviour.md §4.7), so the model can judge whether to read the file back. The
budget counts four characters a token whatever the config's counter, so a config always
gives the same placeholder; digests are deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["CHARS_PER_TOKEN", "Digester", "default_digest", "fit_digest", "search_matches"]

Digester = Callable[[str], str]
"""The text of a tool result → its digest (cut to the budget by the engine)."""

CHARS_PER_TOKEN = 4
"""How a digest's token budget becomes characters: the approximate counter's rule."""

# `path:line:` (grep -n, ripgrep) or `path:line-` (a context line of grep -C).
_SEARCH_LINE = re.compile(r"(?P<path>[^\s:]+):\d+[:-]")


def search_matches(lines: list[str]) -> dict[str, int]:
    """Files named by search output (``path:line:text`` lines), with their match counts,
    in order of first appearance; empty when the lines do not look like search output
    (fewer than two such lines, or fewer than half of the non-empty ones)."""
    counts: dict[str, int] = {}
    matched = 0
    non_empty = 0
    for line in lines:
        if not line.strip():
            continue
        non_empty += 1
        found = _SEARCH_LINE.match(line)
        if found is not None:
            matched += 1
            path = found.group("path")
            counts[path] = counts.get(path, 0) + 1
    if matched < 2 or matched * 2 < non_empty:
        return {}
    return counts


def default_digest(text: str) -> str:
    """Size, the files a search matched (if it was one), then the text's first lines."""
    lines = text.splitlines()
    head = f"{_count(len(lines), 'line')}, {_count(len(text), 'character')}"
    files = search_matches(lines)
    if files:
        listed = ", ".join(f"{path} ({count})" for path, count in files.items())
        head += f"; matches in {_count(len(files), 'file')}: {listed}"
    return "\n".join([head, *lines])


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"


def fit_digest(digest: str, budget_tokens: int) -> str:
    """``digest`` cut to ``budget_tokens`` (four characters a token): whole lines while
    they fit, and a first line longer than the budget cut with an ellipsis."""
    limit = budget_tokens * CHARS_PER_TOKEN
    if len(digest) <= limit:
        return digest
    lines = digest.split("\n")
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = len(line) + (1 if kept else 0)
        if used + cost > limit:
            break
        kept.append(line)
        used += cost
    if not kept:
        return digest[: max(limit - 1, 0)] + "…"
    return "\n".join(kept)
