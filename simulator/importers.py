"""Reading recorded conversations: the engine's wire formats, and real-world recordings.

One place decides what a file holds (one conversation or many, in a wire format or as a
recording of :mod:`simulator.sources`) and parses every message through
``engine.formats``; errors name the file, line and field. A recording with no model call
is refused: it is almost always a file read as the wrong format.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reduction_app.engine import FormatError, ToolInfo, formats
from simulator.recording import ImportError_, ProviderUsage, RecordedConversation
from simulator.sources import (
    ABOUT_CHARS,
    Converted,
    claude_code,
    excerpt,
    inspect_logs,
    mini_swe_agent,
    openhands,
    otel,
    swe_agent,
    tau2,
)
from simulator.sources.openhands import openhands_to_openai
from simulator.transcript import model_calls

__all__ = [
    "FORMATS",
    "RECORDING_FORMATS",
    "TRACES_SOURCE",
    "ImportError_",
    "Omission",
    "RecordedConversation",
    "RecordingFormat",
    "conversation_from_json",
    "detect_format",
    "in_words",
    "load_conversations",
    "load_conversations_bytes",
    "load_files",
    "omitted_parts",
    "openhands_to_openai",
    "recording_files",
    "recording_omits",
    "recording_title",
]

TRACES_SOURCE = "otel"
"""The format of OpenTelemetry traces: what ``--format`` names them, and the source of the
conversations read from them (from files, or live from the app's OTLP endpoint)."""


@dataclass(frozen=True)
class Omission:
    """A part of what the model was sent that a recording format may leave out."""

    what: str
    """The part, as a page names it: ``"the system prompt"``."""
    unless: str = ""
    """When a recording of the format does keep it after all: ``"system"`` (it holds a
    system prompt), ``"tools"`` (it holds tool schemas, or its agent wrote its actions as
    text, so none were sent); ``""``: never kept."""


@dataclass(frozen=True, kw_only=True)
class RecordingFormat:
    """One format ``--format`` takes: what the app calls it, whose runs it records and
    what of the model's input it leaves out (the one place each is declared)."""

    name: str
    label: str
    """What pages call a file of the format: ``"Claude Code log"``."""
    agent: str = ""
    """The agent whose own recordings these are (``"Claude Code"``); empty for a wire
    format, which any client may write."""
    omits: tuple[Omission, ...] = ()
    """What a recording of the format may leave out of what the model was sent."""
    prefix_inferred: bool = False
    """Whether what it leaves out is sent before the messages of every request, so that
    replays infer its size from the provider's counts and add it (``simulator.prefix``)."""


_SYSTEM_PROMPT = Omission("the system prompt", unless="system")
_TOOL_SCHEMAS = Omission("the tool schemas", unless="tools")

RECORDING_FORMATS: Mapping[str, RecordingFormat] = {
    fmt.name: fmt
    for fmt in (
        *(RecordingFormat(name=wire.name, label=wire.label) for wire in formats.FORMATS.values()),
        RecordingFormat(
            name="tau_bench",
            label="τ-bench trajectory",
            agent="tau-bench agent",
            omits=(_TOOL_SCHEMAS,),
        ),
        RecordingFormat(
            name="tau2",
            label="τ²-bench simulation",
            agent="tau2-bench agent",
            omits=(Omission("the agent's instructions around the domain policy"), _TOOL_SCHEMAS),
        ),
        RecordingFormat(
            name="openhands",
            label="OpenHands run",
            agent="OpenHands",
            omits=(_SYSTEM_PROMPT, _TOOL_SCHEMAS),
        ),
        RecordingFormat(
            name="swe_agent",
            label="SWE-agent trajectory",
            agent="SWE-agent",
            omits=(_TOOL_SCHEMAS,),
        ),
        RecordingFormat(
            name="mini_swe_agent", label="mini-swe-agent trajectory", agent="mini-swe-agent"
        ),
        RecordingFormat(
            name="claude_code",
            label="Claude Code log",
            agent="Claude Code",
            omits=(_SYSTEM_PROMPT, _TOOL_SCHEMAS, Omission("the CLAUDE.md files")),
            prefix_inferred=True,
        ),
        RecordingFormat(name="inspect", label="Inspect AI log", agent="Inspect AI"),
        RecordingFormat(name=TRACES_SOURCE, label="OpenTelemetry traces"),
    )
}
"""Every format ``--format`` takes, by name: the engine's wire formats
(``engine.formats.FORMATS``), then the recordings read by :mod:`simulator.sources`."""

FORMATS = tuple(RECORDING_FORMATS)
"""What ``--format`` takes: the names of :data:`RECORDING_FORMATS`, in its order."""


TITLE_CHARS = 300
"""The longest title (``Conversation.title``)."""


def recording_title(recorded: RecordedConversation) -> str:
    """``TASK[: ABOUT] · AGENT · MODEL``, with what the recording says of each (its label
    when it names no task): ``django__django-14434 · mini-swe-agent ·
    gemini-3-pro-preview``."""
    head = recorded.task or recorded.name
    if recorded.about:
        head = f"{head}: {recorded.about}"
    title = " · ".join(part for part in (head, recorded.agent, recorded.model) if part)
    return title[:TITLE_CHARS]


def omitted_parts(source: str, *, has_system: bool, has_tools: bool) -> tuple[str, ...]:
    """What a recording read as ``source`` left out of what the model was sent (as
    :data:`RECORDING_FORMATS` declares it): ``has_system`` and ``has_tools`` say whether
    it holds a system prompt, and tool schemas (or needed none)."""
    fmt = RECORDING_FORMATS.get(source)
    kept = {"system": has_system, "tools": has_tools}
    return tuple(o.what for o in (fmt.omits if fmt else ()) if not kept.get(o.unless, False))


def in_words(parts: Sequence[str]) -> str:
    """``["a", "b", "c"]`` → ``a, b and c``: what a recording left out, in a sentence."""
    if len(parts) < 2:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def recording_omits(recorded: RecordedConversation) -> tuple[str, ...]:
    """:func:`omitted_parts` of one read recording."""
    messages = recorded.messages
    has_system = bool(messages) and getattr(messages[0], "role", "") == "system"
    has_tools = bool(recorded.tools) or not recorded.function_calling
    return omitted_parts(recorded.source, has_system=has_system, has_tools=has_tools)


_SOURCES = {
    "tau2": tau2,
    "openhands": openhands,
    "swe_agent": swe_agent,
    "mini_swe_agent": mini_swe_agent,
    "inspect": inspect_logs,
}

# Fields a file may add beside a wire format's own (``WireFormat.body_fields``).
_FILE_FIELDS = frozenset({"name", "title"})


def _located(where: str, path: str, exc: FormatError, bare: bool, container: str) -> str:
    """``FILE[:LINE]: FIELD: problem``, FIELD the JSON path from the top of the file (or
    of the JSONL line) to the offending value."""
    field = exc.where
    if bare and (field == container or field.startswith(container + "[")):
        field = field[len(container) :]
    elif path and field:
        field = "." + field
    location = (path + field).lstrip(".")
    return f"{where}: {location}: {exc.problem}" if location else f"{where}: {exc.problem}"


def _parse(fmt: str, data: Any, where: str, path: str = "") -> tuple[list[Any], list[ToolInfo]]:
    """Messages and tools of one conversation in ``fmt``; ``path`` locates ``data`` in
    the file for error messages."""
    wire = formats.FORMATS.get(fmt)
    if wire is None:
        raise ImportError_(f"{where}: unknown format {fmt!r}; expected one of {list(FORMATS)}")
    bare = isinstance(data, list)
    try:
        # A bare list of messages is a whole conversation only where no system parameter
        # would sit beside it; otherwise the file holds a request body.
        if bare and not wire.takes_system:
            return wire.parse_messages(data, None), []
        _check_keys(data, wire.body_fields | _FILE_FIELDS, where, path)
        return (
            wire.parse_messages(data.get(wire.messages_key, []), data.get("system")),
            wire.parse_tools(data.get("tools", [])),
        )
    except FormatError as exc:
        raise ImportError_(_located(where, path, exc, bare, wire.messages_key)) from exc


def _check_keys(data: Any, allowed: AbstractSet[str], where: str, path: str) -> None:
    at = f"{where}: {path}" if path else where
    if not isinstance(data, Mapping):
        raise ImportError_(f"{at}: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ImportError_(f"{at}: unknown field {unknown[0]!r}")


def detect_format(data: Any, *, where: str = "input") -> str:
    """Guess the format of one parsed JSON value.

    A list is tau-bench when its items have ``traj``, Responses when any item has a
    ``type`` (chat messages never do), else OpenAI chat. An object is a mini-swe-agent
    trajectory with a ``trajectory_format`` naming mini-swe-agent (or ``info`` and
    ``messages`` beside any ``trajectory_format``: the reader refuses the versions it does
    not know, naming them); τ²-bench with ``info`` and ``simulations``; with ``history``,
    a SWE-agent trajectory when its entries have roles (or a ``trajectory`` sits beside
    it), else OpenHands; an Inspect AI log with ``eval`` beside ``samples`` or
    ``version``; OpenTelemetry traces with ``resourceSpans``; Responses with
    ``input``, Anthropic with ``system`` or ``tool_use`` / ``tool_result`` blocks, else
    OpenAI chat. (Claude Code logs, and JSONL files of traces, are told apart by
    :func:`load_conversations`, from their lines.)
    """
    if isinstance(data, list):
        items = [item for item in data if isinstance(item, Mapping)]
        if items and "traj" in items[0]:
            return "tau_bench"
        if any("type" in item for item in items):
            return "openai_responses"
        return "openai_chat"
    if isinstance(data, Mapping):
        if otel.looks_like(data):
            return "otel"
        if mini_swe_agent.looks_like(data):
            return "mini_swe_agent"
        if tau2.looks_like(data):
            return "tau2"
        if inspect_logs.looks_like(data):
            return "inspect"
        if "history" in data:
            return "swe_agent" if swe_agent.looks_like(data) else "openhands"
        if "input" in data:
            return "openai_responses"
        if "system" in data or _looks_anthropic(data.get("messages")):
            return "anthropic"
        return "openai_chat"
    raise ImportError_(f"{where}: expected a JSON object or list, got {type(data).__name__}")


def _looks_anthropic(messages: Any) -> bool:
    if not isinstance(messages, list):
        return False
    for msg in messages:
        content = msg.get("content") if isinstance(msg, Mapping) else None
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result") for b in content
        ):
            return True
    return False


def conversation_from_json(
    data: Any,
    *,
    fmt: str | None = None,
    name: str = "conversation",
    require_calls: bool = False,
    lines: Sequence[int] | None = None,
) -> list[RecordedConversation]:
    """The conversations in one parsed JSON value (a tau-bench file holds many; a
    Claude Code log or a JSONL file of OpenTelemetry traces is the list of its lines'
    values, ``lines`` their line numbers, for errors).

    With ``require_calls`` (files, read by :func:`load_conversations`), a conversation
    without a model call raises :class:`ImportError_`; the app replays stored
    transcripts as they are.
    """
    kind = fmt or detect_format(data, where=name)
    if kind == "tau_bench":
        out = _tau_bench(data, name)
    elif kind == "claude_code":
        if not isinstance(data, list):
            raise ImportError_(f"{name}: a Claude Code log is a JSONL file of events")
        out = [_recorded(c, name) for c in claude_code.read(data, name=name)]
    elif kind == "otel":
        out = [_recorded(c, name) for c in otel.read(data, name=name, lines=lines)]
    elif kind in _SOURCES:
        out = [_recorded(c, name) for c in _SOURCES[kind].read(data, name=name)]
    else:
        messages, infos = _parse(kind, data, name)
        title = (data.get("name") or data.get("title")) if isinstance(data, Mapping) else None
        out = [
            RecordedConversation(str(title or name), messages, infos, kind, task=str(title or ""))
        ]
    return _checked(out, kind, name, require_calls=require_calls)


def _checked(
    out: list[RecordedConversation], kind: str, name: str, *, require_calls: bool = True
) -> list[RecordedConversation]:
    """``out`` marked as read as ``kind``; with ``require_calls``, an error when it is
    empty or a conversation has no model call."""
    if require_calls and not out:
        raise ImportError_(f"{name}: no conversation found, read as {kind}")
    for conversation in out if require_calls else ():
        _check_calls(conversation, kind)
    agent = RECORDING_FORMATS[kind].agent if kind in RECORDING_FORMATS else ""
    return [dataclasses.replace(c, source=kind, agent=c.agent or agent) for c in out]


def _tau_bench(data: Any, name: str) -> list[RecordedConversation]:
    if not isinstance(data, list):
        raise ImportError_(f"{name}: a tau-bench file is a JSON array of runs")
    out = []
    for i, run in enumerate(data):
        if not isinstance(run, Mapping) or "traj" not in run:
            raise ImportError_(f"{name}: [{i}]: a tau-bench run needs 'traj'")
        task_id, trial = run.get("task_id", i), run.get("trial", 0)
        label = f"{name}#task{task_id}-trial{trial}"
        messages, _ = _parse("openai_chat", run["traj"], name, f"[{i}].traj")
        opening = next((m.content for m in messages if m.role == "user"), "")
        out.append(
            RecordedConversation(
                label,
                messages,
                (),
                "openai_chat",
                task=f"task {task_id}, trial {trial}",
                about=excerpt(opening if isinstance(opening, str) else "", ABOUT_CHARS),
            )
        )
    return out


def _recorded(converted: Converted, name: str) -> RecordedConversation:
    """Parse a reader's wire-format payload; an error names the field in the file."""
    try:
        messages, infos = _parse(converted.fmt, converted.payload, name)
    except ImportError_ as exc:
        raise _relocated(exc, converted.locations, name) from exc.__cause__
    usage = None
    per_call = (
        converted.prompt_tokens,
        converted.cached_prompt_tokens,
        converted.completion_tokens,
        converted.call_times,
    )
    totals = (converted.total_prompt_tokens, converted.cost)
    if any(per_call) or any(t is not None for t in totals):
        usage = ProviderUsage(
            prompt_tokens=dict(converted.prompt_tokens),
            total_prompt_tokens=converted.total_prompt_tokens,
            api_calls=converted.api_calls,
            cached_prompt_tokens=dict(converted.cached_prompt_tokens),
            completion_tokens=dict(converted.completion_tokens),
            call_times=dict(converted.call_times),
            cost=converted.cost,
        )
    return RecordedConversation(
        converted.label,
        messages,
        infos,
        converted.fmt,
        model=converted.model,
        usage=usage,
        strategy=converted.strategy,
        task=converted.task,
        about=converted.about,
        agent=converted.agent,
        function_calling=converted.function_calling,
    )


def _relocated(exc: ImportError_, locations: Mapping[int, str], name: str) -> ImportError_:
    """``exc`` with the reshaped payload's ``messages[K]`` replaced by where message K
    came from in the file."""
    cause = exc.__cause__
    if not isinstance(cause, FormatError):
        return exc
    match = re.fullmatch(r"messages\[(\d+)\](.*)", cause.where, flags=re.DOTALL)
    location = locations.get(int(match.group(1))) if match else None
    if match is None or location is None:
        return exc
    at = f"{name}{location}" if location.startswith(":") else f"{name}: {location}"
    return ImportError_(f"{at}{match.group(2)}: {cause.problem}")


def _check_calls(conversation: RecordedConversation, kind: str) -> None:
    if model_calls(conversation.messages):
        return
    total = len(conversation.messages)
    replies = sum(1 for m in conversation.messages if getattr(m, "role", "") == "assistant")
    raise ImportError_(
        f"{conversation.name}: no model call found, read as {kind}: {total} messages, "
        f"{replies} from the assistant, none after user input or a tool result "
        "(name the format with --format if it was detected wrongly)"
    )


def load_conversations(path: str | Path, *, fmt: str | None = None) -> list[RecordedConversation]:
    """Every conversation in the file at ``path``: one JSON value, or JSONL (one per line,
    or the lines of one Claude Code session).

    A file that is not one JSON value is JSONL when its first non-blank line is JSON on
    its own; otherwise the error is the whole document's, with its line and column.
    """
    path = Path(path)
    _check_format(fmt)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ImportError_(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return _from_bytes(raw, str(path), path.name, fmt)


def load_conversations_bytes(
    raw: bytes, *, name: str, fmt: str | None = None
) -> list[RecordedConversation]:
    """Every conversation in ``raw``, the content of a file called ``name`` (an upload),
    read as :func:`load_conversations` reads a file; errors name ``name``."""
    _check_format(fmt)
    return _from_bytes(raw, name, name, fmt)


def _check_format(fmt: str | None) -> None:
    if fmt is not None and fmt not in FORMATS:
        raise ImportError_(f"unknown format {fmt!r}; expected one of {list(FORMATS)}")


def _from_bytes(raw: bytes, where: str, name: str, fmt: str | None) -> list[RecordedConversation]:
    """The conversations of a file's bytes; ``where`` names the file in errors about the
    whole file, ``name`` labels its conversations."""
    if raw.startswith(inspect_logs.ZIP_MAGIC) and fmt in (None, "inspect"):
        # A .eval log is a ZIP archive: never text, so told apart before JSON decoding.
        conversations = [_recorded(c, name) for c in inspect_logs.read_zip(raw, name=name)]
        return _checked(conversations, "inspect", name)
    try:
        # Most files are one JSON document: decoded from the bytes, with no str of the
        # whole file (the same values as json.loads of the file's text).
        data = formats.json_loads_utf8(raw)
    except UnicodeDecodeError as exc:
        raise ImportError_(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError:
        text = _text(raw)
        del raw  # the text stands for the file from here on
        return _from_text(where, name, text, fmt)
    return conversation_from_json(data, fmt=fmt, name=name, require_calls=True)


RECORDING_SUFFIXES = (".json", ".jsonl", ".traj", ".eval")
"""What a file in a folder given to :func:`recording_files` must end with to be read
(``.traj.json`` included); a folder's README and licence files are left out."""


def recording_files(paths: Sequence[str | Path]) -> list[Path]:
    """``paths`` with each folder replaced by its recording files (those ending in one of
    :data:`RECORDING_SUFFIXES`, sorted by name; subfolders are not read). A folder without
    any is an error naming it; files are taken as given, whatever their name."""
    out: list[Path] = []
    for given in paths:
        path = Path(given)
        if not path.is_dir():
            out.append(path)
            continue
        found = sorted(
            p for p in path.iterdir() if p.is_file() and p.name.endswith(RECORDING_SUFFIXES)
        )
        if not found:
            raise ImportError_(
                f"{path}: no recording files in this folder "
                f"(files ending in {', '.join(RECORDING_SUFFIXES)})"
            )
        out.extend(found)
    return out


def load_files(
    paths: Sequence[str | Path], *, fmt: str | None = None
) -> list[RecordedConversation]:
    """Every conversation of every file of :func:`recording_files`, in that order."""
    return [conv for path in recording_files(paths) for conv in load_conversations(path, fmt=fmt)]


def _text(raw: bytes) -> str:
    """``raw`` as a file opened as UTF-8 text reads: universal newlines make ``"\r\n"``
    and ``"\r"`` into ``"\n"``, so error messages count lines as they always did."""
    return raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _from_text(where: str, name: str, text: str, fmt: str | None) -> list[RecordedConversation]:
    """A file that is not one JSON document: empty, JSONL, or an error to report."""
    if not text.strip():
        raise ImportError_(f"{where}: the file is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as whole:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if len(lines) <= 1 or not _is_json(lines[0][1]):
            at = f"line {whole.lineno}, column {whole.colno}"
            raise ImportError_(f"{where}: not JSON: {whole.msg} at {at}") from whole
        return _jsonl(where, name, lines, fmt)
    return conversation_from_json(data, fmt=fmt, name=name, require_calls=True)


def _jsonl(
    where: str, name: str, lines: Sequence[tuple[int, str]], fmt: str | None
) -> list[RecordedConversation]:
    items = []
    for number, line in lines:
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as exc:
            at = f"column {exc.colno}"
            raise ImportError_(f"{where}:{number}: not JSON: {exc.msg} at {at}") from exc
    if fmt == "claude_code" or (fmt is None and claude_code.looks_like(items)):
        return conversation_from_json(items, fmt="claude_code", name=name, require_calls=True)
    if fmt == "otel" or (fmt is None and otel.looks_like(items)):
        numbers = [number for number, _ in lines]
        return conversation_from_json(
            items, fmt="otel", name=name, require_calls=True, lines=numbers
        )
    out: list[RecordedConversation] = []
    for (number, _), item in zip(lines, items, strict=True):
        line_name = f"{name}:{number}"
        out.extend(conversation_from_json(item, fmt=fmt, name=line_name, require_calls=True))
    return out


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return True
