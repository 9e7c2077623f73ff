"""The spec of the config fields: it matches the dataclass, and the engine's JSON reader,
writer, checks and zero-means-default rule follow it (an injected field included)."""

from __future__ import annotations

from typing import Any

import pytest

from reduction_app.engine import (
    CONFIG_FIELDS,
    JSON_FIELDS,
    MAX_CONFIG_INT,
    MIN_CONFIG_INT,
    ConfigError,
    ConfigField,
    InMemoryBackend,
    config_field,
    config_field_defaults,
    config_fields,
    config_from_dict,
    config_knobs,
    config_to_dict,
    json_config_fields,
)
from reduction_app.engine.config import filled
from tests.engine.config_support import ExtendedConfig, inject_extra_field


@pytest.fixture
def extra_field(monkeypatch: pytest.MonkeyPatch) -> ConfigField:
    return inject_extra_field(monkeypatch)


def test_config_fields_match_the_dataclass() -> None:
    """Every field, in order, with the dataclass's default."""
    assert [(f.name, f.default) for f in CONFIG_FIELDS] == config_field_defaults()


def test_config_fields_help_is_one_plain_line() -> None:
    for spec in CONFIG_FIELDS:
        assert spec.help.endswith("."), spec.name
        assert "\n" not in spec.help and "`" not in spec.help, spec.name


def test_json_fields_are_the_spec_json_kinds() -> None:
    assert tuple(f.name for f in json_config_fields()) == JSON_FIELDS
    assert JSON_FIELDS == (
        "skip_truncation",
        "skip_clear",
        "read_file_tool_name",
        "root_dir",
        "max_length_for_trunc",
        "trunc_tool_limits",
        "trunc_command_limits",
        "trunc_exclude_tools",
        "trunc_only_when_shorter",
        "trunc_stream_text_raw",
        "token_counter",
        "max_tokens_for_clear",
        "clear_retention_suffix_limit",
        "clear_at_least_tokens",
        "clear_cache_aware",
        "clear_cache_read_percent",
        "clear_cache_write_percent",
        "clear_cache_ceiling_tokens",
        "clear_exclude_tools",
        "clear_digest_tokens",
        "clear_superseded",
        "clear_offload_manifest",
        "language",
    )


def test_config_knobs_in_knob_order() -> None:
    assert [f.name for f in config_knobs()] == [
        "max_tokens_for_clear",
        "clear_retention_suffix_limit",
        "clear_at_least_tokens",
        "max_length_for_trunc",
    ]
    assert all(f.kind == "int" for f in config_knobs())


def test_config_field_by_name() -> None:
    assert config_field("root_dir").default == "/tmp"
    with pytest.raises(KeyError):
        config_field("nope")


def test_in_force_zero_means_default_only_where_the_spec_says() -> None:
    assert [f.name for f in CONFIG_FIELDS if f.zero_means_default] == [
        "max_length_for_trunc",
        "max_tokens_for_clear",
        "clear_retention_suffix_limit",
    ]
    assert config_field("max_tokens_for_clear").in_force(0) == 160_000
    assert config_field("clear_retention_suffix_limit").in_force(0) == 1
    assert config_field("clear_retention_suffix_limit").in_force(-1) == -1
    assert config_field("clear_at_least_tokens").in_force(0) == 0


def test_filled_applies_the_zero_rule() -> None:
    config = config_from_dict(
        {"max_length_for_trunc": 0, "max_tokens_for_clear": 0, "clear_retention_suffix_limit": 0},
        backend=InMemoryBackend(),
    )
    done = filled(config)
    assert (done.max_length_for_trunc, done.max_tokens_for_clear) == (50_000, 160_000)
    assert done.clear_retention_suffix_limit == 1
    assert done.clear_at_least_tokens == 0


def test_injected_field_is_read_written_and_checked(extra_field: ConfigField) -> None:
    """Adding a field is a spec entry and the dataclass field: nothing else in the engine."""
    assert [f.name for f in config_fields()][-1] == "clear_extra_rounds"
    config = config_from_dict({"clear_extra_rounds": 5}, backend=InMemoryBackend())
    assert isinstance(config, ExtendedConfig)
    assert config.clear_extra_rounds == 5
    assert config_to_dict(config)["clear_extra_rounds"] == 5
    assert list(config_to_dict(config))[-1] == "clear_extra_rounds"
    zero = config_from_dict({"clear_extra_rounds": 0}, backend=InMemoryBackend())
    assert filled(zero).clear_extra_rounds == 3
    with pytest.raises(ConfigError) as bad:
        config_from_dict({"clear_extra_rounds": -1}, backend=InMemoryBackend())
    assert str(bad.value) == "clear_extra_rounds must be at least 0, got -1"
    assert [f.name for f in config_knobs()][-1] == "clear_extra_rounds"


