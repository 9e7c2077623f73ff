"""Prices from JSON: the schema, its errors, and ``--pricing FILE``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.importers import load_conversations
from simulator.price_file import load_price_file, pricing_from_json, pricing_to_json, resolve
from simulator.pricing import (
    LONG_CONTEXT_FIELDS,
    OPENAI_CHAT_FRAMING,
    PRESETS,
    PRICE_FIELDS,
    LongContext,
    PriceError,
    Pricing,
)
from simulator.replay import replay
from tests.conftest import CONVERSATIONS, REPO, needs_recordings
from tests.simulator.test_cli import run

MY_MODEL = {
    "name": "my-model",
    "input": 1.25,
    "output": 10,
    "cache_read": 0.125,
    "cache_write": 1.25,
    "min_cacheable_prefix": 1024,
    "tokenizer": "o200k_base",
    "framing": "openai-chat",
    "long_context": {"above": 200000, "input": 2.5, "output": 15, "cache_read": 0.25},
}


def test_pricing_from_json_reads_every_field() -> None:
    pricing = pricing_from_json(MY_MODEL, where="prices.json")
    assert pricing == Pricing(
        name="my-model",
        input_per_mtok=1.25,
        output_per_mtok=10.0,
        cached_input_per_mtok=0.125,
        cache_write_per_mtok=1.25,
        min_cacheable_prefix=1024,
        tokenizer="o200k_base",
        framing=OPENAI_CHAT_FRAMING,
        long_context=LongContext(
            above=200_000, input_per_mtok=2.5, output_per_mtok=15.0, cached_input_per_mtok=0.25
        ),
    )


def test_pricing_from_json_defaults() -> None:
    """Only ``input`` is required: a cache read costs the input price, no tokenizer."""
    pricing = pricing_from_json({"input": 3}, where="p.json")
    assert (pricing.name, pricing.cached_input_per_mtok, pricing.cache_write_per_mtok) == (
        "custom",
        3.0,
        None,
    )
    assert (pricing.tokenizer, pricing.framing.name, pricing.long_context) == (None, "none", None)


def test_pricing_from_json_base_overrides_a_preset() -> None:
    pricing = pricing_from_json(
        {"base": "gemini-2.5-pro", "name": "ours", "input": 1.0}, where="p.json"
    )
    gemini = PRESETS["gemini-2.5-pro"]
    assert (pricing.name, pricing.input_per_mtok) == ("ours", 1.0)
    assert pricing.long_context == gemini.long_context
    assert (pricing.tokenizer, pricing.framing, pricing.estimate) == (
        gemini.tokenizer,
        gemini.framing,
        True,
    )
    flat = pricing_from_json({"base": "gemini-2.5-pro", "long_context": None}, where="p.json")
    assert (flat.name, flat.long_context) == ("gemini-2.5-pro", None)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_pricing_to_json_reads_back_every_preset(name: str) -> None:
    data = pricing_to_json(PRESETS[name])
    assert list(data) == ["name", *(f.key for f in PRICE_FIELDS), "long_context"]
    assert pricing_from_json(json.loads(json.dumps(data)), where="x") == PRESETS[name]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"input": "x"}, 'prices.json: input: must be a non-negative number, got "x"'),
        ({"input": -1}, "prices.json: input: must be a non-negative number, got -1"),
        ({"input": True}, "prices.json: input: must be a non-negative number, got true"),
        ({"input": 1, "colour": 1}, "prices.json: colour: unknown field; known: base, "
         "cache_read, cache_write, estimate, framing, input, long_context, "
         "min_cacheable_prefix, name, output, prompt_cache, tokenizer"),
        ({}, "prices.json: input: required (or name a preset in base)"),
        ([1], "prices.json: must be a JSON object, got [1]"),
        ({"base": "gpt-9"}, "prices.json: base: must name a preset ("),
        ({"input": 1, "name": ""}, 'prices.json: name: must be 1 to 64 characters, got ""'),
        ({"input": 1, "tokenizer": "llama"},
         'prices.json: tokenizer: must be cl100k_base, o200k_base or null, got "llama"'),
        ({"input": 1, "framing": "x", "tokenizer": "o200k_base"},
         'prices.json: framing: must be one of none, openai-chat, anthropic, anthropic-3.5, '
         'gemini, got "x"'),
        ({"input": 1, "framing": ["x"], "tokenizer": "o200k_base"},
         'prices.json: framing: must be one of none, openai-chat, anthropic, anthropic-3.5, '
         'gemini, got ["x"]'),
        ({"input": 1, "framing": "gemini"},
         "prices.json: framing: 'gemini' needs a tokenizer"),
        ({"input": 1, "min_cacheable_prefix": 1.5},
         "prices.json: min_cacheable_prefix: must be a whole number of tokens, 0 or more, got 1.5"),
        ({"input": 1, "long_context": {"above": 10}},
         "prices.json: long_context: input: required"),
        ({"input": 1, "long_context": {"above": 10, "input": 2, "ttl": 1}},
         "prices.json: long_context: ttl: unknown field; known: above, cache_read, "
         "cache_write, input, output"),
        ({"input": 1, "long_context": {"above": 0, "input": 2}},
         "prices.json: long_context: above: must be 1 or more, got 0"),
    ],
)  # fmt: skip
def test_pricing_from_json_refuses_by_field(data: object, message: str) -> None:
    with pytest.raises(PriceError) as info:
        pricing_from_json(data, where="prices.json")
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_long_context_fields_are_the_tiers_attributes() -> None:
    """One declaration: the JSON fields map onto the dataclasses' own attributes."""
    assert {f.attr for f in LONG_CONTEXT_FIELDS} == set(LongContext.__dataclass_fields__)
    names = set(Pricing.__dataclass_fields__) - {"name", "long_context"}
    assert {f.attr for f in PRICE_FIELDS} == names


