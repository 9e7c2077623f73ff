"""The prefix a recording left out, as the pages offer and show it.

A Claude Code log keeps the messages, not the system prompt, tool schemas and CLAUDE.md
files sent before them; every replay counts the prefix :mod:`simulator.prefix` infers.
What this module owns is the switch Compare and Tune offer to leave it out
(``prefix=off`` in their address); the rest of the app counts it.
"""

from __future__ import annotations

from django.http import QueryDict

from reduction_app.conversations.selectors import infers_prefix

__all__ = ["PREFIX_OFF", "PREFIX_PARAM", "infers_prefix", "prefix_params", "prefix_wanted"]

PREFIX_PARAM = "prefix"
"""The query parameter of the switch: a hidden ``off`` and, ticked, a checkbox ``on``."""
PREFIX_OFF = "off"


def prefix_wanted(params: QueryDict) -> bool:
    """Whether the page's replays count the inferred prefix: yes unless the last
    ``prefix`` value is ``off`` (the form sends a hidden ``off``, then ``on`` when the
    box is ticked)."""
    values = params.getlist(PREFIX_PARAM)
    return not values or values[-1] != PREFIX_OFF


def prefix_params(wanted: bool) -> list[tuple[str, str]]:
    """The switch in a page's address: only when it is off (on is the default)."""
    return [] if wanted else [(PREFIX_PARAM, PREFIX_OFF)]
