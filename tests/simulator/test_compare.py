"""Comparing configs side by side, sweeping grids, and the Pareto front."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.compare import compare, cost_point, grid_configs, pareto_front, sweep
from simulator.importers import RecordedConversation, load_conversations
from simulator.pricing import pricing_for
from simulator.replay import replay
from tests.conftest import CONVERSATIONS, needs_recordings
from tests.simulator.cases import ENGINE, HAND_CONFIG, hand_conversation


def test_compare_deltas_against_the_first() -> None:
    conv = hand_conversation()
    comparison = compare(
        conv, [("off", None), ("hand", HAND_CONFIG)], min_cacheable_prefix=10, pricing=ENGINE
    )
    assert [r.name for r in comparison.results] == ["off", "hand"]
    assert comparison.baseline is comparison.results[0]
    assert set(comparison.deltas[0].values()) == {0}
    delta = comparison.deltas[1]
    # Without reduction the calls send 30, 139 (30+8+101), 348 (139+8+201) and
    # 1,357 (348+8+1001, the whole 4,000-character result): 1,874 in all.
    off = comparison.results[0].totals
    assert (off.input_tokens_billed, off.peak_context_tokens) == (1874, 1357)
    assert delta["input_tokens_billed"] == 792 - 1874
    assert delta["peak_context_tokens"] == 350 - 1357
    assert delta["truncations"] == 1
    assert delta["chars_offloaded"] == 5200
    assert delta["mean_visible_tool_share"] == round(0.555188 - 1.0, 6)


def test_compare_deltas_against_no_reduction() -> None:
    conv = hand_conversation()
    comparison = compare(
        conv, [("hand", HAND_CONFIG)], baseline="none", min_cacheable_prefix=10, pricing=ENGINE
    )
    assert comparison.baseline.name == "no reduction"
    assert comparison.baseline not in comparison.results
    assert comparison.deltas[0]["input_tokens_billed"] == 792 - 1874
    as_json = comparison.to_dict()
    assert as_json["baseline"] == "no reduction"
    assert as_json["results"][0]["deltas"] == comparison.deltas[0]


def test_compare_keeps_the_per_call_series() -> None:
    comparison = compare(
        hand_conversation(), [("hand", HAND_CONFIG)], min_cacheable_prefix=10, pricing=ENGINE
    )
    calls = comparison.to_dict()["results"][0]["calls"]
    assert [c["context_tokens"] for c in calls] == [30, 139, 273, 350]
    assert [c["cached_tokens"] for c in calls] == [0, 30, 38, 72]
    assert [c["new_tokens"] for c in calls] == [30, 109, 235, 278]
    assert [len(c["events"]) for c in calls] == [1, 1, 2, 3]


def test_compare_refuses_no_configs_and_unknown_baselines() -> None:
    with pytest.raises(ValueError) as none:
        compare(hand_conversation(), [], pricing=ENGINE)
    assert str(none.value) == "compare needs at least one config"
    with pytest.raises(ValueError) as last:
        compare(hand_conversation(), [("a", None)], baseline="last", pricing=ENGINE)
    assert str(last.value) == "baseline must be 'first' or 'none', got 'last'"


def test_grid_configs_every_combination_with_fixed_fields() -> None:
    grid = {
        "max_tokens_for_clear": [100, 200],
        "max_length_for_trunc": [10, 20, 30],
        "language": "zh",
    }
    configs = grid_configs(grid)
    assert len(configs) == 6
    assert configs[0] == {"language": "zh", "max_length_for_trunc": 10, "max_tokens_for_clear": 100}
    assert {(c["max_length_for_trunc"], c["max_tokens_for_clear"]) for c in configs} == {
        (a, b) for a in (10, 20, 30) for b in (100, 200)
    }


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ([1, 2], "grid: expected a JSON object of knob -> list of values, got [1, 2]"),
        (
            {},
            "grid: name at least one of ['max_tokens_for_clear', "
            "'clear_retention_suffix_limit', 'clear_at_least_tokens', 'max_length_for_trunc', "
            "'trunc_only_when_shorter', 'clear_cache_aware', 'clear_superseded', "
            "'clear_offload_manifest']",
        ),
        (
            {"max_tokens_for_clear": []},
            "grid.max_tokens_for_clear: expected a non-empty list of values, got []",
        ),
        (
            {"max_tokens_for_clear": 5},
            "grid.max_tokens_for_clear: expected a non-empty list of values, got 5",
        ),
        (
            {"max_tokens_for_clear": [100, "lots"]},
            "grid: max_tokens_for_clear must be an integer, got 'lots'",
        ),
        ({"max_tokens_for_clear": [100], "colour": "red"}, "grid: colour is not a config field"),
    ],
)
def test_grid_configs_bad_grids(grid: object, message: str) -> None:
    with pytest.raises(ValueError) as info:
        grid_configs(grid)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_pareto_front_crafted_points() -> None:
    points = [
        (100, 5),  # 0: front (fewest tokens)
        (200, 1),  # 1: front
        (150, 5),  # 2: beaten by 0
        (300, 0),  # 3: front (no re-fetches)
        (200, 2),  # 4: beaten by 1
        (100, 5),  # 5: equal to 0, not beaten by it: front too
        (400, 0),  # 6: beaten by 3
    ]
    assert pareto_front(points) == [0, 1, 3, 5]
    assert pareto_front([]) == []
    assert pareto_front([(7, 7)]) == [0]


def test_sweep_replays_every_combination() -> None:
    grid = {"max_tokens_for_clear": [200, 300, 5000], "max_length_for_trunc": [800, 100000]}
    progress: list[tuple[int, int]] = []
    result = sweep(
        hand_conversation(),
        grid,
        min_cacheable_prefix=10,
        progress=lambda d, t: progress.append((d, t)),
        pricing=ENGINE,
    )
    assert progress == [(i, 6) for i in range(1, 7)]
    assert [r.name for r in result.results] == [
        f"max_length_for_trunc={a},max_tokens_for_clear={b}"
        for a in (800, 100000)
        for b in (200, 300, 5000)
    ]
    hand = result.results[1]
    assert dataclasses.asdict(hand.totals) == dataclasses.asdict(
        replay(hand_conversation(), HAND_CONFIG, min_cacheable_prefix=10, pricing=ENGINE).totals
    )
    as_json = result.to_dict()
    assert as_json["pareto_front"] == list(result.front)
    assert [r["pareto"] for r in as_json["results"]] == [i in result.front for i in range(6)]


@needs_recordings
def test_sweep_front_on_a_real_run() -> None:
    conv = load_conversations(CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl")[1]
    grid = {
        "max_tokens_for_clear": [2000, 4000, 8000, 16000],
        "clear_retention_suffix_limit": [1, 3],
        "max_length_for_trunc": [2000, 20000],
    }
    result = sweep(conv, grid, pricing=ENGINE)
    assert len(result.results) == 16
    points = [cost_point(r) for r in result.results]

    def beats(p: tuple[int, int], q: tuple[int, int]) -> bool:
        return p[0] <= q[0] and p[1] <= q[1] and p != q

    assert result.front
    for i, p in enumerate(points):
        beaten = any(beats(q, p) for q in points)
        assert (i in result.front) == (not beaten), (i, p)
    cheapest = min(range(16), key=lambda i: points[i])
    assert cheapest in result.front


def test_compare_passes_contexts_to_every_replay() -> None:
    comparison = compare(
        hand_conversation(), [("off", None), ("tight", HAND_CONFIG)], contexts={3}, pricing=ENGINE
    )
    off, tight = (r.contexts[3] for r in comparison.results)
    assert off[3].content == "x" * 400
    assert tight[3].content.startswith("<persisted-output>Tool result saved to: /tmp/clear/")
    assert comparison.baseline.contexts.keys() == {3}


def test_grid_configs_refuses_a_grid_too_big_before_building_it() -> None:
    import pytest

    from simulator.compare import MAX_GRID_CONFIGS, grid_configs

    big = {knob: list(range(1, 101)) for knob in ("max_tokens_for_clear", "clear_at_least_tokens")}
    with pytest.raises(
        ValueError, match=r"^grid: 10,000 combinations; at most 1,000 can be swept at once$"
    ):
        grid_configs(big)
    assert (
        len(grid_configs({"max_tokens_for_clear": list(range(1, MAX_GRID_CONFIGS + 1))})) == 1_000
    )


def test_compare_baseline_none_per_counter_under_the_engine_measure() -> None:
    """Each config is compared with no reduction counted by its own counter: a config on
    cl100k that reduces nothing shows no delta even beside an approx config."""
    configs = [("tight", HAND_CONFIG), ("idle", {"token_counter": "cl100k_base"})]
    comparison = compare(hand_conversation(), configs, baseline="none", pricing=ENGINE)
    assert comparison.deltas[1]["input_tokens_billed"] == 0
    assert comparison.deltas[0]["input_tokens_billed"] < 0
    assert comparison.baseline.name == "no reduction"
    # the row shown is the first config's baseline (approx): 30 + 139 + 348 + 1,357
    assert comparison.baseline.totals.input_tokens_billed == 1_874


def test_sweep_measures_savings_against_no_reduction() -> None:
    grid = {"max_tokens_for_clear": [300, 5000], "max_length_for_trunc": [800]}
    result = sweep(hand_conversation(), grid, min_cacheable_prefix=10, pricing=ENGINE)
    assert result.baseline is not None
    base = replay(hand_conversation(), None, min_cacheable_prefix=10, pricing=ENGINE)
    assert result.baseline.totals == base.totals
    as_json = result.to_dict()
    assert as_json["baseline"] == {
        "name": "no reduction",
        "totals": dataclasses.asdict(base.totals),
    }
    for row, replayed in zip(as_json["results"], result.results, strict=True):
        expected = (base.totals.cost_usd - replayed.totals.cost_usd) / base.totals.cost_usd
        assert row["cost_saved"] == result.saving(replayed) == expected
    # The front is cost against re-fetches: the tighter config costs less, no more re-fetches.
    assert result.front == (0,)


def test_sweep_and_compare_give_cache_aware_configs_the_preset_cache_prices() -> None:
    """A cache-aware config weighs the cache at the prices the replay bills: 50% to read
    and 100% to write at gpt-4o's, unless the config names its own."""
    gpt4o = pricing_for("gpt-4o")
    swept = sweep(hand_conversation(), {"clear_cache_aware": [False, True]}, pricing=gpt4o)
    off, on = swept.results
    assert off.config["clear_cache_read_percent"] == 10  # the engine's default, unused
    assert (on.config["clear_cache_read_percent"], on.config["clear_cache_write_percent"]) == (
        50,
        100,
    )
    own = {"clear_cache_aware": True, "clear_cache_read_percent": 25}
    compared = compare(hand_conversation(), [("own", own)], pricing=gpt4o)
    assert compared.results[0].config["clear_cache_read_percent"] == 25
    assert compared.results[0].config["clear_cache_write_percent"] == 100


