"""Readers for real-world recordings that are not one of the engine's wire formats.

Each module turns one kind of recording into :class:`Converted` values (a conversation
in a wire format the engine parses, with what the recording says of its model, bill and
context strategy); it only reshapes JSON and names the field at fault.
:mod:`simulator.importers` detects the kind and parses the messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simulator.recording import ImportError_

__all__ = ["ABOUT_CHARS", "Converted", "as_int", "as_object", "as_text", "excerpt"]


@dataclass(frozen=True, kw_only=True)
class Converted:
    """One conversation of a recording, reshaped into a wire format."""

    label: str
    fmt: str
    """``"openai_chat"`` (``payload`` has ``messages`` and ``tools``) or ``"anthropic"``
    (``system``, ``messages`` and ``tools``)."""
    payload: Mapping[str, Any]
    model: str = ""
    task: str = ""
    """What the agent was asked to do, as the recording names it (``django__django-14434``,
    ``task 3, trial 0``, ``session 5c0375b4``): short, for titles and ids."""
    about: str = ""
    """A line saying what the run was about (the session's summary, the customer's
    opening), for titles only; empty when the recording says nothing more."""
    agent: str = ""
    """The agent, when the recording names it more closely than its format does
    (``OpenHands CodeActAgent``)."""
    function_calling: bool = True
    """Whether the agent called its tools through the provider's function calling (so
    the provider was sent their schemas); ``False`` where it wrote its actions as text,
    made into tool calls by the reader (SWE-agent 0.x, mini-swe-agent)."""
    prompt_tokens: Mapping[int, int] = field(default_factory=dict)
    """Provider-reported prompt tokens by index into ``payload["messages"]`` (of the
    assistant message each call produced)."""
    cached_prompt_tokens: Mapping[int, int] = field(default_factory=dict)
    """Of those prompt tokens, the ones the provider read from its cache, by the same index."""
    completion_tokens: Mapping[int, int] = field(default_factory=dict)
    """Provider-reported output tokens of each call, by the same index."""
    call_times: Mapping[int, float] = field(default_factory=dict)
    """When each call was answered (Unix time in seconds, as the provider stamped it),
    by the same index."""
    total_prompt_tokens: int | None = None
    api_calls: int | None = None
    cost: float | None = None
    """What the run cost by its own count (in dollars), when the recording says."""
    strategy: Mapping[str, Any] = field(default_factory=dict)
    locations: Mapping[int, str] = field(default_factory=dict)
    """Where each payload message came from in the file (``history[4]``,
    ``simulations[0].messages[7]``; ``:12: message`` for line 12), for error messages."""


ABOUT_CHARS = 70
"""The longest line saying what a run was about (``Converted.about``), cut with an
ellipsis."""


def excerpt(text: str, limit: int) -> str:
    """``text`` on one line (runs of white space made one space), cut to ``limit``
    characters with an ellipsis when longer."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def as_object(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def as_int(value: Any) -> int | None:
    """``value`` when it is a JSON integer (not a boolean), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_text(content: Any, where: str) -> str:
    """A content string, or the text parts of a content list joined; ``where`` (``FILE:
    history[3]``) names the message in errors."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            if not isinstance(part, Mapping):
                raise ImportError_(f"{where}.content[{j}]: expected a part, got {part!r}")
            text = part.get("text")
            if part.get("type", "text") == "text" and not isinstance(text, str):
                raise ImportError_(f"{where}.content[{j}].text: expected a string, got {text!r}")
            if isinstance(text, str):
                texts.append(text)  # images of multimodal runs: not text, not counted
        return "".join(texts)
    raise ImportError_(
        f"{where}.content: expected a string or a list of parts, got {type(content).__name__}"
    )
