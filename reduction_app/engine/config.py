"""The middleware's configuration: ``ReductionConfig`` and ``ToolReductionConfig``.

Field names and defaults follow the reference's ``TypedConfig`` in snake_case.
As in the reference, ``0`` for ``max_length_for_trunc``, ``max_tokens_for_clear``
and ``clear_retention_suffix_limit`` means "the default"; a negative retention
keeps nothing. :func:`validate` checks every field and raises :class:`ConfigError`
naming it. The JSON-serialisable fields (everything but backends and callables)
can be read from and written to plain dicts, for the REST API and the simulator.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from reduction_app.engine.backends import Backend
from reduction_app.engine.errors import ConfigError
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.notices import LANGUAGES, Language
from reduction_app.engine.tool_io import ClearResult, ToolDetail, TruncResult

__all__ = [
    "DEFAULT_MAX_LENGTH_FOR_TRUNC",
    "DEFAULT_MAX_TOKENS_FOR_CLEAR",
    "JSON_FIELDS",
    "ReductionConfig",
    "ToolReductionConfig",
    "config_field_defaults",
    "config_from_dict",
    "config_to_dict",
    "validate",
]

DEFAULT_MAX_LENGTH_FOR_TRUNC = 50_000
DEFAULT_MAX_TOKENS_FOR_CLEAR = 160_000
DEFAULT_RETENTION = 1
TOKEN_COUNTER_NAMES = ("approx", "cl100k_base", "o200k_base")

TruncHandler = Callable[[ToolDetail], TruncResult]
ClearHandler = Callable[[ToolDetail], ClearResult]


@dataclass(kw_only=True)
class ToolReductionConfig:
    """Per-tool settings; they take precedence over the global ones for that tool.

    An entry without a backend uses the global backend. An entry without a handler
    (and not skipping that phase) gets the default handler, with this entry's backend.
    """

    backend: Backend | None = None
    skip_truncation: bool = False
    trunc_handler: TruncHandler | None = None
    skip_clear: bool = False
    clear_handler: ClearHandler | None = None


@dataclass(kw_only=True)
class ReductionConfig:
    """Everything the reduction middleware can be told. See the README for each field."""

    backend: Backend | None = None
    """Where offloaded content is written. Required unless ``skip_truncation``."""
    skip_truncation: bool = False
    """Skip the truncation phase (tools with their own ``trunc_handler`` still run it)."""
    skip_clear: bool = False
    """Skip the clear phase (tools with their own ``clear_handler`` still run it)."""
    read_file_tool_name: str = "read_file"
    """The tool the notices tell the model to read offloaded files with."""
    root_dir: str = "/tmp"
    """Folder of the default offload paths: ``{root_dir}/trunc/…`` and ``{root_dir}/clear/…``."""
    gen_trunc_offload_file_path: Callable[[ToolDetail], str] | None = None
    """Custom path for truncated content; ``root_dir`` is then not used for truncation."""
    gen_clear_offload_file_path: Callable[[ToolDetail], str] | None = None
    """Custom path for cleared content; ``root_dir`` is then not used for clearing."""
    max_length_for_trunc: int = DEFAULT_MAX_LENGTH_FOR_TRUNC
    """A tool output longer than this many characters is truncated."""
    trunc_exclude_tools: Collection[str] = ()
    """Tools whose output is never truncated."""
    token_counter: str | Callable[[Sequence[Any], Sequence[Any]], int] = "approx"
    """``"approx"`` (characters / 4), ``"cl100k_base"``, ``"o200k_base"`` or a callable."""
    max_tokens_for_clear: int = DEFAULT_MAX_TOKENS_FOR_CLEAR
    """The clear phase runs when the conversation has more tokens than this."""
    clear_retention_suffix_limit: int = DEFAULT_RETENTION
    """How many of the latest tool-call rounds are never cleared."""
    clear_at_least_tokens: int = 0
    """When > 0, a clear that would free fewer tokens is not applied (protects prompt caches)."""
    clear_exclude_tools: Collection[str] = ()
    """Tools whose results are never cleared."""
    clear_message_rewriter: Callable[[Any, list[Any]], list[Any] | None] | None = None
    """``(tool_call_msg, tool_response_msgs) -> messages | None``, run before clearing."""
    clear_post_process: Callable[[Any], Any] | None = None
    """Called with the new state after a clear was applied; its return value is ignored."""
    tool_config: Mapping[str, ToolReductionConfig] = field(default_factory=dict)
    """Per-tool settings, by tool name."""
    language: Language | None = None
    """``"en"`` or ``"zh"`` for notices; ``None`` follows :func:`set_language`."""
    on_event: Callable[[ReductionEvent], Any] | None = None
    """Called with every :class:`ReductionEvent`, once the state it describes is final."""


JSON_FIELDS = (
    "skip_truncation",
    "skip_clear",
    "read_file_tool_name",
    "root_dir",
    "max_length_for_trunc",
    "trunc_exclude_tools",
    "token_counter",
    "max_tokens_for_clear",
    "clear_retention_suffix_limit",
    "clear_at_least_tokens",
    "clear_exclude_tools",
    "language",
)
"""The fields a JSON config may hold; backends and callables stay Python-only."""

_NAME_RE = re.compile(r"\S+")


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigError(name, f"must be true or false, got {value!r}")


def _check_int(name: str, value: object, *, minimum: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, f"must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(name, f"must be at least {minimum}, got {value!r}")


def _check_names(name: str, value: object) -> None:
    if isinstance(value, str) or not isinstance(value, Collection):
        raise ConfigError(name, f"must be a list of tool names, got {value!r}")
    for item in value:
        if not isinstance(item, str) or not item:
            raise ConfigError(name, f"must hold non-empty tool names, got {item!r}")


def _check_callable(name: str, value: object) -> None:
    if value is not None and not callable(value):
        raise ConfigError(name, f"must be callable or None, got {value!r}")


def validate(config: ReductionConfig | None) -> ReductionConfig:
    """Check every field of ``config``; return it unchanged or raise :class:`ConfigError`."""
    if config is None:
        raise ConfigError("config", "must not be None")
    if not isinstance(config, ReductionConfig):
        raise ConfigError("config", f"must be a ReductionConfig, got {type(config).__name__}")
    _check_bool("skip_truncation", config.skip_truncation)
    _check_bool("skip_clear", config.skip_clear)
    if config.backend is None and not config.skip_truncation:
        raise ConfigError("backend", "must be set when not skipping truncation")
    default_paths = (
        config.gen_trunc_offload_file_path is None or config.gen_clear_offload_file_path is None
    )
    _check_backend("backend", config.backend, needs_read=default_paths)
    for name in ("read_file_tool_name", "root_dir"):
        value = getattr(config, name)
        if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
            raise ConfigError(name, f"must be a non-empty string without whitespace, got {value!r}")
    if ".." in config.root_dir.split("/"):
        raise ConfigError("root_dir", f"must not contain '..', got {config.root_dir!r}")
    _check_int("max_length_for_trunc", config.max_length_for_trunc, minimum=0)
    _check_int("max_tokens_for_clear", config.max_tokens_for_clear, minimum=0)
    _check_int("clear_retention_suffix_limit", config.clear_retention_suffix_limit, minimum=None)
    _check_int("clear_at_least_tokens", config.clear_at_least_tokens, minimum=0)
    _check_names("trunc_exclude_tools", config.trunc_exclude_tools)
    _check_names("clear_exclude_tools", config.clear_exclude_tools)
    counter = config.token_counter
    if not callable(counter) and counter not in TOKEN_COUNTER_NAMES:
        raise ConfigError(
            "token_counter",
            f"must be one of {list(TOKEN_COUNTER_NAMES)} or a callable, got {counter!r}",
        )
    for name in (
        "gen_trunc_offload_file_path",
        "gen_clear_offload_file_path",
        "clear_message_rewriter",
        "clear_post_process",
        "on_event",
    ):
        _check_callable(name, getattr(config, name))
    if config.language is not None and config.language not in LANGUAGES:
        raise ConfigError(
            "language", f"must be one of {list(LANGUAGES)} or None, got {config.language!r}"
        )
    if not isinstance(config.tool_config, Mapping):
        raise ConfigError(
            "tool_config",
            f"must be a mapping of tool name to ToolReductionConfig, got {config.tool_config!r}",
        )
    for tool, entry in config.tool_config.items():
        where = f"tool_config[{tool!r}]"
        if not isinstance(entry, ToolReductionConfig):
            raise ConfigError(where, f"must be a ToolReductionConfig, got {entry!r}")
        _check_bool(f"{where}.skip_truncation", entry.skip_truncation)
        _check_bool(f"{where}.skip_clear", entry.skip_clear)
        _check_callable(f"{where}.trunc_handler", entry.trunc_handler)
        _check_callable(f"{where}.clear_handler", entry.clear_handler)
        _check_backend(f"{where}.backend", entry.backend, needs_read=default_paths)
    return config


def _check_backend(where: str, backend: object, *, needs_read: bool) -> None:
    if backend is None:
        return
    if not callable(getattr(backend, "write", None)):
        raise ConfigError(where, f"must have a write(request) method, got {backend!r}")
    if needs_read and not callable(getattr(backend, "read", None)):
        raise ConfigError(
            where,
            "must have a read(path) method: default offload paths read the backend so a "
            "reused call id never overwrites an earlier offload (or set both "
            f"gen_trunc_offload_file_path and gen_clear_offload_file_path), got {backend!r}",
        )


def filled(config: ReductionConfig) -> ReductionConfig:
    """A copy with the reference's zero-means-default rules applied."""
    return dataclasses.replace(
        config,
        max_length_for_trunc=config.max_length_for_trunc or DEFAULT_MAX_LENGTH_FOR_TRUNC,
        max_tokens_for_clear=config.max_tokens_for_clear or DEFAULT_MAX_TOKENS_FOR_CLEAR,
        clear_retention_suffix_limit=config.clear_retention_suffix_limit or DEFAULT_RETENTION,
        tool_config=dict(config.tool_config),
    )


