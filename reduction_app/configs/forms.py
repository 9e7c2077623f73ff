"""The config form of the dashboard: every JSON field of ``ReductionConfig``, its default
and its one-line help, all from the engine's spec, validated by the engine.

Writes stay in ``configs.services``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django import forms

from reduction_app import engine

__all__ = [
    "FIELD_HELP",
    "ConfigForm",
    "config_defaults",
    "display_value",
    "form_field",
    "initial_from_data",
    "version_changes",
]

FIELD_HELP: dict[str, str] = {spec.name: spec.help for spec in engine.json_config_fields()}
"""One line of help per JSON field: the spec's, which docs/engine.md's table shows too."""

CHOICE_LABELS = {"en": "en (English)", "zh": "zh (Chinese)"}
"""How a select shows a choice, where the value alone says too little."""
UNSET_LABEL = "default"
"""How a select shows ``None`` for an optional choice."""
NAMES_PLACEHOLDER = "comma-separated names"
LIMITS_PLACEHOLDER = "one name = limit a line"


def config_defaults() -> dict[str, Any]:
    """The engine's default for every JSON field."""
    return {spec.name: spec.default for spec in engine.json_config_fields()}


def _kind(name: str) -> str | None:
    try:
        return engine.config_field(name).kind
    except KeyError:
        return None


def display_value(name: str, value: Any) -> str:
    """A field's value as a person reads it: ``160,000``, ``off``, ``none``, ``default``."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int):
        return f"{value:,}"
    if _kind(name) == "tool_names":
        return ", ".join(value) if value else "none"
    if _kind(name) == "limits_by_name":
        return ", ".join(f"{k} = {v:,}" for k, v in sorted(value.items())) if value else "none"
    if value is None:
        return UNSET_LABEL
    return str(value)


def _split_names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _limits_text(limits: Mapping[str, Any]) -> str:
    return "\n".join(f"{name} = {limit}" for name, limit in sorted(limits.items()))


def _parse_limits(text: str) -> dict[str, Any]:
    """``name = limit`` lines as a map; a limit that is not a whole number is kept as
    typed, for the engine to name. A line without ``=`` is a ``ValidationError``."""
    limits: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, sep, value = line.partition("=")
        if not sep:
            raise forms.ValidationError(
                f"line {number}: expected name = limit, got {line.strip()!r}", code="limits"
            )
        value = value.strip().replace(",", "").replace("_", "")
        limits[name.strip()] = int(value) if re.fullmatch(r"-?\d+", value) else value
    return limits


def initial_from_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """Form initial values from a config's JSON fields (missing ones take the default)."""
    values = {**config_defaults(), **data}
    initial = {}
    for spec in engine.json_config_fields():
        value = values[spec.name]
        if spec.kind == "tool_names":
            value = ", ".join(value or ())
        elif spec.kind == "limits_by_name":
            value = _limits_text(value or {})
        elif spec.kind == "optional_choice":
            value = value or ""
        initial[spec.name] = value
    return initial


def form_field(spec: engine.ConfigField) -> forms.Field:
    """The form field of a JSON config field, with its help and its default as displayed.

    Numbers and texts are taken as typed: the engine decides what it accepts.
    """
    field: forms.Field
    if spec.kind == "bool":
        field = forms.BooleanField(required=False)
    elif spec.kind == "int":
        field = forms.IntegerField()
    elif spec.kind in ("name", "folder"):
        field = forms.CharField(required=False, max_length=spec.max_chars)
    elif spec.kind == "tool_names":
        field = forms.CharField(
            required=False,
            max_length=spec.max_chars,
            widget=forms.TextInput(attrs={"placeholder": NAMES_PLACEHOLDER}),
        )
    elif spec.kind == "limits_by_name":
        example = f"{spec.choices[0]} = 2000" if spec.choices else "name = 4000"
        field = forms.CharField(
            required=False,
            max_length=spec.max_chars,
            widget=forms.Textarea(
                attrs={"rows": 3, "placeholder": f"{LIMITS_PLACEHOLDER}, e.g. {example}"}
            ),
        )
    elif spec.kind == "choice":
        field = forms.ChoiceField(choices=[(c, CHOICE_LABELS.get(c, c)) for c in spec.choices])
    elif spec.kind == "optional_choice":
        choices = [("", UNSET_LABEL), *((c, CHOICE_LABELS.get(c, c)) for c in spec.choices)]
        field = forms.ChoiceField(choices=choices, required=False)
    else:
        raise ValueError(f"{spec.name}: a {spec.kind} field cannot be set from a form")
    return _described(field, spec)


def _described(field: forms.Field, spec: engine.ConfigField) -> forms.Field:
    field.help_text = spec.help
    # The form template shows it beside the field; Django fields have no slot for it.
    field.default_text = display_value(spec.name, spec.default)  # type: ignore[attr-defined]
    return field


class ConfigForm(forms.Form):
    """A name and every JSON field of ``ReductionConfig``; ``config_data`` is the JSON.

    One form field per field of ``engine.json_config_fields()``, by kind, built when the
    form is made. Validation is the engine's own (``config_from_dict``): its
    ``ConfigError`` names the field, and the form shows the message next to that field.
    """

    name = forms.CharField(max_length=100)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.specs = engine.json_config_fields()
        for spec in self.specs:
            self.fields[spec.name] = form_field(spec)
        self.config_data: dict[str, Any] = {}

    def config_fields(self) -> list[forms.BoundField]:
        return [self[spec.name] for spec in self.specs]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        data: dict[str, Any] = {}
        for spec in self.specs:
            if spec.name not in cleaned:
                continue  # Django already put an error on it
            value = cleaned[spec.name]
            if spec.kind == "tool_names":
                value = _split_names(value)
            elif spec.kind == "limits_by_name":
                try:
                    value = _parse_limits(value)
                except forms.ValidationError as exc:
                    self.add_error(spec.name, exc)
                    continue
            elif spec.kind == "optional_choice":
                value = value or None
            data[spec.name] = value
        try:
            engine.check_config(data)
        except engine.ConfigError as exc:
            # ``trunc_tool_limits.Read`` is the ``trunc_tool_limits`` field's error.
            field = exc.field.split(".", 1)[0]
            self.add_error(field if field in self.fields else None, str(exc))
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
    for name in defaults:
        old, new = previous.get(name, defaults[name]), current.get(name, defaults[name])
        if old != new:
            out.append((name, display_value(name, old), display_value(name, new)))
    return out
