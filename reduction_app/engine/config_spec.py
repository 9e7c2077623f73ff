"""The one description of every ``ReductionConfig`` field: :data:`CONFIG_FIELDS`.

Everything else that lists config fields derives from it: the engine's JSON parser and
checks, the dashboard's form, the Tune page's knobs, the sweep grid, the REST API's config
model, and the table of docs/engine.md (a test holds it to this spec). Adding a field is a
:class:`ConfigField` here and the field on the dataclass; the checks live in ``config``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from reduction_app.engine._tokens._counters import TOKEN_COUNTER_NAMES
from reduction_app.engine.commands import COMMAND_KINDS
from reduction_app.engine.notices import LANGUAGES

__all__ = [
    "CONFIG_FIELDS",
    "DEFAULT_CACHE_READ_PERCENT",
    "DEFAULT_CACHE_WRITE_PERCENT",
    "DEFAULT_MAX_LENGTH_FOR_TRUNC",
    "DEFAULT_MAX_TOKENS_FOR_CLEAR",
    "DEFAULT_RETENTION",
    "JSON_KINDS",
    "MAX_CONFIG_INT",
    "MIN_CONFIG_INT",
    "ConfigField",
    "ConfigKnob",
    "FieldKind",
    "config_field",
    "config_fields",
    "config_knobs",
    "config_switches",
    "json_config_fields",
]

DEFAULT_MAX_LENGTH_FOR_TRUNC = 50_000
DEFAULT_MAX_TOKENS_FOR_CLEAR = 160_000
DEFAULT_RETENTION = 1
DEFAULT_CACHE_READ_PERCENT = 10
DEFAULT_CACHE_WRITE_PERCENT = 125

FieldKind = Literal[
    "bool",
    "int",
    "name",
    "folder",
    "tool_names",
    "limits_by_name",
    "choice",
    "optional_choice",
    "backend",
    "callable",
    "tool_config",
]
"""What a field holds. The JSON kinds (:data:`JSON_KINDS`): ``bool``; ``int``, within
:attr:`ConfigField.bounds`; ``name``, a non-empty string without whitespace; ``folder``, a
``name`` without ``..`` segments; ``tool_names``, a list of non-empty tool names;
``limits_by_name``, an object of non-empty names (one of ``choices`` when it has any) to
``int`` values within :attr:`ConfigField.bounds`; ``choice``, one of ``choices``;
``optional_choice``, one of ``choices`` or ``None``. The Python-only kinds: ``backend``,
``callable`` (or ``None``) and ``tool_config`` (per-tool settings)."""

JSON_KINDS: frozenset[str] = frozenset(
    {"bool", "int", "name", "folder", "tool_names", "limits_by_name", "choice", "optional_choice"}
)


@dataclass(frozen=True, kw_only=True)
class ConfigKnob:
    """How a numeric field moves in a sweep grid and a search, and so on the Tune page's
    slider (whose top, where ``high`` is ``None``, the page decides)."""

    order: int
    """Position among the knobs: the clear phase's knobs come first, as they are the ones
    a conversation's length asks about."""
    low: int
    """The lowest value it is moved to."""
    step: int
    """The step it moves by."""
    high: int | None = None
    """The highest value it is moved to, when that does not depend on the conversation."""


# The range of an ``int`` field that declares no narrower one: the reference's are Go's
# 64-bit ``int``, and the database's integer columns (an event's threshold) hold no more.
MIN_CONFIG_INT = -(2**63)
MAX_CONFIG_INT = 2**63 - 1


@dataclass(frozen=True, kw_only=True)
class ConfigField:
    """One field of ``ReductionConfig``."""

    name: str
    kind: FieldKind
    default: Any
    help: str
    """One line, plain text: the dashboard, the API document and docs/engine.md all show it."""
    zero_means_default: bool = False
    """As in the reference, ``0`` stands for :attr:`default`."""
    minimum: int | None = None
    """An ``int`` field's smallest value, or a ``limits_by_name`` field's values' (``None``:
    :data:`MIN_CONFIG_INT`)."""
    maximum: int | None = None
    """An ``int`` field's largest value (``None``: :data:`MAX_CONFIG_INT`)."""
    choices: tuple[str, ...] = ()
    """A ``choice`` field's values; a ``limits_by_name`` field's keys (none: any name)."""
    callable_too: bool = False
    """From Python the field also takes a callable (never from JSON)."""
    max_chars: int | None = None
    """The longest text a form offers for it; the engine itself sets no limit."""
    knob: ConfigKnob | None = None
    switch: bool = False
    """An opt-in strategy beyond the reference (a ``bool``): a switch on the Tune page and
    an axis a sweep grid may take."""
    phase: Literal["clear"] | None = None
    """``"clear"``: only the clear phase reads it (replays that differ in it alone share
    their truncation)."""

    @property
    def bounds(self) -> tuple[int, int]:
        """The smallest and largest value an ``int`` field takes, both included."""
        low = MIN_CONFIG_INT if self.minimum is None else self.minimum
        high = MAX_CONFIG_INT if self.maximum is None else self.maximum
        return low, high

    @property
    def json(self) -> bool:
        """Whether the field can be read from and written to JSON."""
        return self.kind in JSON_KINDS

    def in_force(self, value: Any) -> Any:
        """The value the engine runs with: the default where ``0`` means the default."""
        if self.zero_means_default and value == 0 and not isinstance(value, bool):
            return self.default
        return value


