"""Provider usage as JSON: what the app stores of an imported recording's figures."""

from __future__ import annotations

import json

import pytest

from simulator.recording import ProviderUsage


def test_provider_usage_json_round_trips() -> None:
    usage = ProviderUsage(
        prompt_tokens={1: 15_214, 3: 16_120},
        total_prompt_tokens=31_334,
        api_calls=2,
        cached_prompt_tokens={3: 15_214},
        completion_tokens={1: 40, 3: 12},
        call_times={1: 1_700_000_000.5},
        cost=0.0125,
    )
    stored = json.loads(json.dumps(usage.to_json()))
    assert stored["prompt_tokens"] == {"1": 15_214, "3": 16_120}
    assert ProviderUsage.from_json(stored) == usage


def test_provider_usage_json_leaves_out_what_json_cannot_hold() -> None:
    usage = ProviderUsage(call_times={1: float("nan"), 3: 2.0}, cost=float("inf"))
    assert usage.to_json()["call_times"] == {"3": 2.0}
    assert usage.to_json()["cost"] is None


def test_provider_usage_from_json_takes_an_empty_object() -> None:
    assert ProviderUsage.from_json({}) == ProviderUsage()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"prompt_tokens": [1]}, "prompt_tokens: expected an object, got [1]"),
        ({"prompt_tokens": {"x": 1}}, "prompt_tokens: unexpected entry 'x': 1"),
        ({"prompt_tokens": {"1": "12"}}, "prompt_tokens.1: expected a number, got '12'"),
        ({"prompt_tokens": {"1": 1.5}}, "prompt_tokens.1: expected a number, got 1.5"),
        ({"cost": True}, "cost: expected a number, got True"),
    ],
)
def test_provider_usage_from_json_names_the_field_at_fault(
    data: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError) as caught:
        ProviderUsage.from_json(data)
    assert str(caught.value) == message
