"""The config form of the dashboard: every JSON field of ``ReductionConfig``, its default
and its one-line help, validated by the engine.

``FIELD_HELP`` is the one place the pages take a field's help from (a test checks that
every field of ``engine.JSON_FIELDS`` has one). Validation is the engine's own
(``config_from_dict``): its ``ConfigError`` names the field, and the form shows the
message next to that field. Writes stay in ``services``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from reduction_app import engine
from reduction_app.engine import TOKEN_COUNTER_NAMES

__all__ = [
    "FIELD_HELP",
    "ConfigForm",
    "config_defaults",
    "display_value",
    "initial_from_data",
    "version_changes",
]

FIELD_HELP: dict[str, str] = {
    "skip_truncation": (
        "Skip the truncation phase (tools with their own trunc_handler still run it)."
    ),
    "skip_clear": "Skip the clear phase (tools with their own clear_handler still run it).",
    "read_file_tool_name": "The tool the notices tell the model to read offloaded files with.",
    "root_dir": "Folder of the default offload paths: {root_dir}/trunc/… and {root_dir}/clear/….",
    "max_length_for_trunc": (
        "A tool output longer than this many characters is truncated (0: the default)."
    ),
    "trunc_exclude_tools": "Tools whose output is never truncated (comma-separated names).",
    "token_counter": (
        "approx (characters / 4), or exact counts with tiktoken's cl100k_base or o200k_base."
    ),
    "max_tokens_for_clear": (
        "The clear phase runs when the conversation has more tokens than this (0: the default)."
    ),
    "clear_retention_suffix_limit": (
        "The latest N tool-call rounds are never cleared (0: the default; negative keeps none)."
    ),
    "clear_at_least_tokens": (
        "When > 0, a clear freeing fewer tokens is not applied (protects prompt caches)."
    ),
    "clear_exclude_tools": "Tools whose results are never cleared (comma-separated names).",
    "language": "Language of the notices; default follows set_language() (English unless changed).",
}
"""One line of help per JSON field, worded after the README's table of config fields."""

_LIST_FIELDS = ("trunc_exclude_tools", "clear_exclude_tools")
_INT_FIELDS = (
    "max_length_for_trunc",
    "max_tokens_for_clear",
    "clear_retention_suffix_limit",
    "clear_at_least_tokens",
)
_BOOL_FIELDS = ("skip_truncation", "skip_clear")
LANGUAGE_CHOICES = (("", "default"), ("en", "en (English)"), ("zh", "zh (Chinese)"))


def config_defaults() -> dict[str, Any]:
    """The engine's default for every JSON field."""
    defaults = dict(engine.config_field_defaults())
    return {name: defaults[name] for name in engine.JSON_FIELDS}


def display_value(name: str, value: Any) -> str:
    """A field's value as a person reads it: ``160,000``, ``off``, ``none``, ``default``."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int):
        return f"{value:,}"
    if name in _LIST_FIELDS:
        return ", ".join(value) if value else "none"
    if value is None:
        return "default"
    return str(value)


def _split_names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def initial_from_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """Form initial values from a config's JSON fields (missing ones take the default)."""
    values = {**config_defaults(), **data}
    initial = {name: values[name] for name in engine.JSON_FIELDS}
    for name in _LIST_FIELDS:
        initial[name] = ", ".join(values[name] or ())
    initial["language"] = values["language"] or ""
    return initial


class ConfigForm(forms.Form):
    """A name and every JSON field of ``ReductionConfig``; ``config_data`` is the JSON."""

    name = forms.CharField(max_length=100)
    skip_truncation = forms.BooleanField(required=False)
    skip_clear = forms.BooleanField(required=False)
    read_file_tool_name = forms.CharField(required=False, max_length=200)
    root_dir = forms.CharField(required=False, max_length=500)
    max_length_for_trunc = forms.IntegerField()
    trunc_exclude_tools = forms.CharField(required=False, max_length=2000)
    token_counter = forms.ChoiceField(choices=[(n, n) for n in TOKEN_COUNTER_NAMES])
    max_tokens_for_clear = forms.IntegerField()
    clear_retention_suffix_limit = forms.IntegerField()
    clear_at_least_tokens = forms.IntegerField()
    clear_exclude_tools = forms.CharField(required=False, max_length=2000)
    language = forms.ChoiceField(choices=LANGUAGE_CHOICES, required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        defaults = config_defaults()
        for name in engine.JSON_FIELDS:
            self.fields[name].help_text = FIELD_HELP[name]
            self.fields[name].default_text = display_value(name, defaults[name])  # type: ignore[attr-defined]
        self.config_data: dict[str, Any] = {}

    def config_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in engine.JSON_FIELDS]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        data: dict[str, Any] = {}
        for name in engine.JSON_FIELDS:
            if name not in cleaned:
                continue  # Django already put an error on it
            value = cleaned[name]
            if name in _LIST_FIELDS:
                value = _split_names(value)
            elif name == "language":
                value = value or None
            data[name] = value
        try:
            engine.config_from_dict(data, backend=engine.InMemoryBackend())
        except engine.ConfigError as exc:
            self.add_error(exc.field if exc.field in self.fields else None, str(exc))
        self.config_data = data
        return cleaned


def version_changes(
    previous: Mapping[str, Any] | None, current: Mapping[str, Any]
) -> list[tuple[str, str, str]]:
    """``(field, old, new)`` for each JSON field that differs from ``previous``, as displayed."""
    if previous is None:
        return []
    defaults = config_defaults()
    out = []
    for name in engine.JSON_FIELDS:
        old, new = previous.get(name, defaults[name]), current.get(name, defaults[name])
        if old != new:
            out.append((name, display_value(name, old), display_value(name, new)))
    return out