def test_unknown_and_python_only_keys_are_refused() -> None:
    with pytest.raises(ConfigError) as unknown:
        config_from_dict({"nope": 1}, backend=InMemoryBackend())
    assert str(unknown.value) == "nope is not a config field"
    with pytest.raises(ConfigError) as python_only:
        config_from_dict({"on_event": None}, backend=InMemoryBackend())
    assert str(python_only.value) == "on_event cannot be set from JSON"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"skip_clear": 1}, "skip_clear must be true or false, got 1"),
        ({"root_dir": "a/../b"}, "root_dir must not contain '..', got 'a/../b'"),
        (
            {"read_file_tool_name": ""},
            "read_file_tool_name must be a non-empty string without whitespace, got ''",
        ),
        (
            {"trunc_exclude_tools": [""]},
            "trunc_exclude_tools must hold non-empty tool names, got ''",
        ),
        ({"language": "fr"}, "language must be one of ['en', 'zh'] or None, got 'fr'"),
        (
            {"max_length_for_trunc": 2**63},
            "max_length_for_trunc must be at most 9223372036854775807, got 9223372036854775808",
        ),
        # Several faults: the switches come first, then names, numbers, lists, choices.
        ({"language": "fr", "skip_clear": "no"}, "skip_clear must be true or false, got 'no'"),
        (
            {"clear_exclude_tools": "x", "max_tokens_for_clear": -1},
            "max_tokens_for_clear must be at least 0, got -1",
        ),
        (
            {"token_counter": "x", "root_dir": " "},
            "root_dir must be a non-empty string without whitespace, got ' '",
        ),
        # Text knobs go into offload paths, events and database rows.
        ({"root_dir": "/tmp/\x00x"}, "root_dir must not contain NUL characters"),
        (
            {"root_dir": "/tmp/\ud800"},
            "root_dir must not contain a lone surrogate ('\\ud800' at 5)",
        ),
        (
            {"read_file_tool_name": "read\udfff"},
            "read_file_tool_name must not contain a lone surrogate ('\\udfff' at 4)",
        ),
        (
            {"clear_exclude_tools": ["grep", "g\x00"]},
            "clear_exclude_tools must not contain NUL characters",
        ),
        # A retention may be negative (it keeps no round), within Go's 64-bit int.
        (
            {"clear_retention_suffix_limit": -(2**70)},
            "clear_retention_suffix_limit must be at least -9223372036854775808, "
            "got -1180591620717411303424",
        ),
    ],
)
def test_checks_by_kind(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as bad:
        config_from_dict(data, backend=InMemoryBackend())
    assert str(bad.value) == message


def test_every_int_field_has_a_range_within_gos_int() -> None:
    """The reference's ints are Go's 64-bit ``int``; each field's range is declared once."""
    ints = [spec for spec in CONFIG_FIELDS if spec.kind == "int"]
    assert ints
    for spec in ints:
        low, high = spec.bounds
        assert MIN_CONFIG_INT <= low <= spec.default <= high <= MAX_CONFIG_INT, spec.name
    assert config_field("clear_retention_suffix_limit").bounds == (-(2**63), 2**63 - 1)
    assert config_field("max_tokens_for_clear").bounds == (0, 2**63 - 1)


@pytest.mark.parametrize(
    "spec", [s for s in CONFIG_FIELDS if s.kind == "int"], ids=lambda s: s.name
)
def test_every_int_field_takes_its_bounds_and_refuses_past_them(spec: ConfigField) -> None:
    low, high = spec.bounds
    for value in (low, high):
        config = config_from_dict({spec.name: value}, backend=InMemoryBackend())
        assert getattr(config, spec.name) == value
    for value, problem in ((low - 1, f"at least {low}"), (high + 1, f"at most {high}")):
        with pytest.raises(ConfigError) as bad:
            config_from_dict({spec.name: value}, backend=InMemoryBackend())
        assert (bad.value.field, str(bad.value)) == (
            spec.name,
            f"{spec.name} must be {problem}, got {value}",
        )