_NO_TOOL_CONFIG: Mapping[str, Any] = MappingProxyType({})
_NO_LIMITS: Mapping[str, int] = MappingProxyType({})

CONFIG_FIELDS: tuple[ConfigField, ...] = (
    ConfigField(
        name="backend",
        kind="backend",
        default=None,
        help=(
            "Where offloaded content goes (write(WriteRequest), read(path)). "
            "Required unless skip_truncation."
        ),
    ),
    ConfigField(
        name="skip_truncation",
        kind="bool",
        default=False,
        help="Skip the truncation phase (tools with their own trunc_handler still run it).",
    ),
    ConfigField(
        name="skip_clear",
        phase="clear",
        kind="bool",
        default=False,
        help="Skip the clear phase (tools with their own clear_handler still run it).",
    ),
    ConfigField(
        name="read_file_tool_name",
        kind="name",
        default="read_file",
        help="The tool the notices tell the model to read offloaded files with.",
        max_chars=200,
    ),
    ConfigField(
        name="root_dir",
        kind="folder",
        default="/tmp",
        help="Folder of the default offload paths: {root_dir}/trunc/{id}, {root_dir}/clear/{id}.",
        max_chars=500,
    ),
    ConfigField(
        name="gen_trunc_offload_file_path",
        kind="callable",
        default=None,
        help="(detail) -> path for truncated content; replaces the default path.",
    ),
    ConfigField(
        name="gen_clear_offload_file_path",
        kind="callable",
        default=None,
        help="(detail) -> path for cleared content; replaces the default path.",
    ),
    ConfigField(
        name="max_length_for_trunc",
        kind="int",
        default=DEFAULT_MAX_LENGTH_FOR_TRUNC,
        help="A tool output longer than this many characters is truncated (0: the default).",
        zero_means_default=True,
        minimum=0,
        knob=ConfigKnob(order=3, low=100, step=100),
    ),
    ConfigField(
        name="trunc_tool_limits",
        kind="limits_by_name",
        default=_NO_LIMITS,
        help=(
            "Beyond the reference: per tool, the characters over which its output is "
            "truncated, in place of max_length_for_trunc (tool name to limit)."
        ),
        minimum=1,
        max_chars=2000,
    ),
    ConfigField(
        name="trunc_command_limits",
        kind="limits_by_name",
        default=_NO_LIMITS,
        help=(
            "Beyond the reference: per kind of shell command (running, reading, searching, "
            "editing, other), the limit for the output of a tool called with a string "
            "command or cmd argument; before trunc_tool_limits."
        ),
        minimum=1,
        choices=COMMAND_KINDS,
        max_chars=500,
    ),
    ConfigField(
        name="trunc_exclude_tools",
        kind="tool_names",
        default=(),
        help="Tools whose output is never truncated.",
        max_chars=2000,
    ),
    ConfigField(
        name="trunc_only_when_shorter",
        kind="bool",
        default=False,
        help=(
            "Beyond the reference: an output is truncated only when its notice (previews, "
            "path and all) is shorter than it; streamed outputs are unaffected."
        ),
        switch=True,
    ),
    ConfigField(
        name="trunc_stream_text_raw",
        kind="bool",
        default=False,
        help=(
            "Beyond the reference: a streamed ToolResult output cut at the limit whose "
            "parts are all plain text is offloaded as its joined text, as a string stream "
            "is, not as the JSON of every part of every chunk; read_file can then page "
            "through it by line, and the offload costs a join instead of escaping."
        ),
    ),
    ConfigField(
        name="token_counter",
        kind="choice",
        default="approx",
        help=(
            "approx (characters / 4), or exact counts with tiktoken's cl100k_base or "
            "o200k_base; from Python also a callable (messages, tool_infos) -> int."
        ),
        choices=TOKEN_COUNTER_NAMES,
        callable_too=True,
    ),
    ConfigField(
        name="max_tokens_for_clear",
        phase="clear",
        kind="int",
        default=DEFAULT_MAX_TOKENS_FOR_CLEAR,
        help=(
            "The clear phase runs when the conversation has more tokens than this (0: the default)."
        ),
        zero_means_default=True,
        minimum=0,
        knob=ConfigKnob(order=0, low=1000, step=500),
    ),
    ConfigField(
        name="clear_retention_suffix_limit",
        phase="clear",
        kind="int",
        default=DEFAULT_RETENTION,
        help=(
            "The latest N tool-call rounds are never cleared (0: the default; negative keeps none)."
        ),
        zero_means_default=True,
        knob=ConfigKnob(order=1, low=-1, step=1, high=20),
    ),
    ConfigField(
        name="clear_at_least_tokens",
        phase="clear",
        kind="int",
        default=0,
        help="When > 0, a clear freeing fewer tokens is not applied (protects prompt caches).",
        minimum=0,
        knob=ConfigKnob(order=2, low=0, step=100),
    ),
    ConfigField(
        name="clear_cache_aware",
        phase="clear",
        kind="bool",
        default=False,
        help=(
            "Beyond the reference: a pass is applied only when the cache reads it saves over "
            "the calls expected ahead outweigh rewriting the prompt cache after its first "
            "change, or when the conversation is over clear_cache_ceiling_tokens."
        ),
        switch=True,
    ),
    ConfigField(
        name="clear_cache_read_percent",
        phase="clear",
        kind="int",
        default=DEFAULT_CACHE_READ_PERCENT,
        help=(
            "For clear_cache_aware: a token read from the prompt cache, in percent of an "
            "uncached one (Anthropic, GPT-5: 10; GPT-4.1: 25; GPT-4o: 50)."
        ),
        minimum=0,
    ),
    ConfigField(
        name="clear_cache_write_percent",
        phase="clear",
        kind="int",
        default=DEFAULT_CACHE_WRITE_PERCENT,
        help=(
            "For clear_cache_aware: a token written to the prompt cache, in percent of an "
            "uncached one (Anthropic: 125; OpenAI: 100)."
        ),
        minimum=0,
    ),
    ConfigField(
        name="clear_cache_ceiling_tokens",
        phase="clear",
        kind="int",
        default=0,
        help=(
            "For clear_cache_aware: over this many tokens a pass is applied whatever the "
            "cache (0: twice max_tokens_for_clear)."
        ),
        minimum=0,
    ),
    ConfigField(
        name="clear_exclude_tools",
        phase="clear",
        kind="tool_names",
        default=(),
        help="Tools whose results are never cleared.",
        max_chars=2000,
    ),
    ConfigField(
        name="clear_digest_tokens",
        phase="clear",
        kind="int",
        default=0,
        help=(
            "When > 0, a cleared result's placeholder keeps a digest of it (size, files a "
            "search matched, first lines) of at most this many tokens (characters / 4)."
        ),
        minimum=0,
    ),
    ConfigField(
        name="clear_superseded",
        phase="clear",
        kind="bool",
        default=False,
        help=(
            "Beyond the reference: a clear pass first clears results shown again by a later "
            "call (same tool and arguments, or a later read of the same file) and reads of a "
            "file edited since."
        ),
        switch=True,
    ),
    ConfigField(
        name="clear_offload_manifest",
        phase="clear",
        kind="bool",
        default=False,
        help=(
            "Beyond the reference: after a clear pass, one user message lists the offloaded "
            "results (tool, arguments, file) so the model reads a file back instead of "
            "re-running the tool."
        ),
        switch=True,
    ),
    ConfigField(
        name="clear_message_rewriter",
        kind="callable",
        default=None,
        help="(tool_call_msg, tool_response_msgs) -> list | None, run before clearing.",
    ),
    ConfigField(
        name="clear_post_process",
        kind="callable",
        default=None,
        help="(state) -> None, called after a clear was applied.",
    ),
    ConfigField(
        name="tool_config",
        kind="tool_config",
        default=_NO_TOOL_CONFIG,
        help=(
            "Per-tool ToolReductionConfig(backend, skip_truncation, trunc_handler, "
            "skip_clear, clear_handler, clear_digester, reads_files, edits_files)."
        ),
    ),
    ConfigField(
        name="language",
        kind="optional_choice",
        default=None,
        help="en or zh for the notices; unset follows set_language() (English unless changed).",
        choices=LANGUAGES,
    ),
    ConfigField(
        name="on_event",
        kind="callable",
        default=None,
        help="(ReductionEvent) -> None, called once the state an event describes is final.",
    ),
)
"""Every field of ``ReductionConfig``, in the dataclass's order (a test holds them equal)."""


def config_fields() -> tuple[ConfigField, ...]:
    """:data:`CONFIG_FIELDS`, read when called.

    Readers that must see a patched spec (tests inject an extra field) call this,
    :func:`json_config_fields` and :func:`config_knobs` rather than hold the tuple.
    """
    return CONFIG_FIELDS


def json_config_fields() -> tuple[ConfigField, ...]:
    """The fields a JSON config may hold, in order; backends and callables stay Python-only."""
    return tuple(f for f in CONFIG_FIELDS if f.json)


def config_knobs() -> tuple[ConfigField, ...]:
    """The numeric fields the Tune page and a sweep grid move, in knob order."""
    knobs = [f for f in CONFIG_FIELDS if f.knob is not None]
    return tuple(sorted(knobs, key=lambda f: f.knob.order if f.knob else 0))


def config_switches() -> tuple[ConfigField, ...]:
    """The opt-in strategies the Tune page shows as switches, in the spec's order."""
    return tuple(f for f in CONFIG_FIELDS if f.switch)


def config_field(name: str) -> ConfigField:
    """The field called ``name``; ``KeyError`` when there is none."""
    for spec in CONFIG_FIELDS:
        if spec.name == name:
            return spec
    raise KeyError(name)