def _corpus() -> RecordedConversation:
    from reduction_app.engine.formats import parse_tools
    from simulator.corpus import TOOLS_OPENAI, build_conversation

    messages = build_conversation(min_messages=300, min_chars=300_000)
    return RecordedConversation("corpus", messages, parse_tools("openai_chat", TOOLS_OPENAI))


@pytest.mark.parametrize("source", [pytest.param("recording", marks=needs_recordings), "corpus"])
def test_sweep_fast_path_equals_the_plain_loop(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shared and over two processes, a sweep gives what one replay per combination in one
    process gives: every result, the baseline and the front."""
    from simulator import parallel

    monkeypatch.setattr(parallel, "POOL_MIN_STEPS", 0)
    if source == "corpus":
        conversation = _corpus()
    else:
        conversation = load_conversations(
            CONVERSATIONS / "openhands" / "fastjson2-2775-gpt-5.jsonl"
        )[0]
    grid = {
        "max_tokens_for_clear": [4_000, 12_000, 40_000],
        "clear_retention_suffix_limit": [1, 3],
        "max_length_for_trunc": [4_000, 50_000],
        "clear_cache_aware": [False, True],
    }
    pricing = pricing_for("claude-sonnet-4.5")
    fast = sweep(conversation, grid, pricing=pricing, workers=2, share=True)
    plain = sweep(conversation, grid, pricing=pricing, workers=1, share=False)
    assert fast == plain
    assert len(fast.results) == 24 and fast.front
    assert sum(1 for r in fast.results if r.totals.clears) >= 8


def test_sweep_configs_names_and_cache_prices() -> None:
    from simulator.compare import sweep_configs

    grid = {"max_tokens_for_clear": [300, 5000], "clear_cache_aware": [True], "language": "zh"}
    assert sweep_configs(grid, pricing_for("gpt-4o")) == [
        (
            f"clear_cache_aware=True,max_tokens_for_clear={t}",
            {
                "clear_cache_read_percent": 50,
                "clear_cache_write_percent": 100,
                "clear_cache_aware": True,
                "language": "zh",
                "max_tokens_for_clear": t,
            },
        )
        for t in (300, 5000)
    ]


def test_sweep_result_of_marks_the_front() -> None:
    from simulator.compare import SweepResult

    runs = [
        replay(hand_conversation(), c, pricing=ENGINE)
        for c in ({"max_tokens_for_clear": 300, "max_length_for_trunc": 800}, None)
    ]
    result = SweepResult.of(runs, runs[1])
    assert result.front == (0,)
    assert result.saving(runs[1]) == 0.0
