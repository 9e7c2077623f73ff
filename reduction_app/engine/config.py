"""The middleware's configuration: ``ReductionConfig`` and ``ToolReductionConfig``.

Field names and defaults follow the reference's ``TypedConfig`` in snake_case; what each
field holds is described once, in :mod:`reduction_app.engine.config_spec`. This module
holds the dataclasses and the behaviour derived from that description: :func:`validate`
(a :class:`ConfigError` naming the field), :func:`filled` (``0`` means the default), and
the JSON fields read from and written to plain dicts for the REST API and the simulator.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from reduction_app.engine import config_spec
from reduction_app.engine._storage._backends import Backend, InMemoryBackend
from reduction_app.engine._storage._paths import DEFAULT_PATH_TAIL
from reduction_app.engine._tokens._counters import TOKEN_COUNTER_NAMES
from reduction_app.engine.config_spec import (
    DEFAULT_CACHE_READ_PERCENT,
    DEFAULT_CACHE_WRITE_PERCENT,
    DEFAULT_MAX_LENGTH_FOR_TRUNC,
    DEFAULT_MAX_TOKENS_FOR_CLEAR,
    DEFAULT_RETENTION,
    ConfigField,
    FieldKind,
)
from reduction_app.engine.errors import ConfigError
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.formats import text_problem
from reduction_app.engine.notices import Language
from reduction_app.engine.tool_io import ClearResult, ToolDetail, TruncResult

__all__ = [
    "DEFAULT_MAX_LENGTH_FOR_TRUNC",
    "DEFAULT_MAX_TOKENS_FOR_CLEAR",
    "DEFAULT_RETENTION",
    "JSON_FIELDS",
    "TOKEN_COUNTER_NAMES",
    "ReductionConfig",
    "ToolReductionConfig",
    "check_config",
    "config_field_defaults",
    "config_from_dict",
    "config_to_dict",
    "filled",
    "validate",
]

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
    clear_digester: Callable[[str], str] | None = None
    """The digest of this tool's cleared results, when ``clear_digest_tokens > 0`` and the
    tool has the default clear handler (see :mod:`reduction_app.engine._handlers._digests`)."""
    reads_files: bool | None = None
    """For ``clear_superseded``: whether this tool's calls read the file their ``path``,
    ``file_path`` or ``filename`` argument names (``None``: the built-in rule decides)."""
    edits_files: bool | None = None
    """For ``clear_superseded``: whether this tool's calls change the file their ``path``,
    ``file_path`` or ``filename`` argument names (``None``: the built-in rule decides)."""


@dataclass(kw_only=True)
class ReductionConfig:
    """Everything the reduction middleware can be told.

    Each field's kind, default and help are in :data:`CONFIG_FIELDS`
    (:mod:`reduction_app.engine.config_spec`), in this order; the table of docs/engine.md
    shows them.
    """

    backend: Backend | None = None
    skip_truncation: bool = False
    skip_clear: bool = False
    read_file_tool_name: str = "read_file"
    root_dir: str = "/tmp"
    gen_trunc_offload_file_path: Callable[[ToolDetail], str] | None = None
    gen_clear_offload_file_path: Callable[[ToolDetail], str] | None = None
    max_length_for_trunc: int = DEFAULT_MAX_LENGTH_FOR_TRUNC
    trunc_tool_limits: Mapping[str, int] = field(default_factory=dict)
    trunc_command_limits: Mapping[str, int] = field(default_factory=dict)
    trunc_exclude_tools: Collection[str] = ()
    trunc_only_when_shorter: bool = False
    trunc_stream_text_raw: bool = False
    token_counter: str | Callable[[Sequence[Any], Sequence[Any]], int] = "approx"
    max_tokens_for_clear: int = DEFAULT_MAX_TOKENS_FOR_CLEAR
    clear_retention_suffix_limit: int = DEFAULT_RETENTION
    clear_at_least_tokens: int = 0
    clear_cache_aware: bool = False
    clear_cache_read_percent: int = DEFAULT_CACHE_READ_PERCENT
    clear_cache_write_percent: int = DEFAULT_CACHE_WRITE_PERCENT
    clear_cache_ceiling_tokens: int = 0
    clear_exclude_tools: Collection[str] = ()
    clear_digest_tokens: int = 0
    clear_superseded: bool = False
    clear_offload_manifest: bool = False
    clear_message_rewriter: Callable[[Any, list[Any]], list[Any] | None] | None = None
    clear_post_process: Callable[[Any], Any] | None = None
    tool_config: Mapping[str, ToolReductionConfig] = field(default_factory=dict)
    language: Language | None = None
    on_event: Callable[[ReductionEvent], Any] | None = None


JSON_FIELDS: tuple[str, ...] = tuple(f.name for f in config_spec.json_config_fields())
"""The fields a JSON config may hold; backends and callables stay Python-only."""

_NAME_RE = re.compile(r"\S+")


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigError(name, f"must be true or false, got {value!r}")


def _check_int(name: str, value: object, *, bounds: tuple[int, int]) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, f"must be an integer, got {value!r}")
    low, high = bounds
    if value < low:
        raise ConfigError(name, f"must be at least {low}, got {value!r}")
    if value > high:
        raise ConfigError(name, f"must be at most {high}, got {value!r}")


def _check_text(name: str, value: str) -> None:
    # Text knobs end up in offload paths, events and database rows: PostgreSQL (and
    # UTF-8) holds neither NUL nor a lone surrogate.
    problem = text_problem(value)
    if problem is not None:
        raise ConfigError(name, problem)


def _check_name(name: str, value: object) -> None:
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
        raise ConfigError(name, f"must be a non-empty string without whitespace, got {value!r}")
    _check_text(name, value)


def _check_folder(name: str, value: object) -> None:
    _check_name(name, value)
    if isinstance(value, str) and ".." in value.split("/"):
        raise ConfigError(name, f"must not contain '..', got {value!r}")


def _check_names(name: str, value: object) -> None:
    if isinstance(value, str) or not isinstance(value, Collection):
        raise ConfigError(name, f"must be a list of tool names, got {value!r}")
    for item in value:
        if not isinstance(item, str) or not item:
            raise ConfigError(name, f"must hold non-empty tool names, got {item!r}")
        _check_text(name, item)


def _check_limits(spec: ConfigField, value: object) -> None:
    """A ``limits_by_name`` value: names (``spec.choices`` when given) to ``int`` limits;
    an error names the field and the key (``trunc_command_limits.bogus``)."""
    if not isinstance(value, Mapping):
        raise ConfigError(spec.name, f"must be an object of name to limit, got {value!r}")
    for key, limit in value.items():
        if not isinstance(key, str) or not key:
            raise ConfigError(spec.name, f"must have non-empty names as keys, got {key!r}")
        _check_text(spec.name, key)
        where = f"{spec.name}.{key}"
        if spec.choices and key not in spec.choices:
            raise ConfigError(where, f"is not a command kind: expected one of {list(spec.choices)}")
        _check_int(where, limit, bounds=spec.bounds)


def _check_callable(name: str, value: object) -> None:
    if value is not None and not callable(value):
        raise ConfigError(name, f"must be callable or None, got {value!r}")


def _check_choice(spec: ConfigField, value: object) -> None:
    if spec.callable_too and callable(value):
        return
    if spec.kind == "optional_choice" and value is None:
        return
    if value not in spec.choices:
        alternative = (
            " or a callable" if spec.callable_too else " or None" if spec.kind != "choice" else ""
        )
        raise ConfigError(
            spec.name, f"must be one of {list(spec.choices)}{alternative}, got {value!r}"
        )


def _check_field(spec: ConfigField, value: object) -> None:
    """Check a value of one of the simple kinds (the JSON ones and ``callable``)."""
    if spec.kind == "bool":
        _check_bool(spec.name, value)
    elif spec.kind == "int":
        _check_int(spec.name, value, bounds=spec.bounds)
    elif spec.kind == "name":
        _check_name(spec.name, value)
    elif spec.kind == "folder":
        _check_folder(spec.name, value)
    elif spec.kind == "tool_names":
        _check_names(spec.name, value)
    elif spec.kind == "limits_by_name":
        _check_limits(spec, value)
    elif spec.kind in ("choice", "optional_choice"):
        _check_choice(spec, value)
    elif spec.kind == "callable":
        _check_callable(spec.name, value)
    else:
        raise AssertionError(f"{spec.name}: no simple check for kind {spec.kind!r}")


def _check_path_room(config: ReductionConfig) -> None:
    """A backend that takes paths of at most ``max_path_chars`` must get every default
    path whole: ``root_dir`` leaves room for the longest :data:`DEFAULT_PATH_TAIL`."""
    limit = getattr(config.backend, "max_path_chars", None)
    if not isinstance(limit, int) or not isinstance(config.root_dir, str):
        return
    room = limit - DEFAULT_PATH_TAIL
    if len(config.root_dir) > room:
        raise ConfigError(
            "root_dir",
            f"must be at most {room} characters, so that the offload paths under it "
            f"({DEFAULT_PATH_TAIL} more) stay within the storage's limit of {limit}; "
            f"got {len(config.root_dir)} characters",
        )


def _check_kinds(config: ReductionConfig, *kinds: FieldKind) -> None:
    for spec in config_spec.config_fields():
        if spec.kind in kinds:
            _check_field(spec, getattr(config, spec.name))


def validate(config: ReductionConfig | None) -> ReductionConfig:
    """Check every field of ``config``; return it unchanged or raise :class:`ConfigError`."""
    if config is None:
        raise ConfigError("config", "must not be None")
    if not isinstance(config, ReductionConfig):
        raise ConfigError("config", f"must be a ReductionConfig, got {type(config).__name__}")
    # Kind by kind, each in the spec's order, so a config with several faults always
    # names the same one; the switches first, as they decide whether a backend is needed.
    _check_kinds(config, "bool")
    if config.backend is None and not config.skip_truncation:
        raise ConfigError("backend", "must be set when not skipping truncation")
    default_paths = (
        config.gen_trunc_offload_file_path is None or config.gen_clear_offload_file_path is None
    )
    _check_backend("backend", config.backend, needs_read=default_paths)
    _check_kinds(config, "name", "folder")
    if default_paths:
        _check_path_room(config)
    _check_kinds(config, "int")
    _check_kinds(config, "tool_names")
    _check_kinds(config, "limits_by_name")
    _check_kinds(config, "choice")
    _check_kinds(config, "callable")
    _check_kinds(config, "optional_choice")
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
        _check_callable(f"{where}.clear_digester", entry.clear_digester)
        if entry.reads_files is not None:
            _check_bool(f"{where}.reads_files", entry.reads_files)
        if entry.edits_files is not None:
            _check_bool(f"{where}.edits_files", entry.edits_files)
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
    in_force = {
        spec.name: spec.in_force(getattr(config, spec.name))
        for spec in config_spec.config_fields()
        if spec.zero_means_default
    }
    return dataclasses.replace(
        config,
        **in_force,
        tool_config=dict(config.tool_config),
        trunc_tool_limits=dict(config.trunc_tool_limits),
        trunc_command_limits=dict(config.trunc_command_limits),
    )


def config_from_dict(data: Mapping[str, Any], **python_only: Any) -> ReductionConfig:
    """A validated config from JSON-style ``data`` plus Python-only fields (``backend``, ...).

    An unknown key, or a Python-only field given in ``data``, is a :class:`ConfigError`
    naming it.
    """
    if not isinstance(data, Mapping):
        raise ConfigError("config", f"must be a JSON object, got {data!r}")
    specs = {spec.name: spec for spec in config_spec.config_fields()}
    for key in data:
        spec = specs.get(key)
        if spec is None or not spec.json:
            problem = "is not a config field" if spec is None else "cannot be set from JSON"
            raise ConfigError(str(key), problem)
    values = dict(data)
    for name, value in data.items():
        if specs[name].kind == "tool_names" and isinstance(value, list):
            values[name] = tuple(value)
        elif specs[name].kind == "limits_by_name" and isinstance(value, Mapping):
            values[name] = dict(value)
    return validate(ReductionConfig(**values, **python_only))


def check_config(data: Mapping[str, Any]) -> ReductionConfig:
    """Raise :class:`ConfigError` naming the field at fault unless ``data`` is a valid JSON
    config: the one check every caller makes of a config it was given. The config it makes
    (on an in-memory backend) is for reading, not for running."""
    return config_from_dict(data, backend=InMemoryBackend())


def config_to_dict(config: ReductionConfig) -> dict[str, Any]:
    """The JSON-serialisable fields of ``config``; a callable (``token_counter``) is refused."""
    out: dict[str, Any] = {}
    for spec in config_spec.json_config_fields():
        value = getattr(config, spec.name)
        if spec.callable_too and not isinstance(value, str):
            raise ConfigError(spec.name, "is a callable and cannot be written as JSON")
        if spec.kind == "tool_names":
            value = sorted(value)
        elif spec.kind == "limits_by_name":
            value = dict(sorted(value.items()))
        out[spec.name] = value
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