def config_from_dict(data: Mapping[str, Any], **python_only: Any) -> ReductionConfig:
    """A validated config from JSON-style ``data`` plus Python-only fields (``backend``, ...).

    An unknown key, or a Python-only field given in ``data``, is a :class:`ConfigError`
    naming it.
    """
    if not isinstance(data, Mapping):
        raise ConfigError("config", f"must be a JSON object, got {data!r}")
    for key in data:
        if key not in JSON_FIELDS:
            known = {f.name for f in fields(ReductionConfig)}
            problem = "cannot be set from JSON" if key in known else "is not a config field"
            raise ConfigError(str(key), problem)
    values = dict(data)
    for name in ("trunc_exclude_tools", "clear_exclude_tools"):
        if name in values and isinstance(values[name], list):
            values[name] = tuple(values[name])
    return validate(ReductionConfig(**values, **python_only))


def config_to_dict(config: ReductionConfig) -> dict[str, Any]:
    """The JSON-serialisable fields of ``config``; a callable ``token_counter`` is refused."""
    out: dict[str, Any] = {}
    for name in JSON_FIELDS:
        value = getattr(config, name)
        if name == "token_counter" and not isinstance(value, str):
            raise ConfigError("token_counter", "is a callable and cannot be written as JSON")
        if name.endswith("_exclude_tools"):
            value = sorted(value)
        out[name] = value
    return out


def config_field_defaults() -> list[tuple[str, Any]]:
    """Every field of :class:`ReductionConfig` with its default, in declaration order."""
    out: list[tuple[str, Any]] = []
    for f in fields(ReductionConfig):
        if f.default is not dataclasses.MISSING:
            out.append((f.name, f.default))
        else:
            out.append((f.name, f.default_factory()))  # type: ignore[operator]
    return out
