"""Telling re-fetches from repeated calls.

A re-fetch is the agent asking again for what was hidden from it, and getting it back;
a repeated call is one it would have made anyway (:class:`Repeats` tells them apart).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Repeats"]


class Repeats:
    """Counts re-fetches and repeated calls over one replay.

    A call with the same tool and arguments (equal as JSON) as an earlier one whose result
    the context no longer shows whole *may* be a re-fetch. It is one only if it got the
    same output back, or a run of its whole lines (a pager showing a page of what was read
    before); an empty output is never one. When the output differs, the world had changed
    (a test run after an edit, ``goto N`` in a pager that moved): the agent would have made
    that call anyway, so it is a *repeated call*. A call whose result never arrived is a
    repeated call too: nothing shows it was a re-fetch.
    """

    def __init__(self) -> None:
        self.refetches = 0
        self.repeated = 0
        self._waiting: dict[str, list[Sequence[str]]] = {}
        """Call id -> the hidden outputs of the earlier same calls, one list per call
        made with that id (models do reuse ids), settled in order."""

    def copy(self) -> Repeats:
        """An independent copy, for a replay that forks here (the outputs are shared)."""
        other = Repeats()
        other.refetches = self.refetches
        other.repeated = self.repeated
        other._waiting = {k: list(v) for k, v in self._waiting.items()}
        return other

    def asked(self, call_id: str, hidden_outputs: Sequence[str]) -> None:
        """A call repeating earlier calls whose outputs are all hidden now."""
        self._waiting.setdefault(call_id, []).append(hidden_outputs)

    def answered(self, call_id: str, output: str) -> None:
        """The output of call ``call_id`` arrived."""
        waiting = self._waiting.get(call_id)
        if not waiting:
            return
        hidden = waiting.pop(0)
        if not waiting:
            del self._waiting[call_id]
        if output and any(_within(output, earlier) for earlier in hidden):
            self.refetches += 1
        else:
            self.repeated += 1

    def close(self) -> None:
        """The replay ended: calls still waiting never got an output."""
        self.repeated += sum(len(w) for w in self._waiting.values())
        self._waiting.clear()


def _within(output: str, earlier: str) -> bool:
    """``output`` is ``earlier``, or a run of its whole lines (a page of it): a bare
    substring would let any short output ("OK", "1") pass for a re-fetch."""
    if output == earlier:
        return True
    lines = output.splitlines()
    return (
        bool(lines) and f"\n{chr(10).join(lines)}\n" in f"\n{chr(10).join(earlier.splitlines())}\n"
    )
