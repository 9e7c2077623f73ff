"""A config written out as code to take away: JSON (every field), a Python
``ReductionConfig(...)`` call, a body for ``POST /api/v1/clear`` and each framework
adapter's constructor (:data:`ADAPTERS`). The fields, their order and kinds come from the
engine's spec; the Python, REST and adapter forms name only those that differ from the
defaults. What JSON cannot carry (storage, handlers) is the user's: the Python forms keep
offloads in a local folder, ``offload``. Pages show these; nothing here renders HTML."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reduction_app import engine

__all__ = [
    "ADAPTERS",
    "Adapter",
    "Snippet",
    "config_snippets",
    "non_default_fields",
    "shown_snippets",
]


@dataclass(frozen=True, kw_only=True)
class Adapter:
    """A framework adapter of :mod:`reduction_app.integrations`, as a snippet names it."""

    key: str
    """The module's name under ``reduction_app.integrations``."""
    label: str
    """The framework's name, as docs/integrations.md gives it."""
    name: str
    """The class to construct (all take ``config`` then ``backend=``)."""

    @property
    def module(self) -> str:
        return f"reduction_app.integrations.{self.key}"


ADAPTERS: tuple[Adapter, ...] = (
    Adapter(key="langchain", label="LangChain", name="ReductionMiddleware"),
    Adapter(key="pydantic_ai", label="pydantic-ai", name="Reduction"),
    Adapter(key="openai_agents", label="OpenAI Agents SDK", name="Reduction"),
)
"""Every adapter (a test holds this to the modules of ``reduction_app.integrations``)."""


@dataclass(frozen=True, kw_only=True)
class Snippet:
    """One way to write a config out."""

    key: str
    """Unique among a config's snippets: ``json``, ``python``, ``rest`` or an adapter's key."""
    label: str
    language: str
    """``json`` or ``python``."""
    text: str
    note: str
    """One line for the user: what the snippet holds and what to add."""


_BACKEND = 'LocalFileBackend("offload")'
_ENGINE_IMPORT = "from reduction_app.engine import LocalFileBackend, ReductionConfig"
_DEFAULTS: dict[str, Any] = engine.config_to_dict(engine.check_config({}))


def non_default_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a JSON config (checked, :class:`~reduction_app.engine.ConfigError`
    when it is not one) whose values differ from the defaults, in the spec's order."""
    full = engine.config_to_dict(engine.check_config(data))
    return {name: value for name, value in full.items() if value != _DEFAULTS[name]}


def _python(value: Any) -> str:
    """A Python literal of a JSON config value: lists become tuples, as the engine keeps
    tool names."""
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a Python string literal too
    if isinstance(value, list | tuple):
        items = [_python(item) for item in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_python(k)}: {_python(v)}" for k, v in value.items()) + "}"
    return repr(value)  # bool, int and None are written as Python writes them


def _config_call(changed: Mapping[str, Any], *, backend: bool, indent: str) -> str:
    """``ReductionConfig(...)`` with the changed fields, one a line."""
    args = ([f"backend={_BACKEND}"] if backend else []) + [
        f"{name}={_python(value)}" for name, value in changed.items()
    ]
    if not args:
        return "ReductionConfig()"
    inner = "".join(f"{indent}    {arg},\n" for arg in args)
    return f"ReductionConfig(\n{inner}{indent})"


def _adapter(adapter: Adapter, changed: Mapping[str, Any]) -> Snippet:
    text = (
        f"{_ENGINE_IMPORT}\n"
        f"from {adapter.module} import {adapter.name}\n\n"
        f"reduction = {adapter.name}(\n"
        f"    {_config_call(changed, backend=False, indent='    ')},\n"
        f"    backend={_BACKEND},\n"
        ")\n"
    )
    return Snippet(
        key=adapter.key,
        label=adapter.label,
        language="python",
        text=text,
        note=f"The {adapter.label} adapter, with the fields that differ from the defaults; "
        "offloads go to the folder offload.",
    )


def config_snippets(data: Mapping[str, Any]) -> list[Snippet]:
    """Every snippet of the JSON config ``data`` (the fields a stored version holds;
    missing ones are the defaults)."""
    full = engine.config_to_dict(engine.check_config(data))
    changed = non_default_fields(full)
    python = f"{_ENGINE_IMPORT}\n\nconfig = {_config_call(changed, backend=True, indent='')}\n"
    rest = {"config": changed, "messages": []}
    return [
        Snippet(
            key="json",
            label="JSON",
            language="json",
            text=json.dumps(full, indent=2) + "\n",
            note="Every field, defaults included.",
        ),
        Snippet(
            key="python",
            label="Python",
            language="python",
            text=python,
            note="Only the fields that differ from the defaults; offloads go to the folder "
            "offload (any storage backend will do).",
        ),
        Snippet(
            key="rest",
            label="REST",
            language="json",
            text=json.dumps(rest, indent=2) + "\n",
            note="A body for POST /api/v1/clear with the fields that differ from the "
            "defaults; put your conversation in messages.",
        ),
        *(_adapter(adapter, changed) for adapter in ADAPTERS),
    ]


def shown_snippets(data: Mapping[str, Any] | None) -> list[Snippet]:
    """What a page shows: :func:`config_snippets`, or none for no config (no reduction)
    or one this engine no longer takes (a version stored before a field changed)."""
    if data is None:
        return []
    try:
        return config_snippets(data)
    except engine.ConfigError:
        return []