def test_resolve_names_a_preset_or_a_file(tmp_path: Path) -> None:
    assert resolve("gpt-4o") is PRESETS["gpt-4o"]
    path = tmp_path / "mine"
    path.write_text(json.dumps({"input": 2}), encoding="utf-8")
    assert resolve(str(path)).input_per_mtok == 2.0
    with pytest.raises(PriceError) as info:
        resolve("gpt-9")
    assert str(info.value).startswith("unknown price preset 'gpt-9'; known: claude-haiku-3.5,")
    with pytest.raises(PriceError) as info:
        load_price_file(str(tmp_path / "gone.json"))
    assert str(info.value) == "gone.json: cannot read the price file: No such file or directory"
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(PriceError) as info:
        resolve(str(broken))
    assert str(info.value).startswith("broken.json: not JSON: ")


def test_cli_pricing_file_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"input": "x"}), encoding="utf-8")
    code, out, err = run("replay", "x.json", "--pricing", path)
    assert (code, out) == (2, "")
    assert err == 'error: prices.json: input: must be a non-negative number, got "x"\n'


SYMPY = "mini-swe-agent/sympy__sympy-15976.traj.json"


@needs_recordings
def test_replay_bills_calls_past_the_threshold_at_the_tier(tmp_path: Path) -> None:
    """A real Gemini 3 Pro run, at Gemini 3 Pro prices with the threshold moved to 60,000
    tokens (the run peaks near 90,000): every call past it is billed at the tier's
    rates, the others at the base ones, worked out here call by call."""
    conversation = load_conversations(CONVERSATIONS / SYMPY)[0]
    path = tmp_path / "gemini-60k.json"
    data = {"base": "gemini-3-pro", "name": "gemini-60k"}
    data["long_context"] = {"above": 60_000, "input": 4, "output": 18, "cache_read": 0.4}
    path.write_text(json.dumps(data), encoding="utf-8")
    pricing = load_price_file(str(path))
    result = replay(conversation, None, pricing=pricing)
    long = [c for c in result.calls if c.context_tokens > 60_000]
    short = [c for c in result.calls if c.context_tokens <= 60_000]
    assert long and short
    expected = sum(c.new_tokens * 4.0 + c.cached_tokens * 0.4 for c in long) / 1e6
    expected += sum(c.new_tokens * 2.0 + c.cached_tokens * 0.2 for c in short) / 1e6
    assert result.totals.cost_usd == round(expected, 6)
    assert result.totals.long_context_tokens == sum(c.context_tokens for c in long)
    flat = replay(conversation, None, pricing=PRESETS["gemini-3-pro"])
    assert [c.context_tokens for c in flat.calls] == [c.context_tokens for c in result.calls]
    assert flat.totals.cost_usd < result.totals.cost_usd
    # The command line takes the file and reports the same cost.
    code, out, _ = run("replay", CONVERSATIONS / SYMPY, "--pricing", path, "--json")
    assert code == 0
    assert json.loads(out)["results"][0]["totals"]["cost_usd"] == result.totals.cost_usd


def test_simulator_page_lists_every_price_field() -> None:
    """docs/simulator.md's table of price file fields is :data:`PRICE_FIELDS` and
    :data:`LONG_CONTEXT_FIELDS`, in their order, with their help."""
    rows = [f"| `{f.key}` | {f.help} |" for f in PRICE_FIELDS]
    rows += [f"| `long_context.{f.key}` | {f.help} |" for f in LONG_CONTEXT_FIELDS]
    page = (REPO / "docs" / "simulator.md").read_text(encoding="utf-8")
    assert "|---|---|\n" + "\n".join(rows) + "\n\n" in page
