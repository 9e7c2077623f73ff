"""The ceiling: a clairvoyant reduction's cost, with no misses, on hand-made
conversations whose answer is known, and below real configs on recorded runs."""

from __future__ import annotations

import io
import json
from pathlib import Path

from reduction_app.engine import Message, messages_to_openai
from simulator.ceiling import KEPT_WHOLE, LADDER, UNDER_LADDER, VARIANTS, ceiling, run_ceiling
from simulator.cli import main
from simulator.importers import RecordedConversation, load_conversations
from simulator.pricing import pricing_for
from simulator.replay import no_reduction, replay, replay_many
from tests.conftest import CONVERSATIONS, needs_recordings
from tests.simulator.cases import ENGINE, TOOLS, call, result

FILLER = "lorem ipsum dolor sit amet " * 300
"""8,100 characters of words too short to be strings an agent may need back."""
NAME = "special_identifier_name"


def _with_name_at(position: int, length: int = 6000) -> str:
    """``length`` characters of filler with :data:`NAME` (between spaces) starting at
    ``position``."""
    text = FILLER[: position - 1] + f" {NAME} " + FILLER
    return text[:length]


def _conversation(first: str, *, use_name: bool) -> RecordedConversation:
    """read_file three times; the first result is ``first``, the others are short; the
    last call names :data:`NAME` when ``use_name``."""
    later = f'{{"path": "{NAME}"}}' if use_name else '{"path": "c"}'
    return RecordedConversation(
        "hand",
        [
            Message.system("You are a test agent."),
            Message.user("Find the answer."),
            call("call_1", '{"path": "a"}'),  # 2
            result("call_1", first),  # 3
            call("call_2", '{"path": "b"}'),  # 4
            result("call_2", "short"),  # 5
            call("call_3", '{"path": "d"}'),  # 6
            result("call_3", "short"),  # 7
            call("call_4", later),  # 8
            result("call_4", "short"),  # 9
            Message.assistant("The answer is 42."),  # 10
        ],
        TOOLS,
    )


def test_ceiling_output_never_used_gets_the_smallest_step_and_is_cleared_after_the_next_call() -> (
    None
):
    run = run_ceiling(_conversation(FILLER[:6000], use_name=False), pricing=ENGINE)
    first, *others = run.outputs
    assert (first.message_index, first.step, first.clear_at) == (3, str(LADDER[0]), 6)
    assert [(o.step, o.clear_at) for o in others] == [
        (UNDER_LADDER, 8),
        (UNDER_LADDER, 10),
        (UNDER_LADDER, None),
    ]
    assert run.steps == {str(LADDER[0]): 1, UNDER_LADDER: 3}
    assert run.misses == run.no_miss_misses == 0
    assert list(run.variants) == list(VARIANTS)
    assert run.cost_usd == min(run.variants.values()) < run.baseline_cost_usd


def test_ceiling_truncation_alone_costs_what_a_replay_truncating_there_costs() -> None:
    """The other outputs are too short to cut, so the oracle truncates as
    ``max_length_for_trunc`` at the smallest step does, and is billed the same."""
    conv = _conversation(FILLER[:6000], use_name=False)
    run = run_ceiling(conv, pricing=ENGINE)
    config = {"max_length_for_trunc": LADDER[0], "skip_clear": True}
    assert run.variants["truncate"] == replay(conv, config, pricing=ENGINE).totals.cost_usd
    assert run.baseline_cost_usd == replay(conv, no_reduction(), pricing=ENGINE).totals.cost_usd


def test_ceiling_output_whose_head_is_used_later_gets_a_step_whose_preview_shows_it() -> None:
    """The name starts at character 1,500 of 6,000: the head preview (half the step)
    shows it from the 4,000 step on (2,000 characters), not at 2,000 (1,000)."""
    run = run_ceiling(_conversation(_with_name_at(1500), use_name=True), pricing=ENGINE)
    first = run.outputs[0]
    assert (first.step, first.clear_at) == ("4000", 10)
    assert run.no_miss_misses == 0


def test_ceiling_output_whose_middle_is_used_later_stays_whole_until_that_call() -> None:
    run = run_ceiling(_conversation(_with_name_at(3000), use_name=True), pricing=ENGINE)
    first = run.outputs[0]
    assert (first.step, first.clear_at) == (KEPT_WHOLE, 10)
    assert run.no_miss_misses == 0
    # Every smaller cut would have missed it: truncation alone at 2,000 does.
    conv = _conversation(_with_name_at(3000), use_name=True)
    cut = replay(conv, {"max_length_for_trunc": 2000, "skip_clear": True}, pricing=ENGINE)
    assert cut.totals.misses == 1


def test_ceiling_output_shown_in_a_user_message_is_not_needed() -> None:
    """A string the user wrote stays in the context whatever is cut."""
    conv = _conversation(_with_name_at(3000), use_name=True)
    messages = list(conv.messages)
    messages[1] = Message.user(f"Find {NAME} here")
    run = run_ceiling(RecordedConversation("hand", messages, TOOLS), pricing=ENGINE)
    assert (run.outputs[0].step, run.outputs[0].clear_at) == (str(LADDER[0]), 6)
    assert run.misses == run.no_miss_misses == 0


def test_ceiling_sums_runs_and_says_so_as_json() -> None:
    convs = [
        _conversation(FILLER[:6000], use_name=False),
        _conversation(_with_name_at(3000), use_name=True),
    ]
    result = ceiling(convs, pricing=ENGINE)
    runs = [run_ceiling(c, pricing=ENGINE) for c in convs]
    assert result.cost_usd == round(sum(r.cost_usd for r in runs), 6)
    assert result.baseline_cost_usd == round(sum(r.baseline_cost_usd for r in runs), 6)
    assert 0 < result.saved < 1
    assert result.steps[str(LADDER[0])] == 1 and result.steps[KEPT_WHOLE] == 1
    assert sum(result.wins.values()) == 2
    assert result.share_of(result.baseline_cost_usd) == 0.0
    assert result.share_of(result.cost_usd) == 1.0
    data = json.loads(json.dumps(result.to_dict()))
    assert data["runs"] == 2 and data["ladder"] == list(LADDER)
    assert data["cost_usd"] <= data["no_miss_cost_usd"] < data["baseline_cost_usd"]
    assert set(data["variants"]) == set(VARIANTS)
    assert "outputs" not in data["per_run"][0]


SONNET = pricing_for("claude-sonnet-4.5")
CONFIGS = [
    ("Eino: clear at 40k", {"max_tokens_for_clear": 40000}),
    (
        "Eino: clear at 10k, truncate at 8k",
        {"max_tokens_for_clear": 10000, "max_length_for_trunc": 8000},
    ),
    ("truncation alone at 2,000", {"skip_clear": True, "max_length_for_trunc": 2000}),
    ("clear at 20k, truncate at 2k", {"max_tokens_for_clear": 20000, "max_length_for_trunc": 2000}),
]


@needs_recordings
def test_ceiling_costs_less_than_real_configs_on_mini_swe_agent_runs() -> None:
    """On every seventh run: no misses under the no-miss plan, the baseline of a replay,
    and below each config's cost where it misses nothing; over the runs, below each
    config's cost with recovery."""
    files = sorted((CONVERSATIONS / "mini-swe-agent").glob("*.traj.json"))
    convs = [load_conversations(files[n])[0] for n in range(0, 43, 7)]
    found = ceiling(convs, pricing=SONNET)
    recovered = dict.fromkeys([name for name, _ in CONFIGS], 0.0)
    for conv, run in zip(convs, found.runs, strict=True):
        assert run.no_miss_misses == 0
        assert run.baseline_cost_usd == replay(conv, None, pricing=SONNET).totals.cost_usd
        results = replay_many(conv, CONFIGS, pricing=SONNET)
        for (name, _), r in zip(CONFIGS, results, strict=True):
            assert r.totals.cost_with_recovery_usd is not None
            recovered[name] += r.totals.cost_with_recovery_usd
            if r.totals.misses == 0:
                assert run.no_miss_cost_usd <= r.totals.cost_usd, (conv.name, name)
    for name, cost in recovered.items():
        assert found.cost_usd <= cost, name


def test_ceiling_reads_back_an_output_used_long_after_when_carrying_it_costs_more() -> None:
    """A 6,000-character output whose middle one call uses 200 calls later: carrying it
    costs more than one read back there, so the read-back plans hide it (and the miss
    is priced), while the no-miss plan keeps it whole until then."""
    filler = [
        m for n in range(200) for m in (call(f"f{n}", '{"path": "x"}'), result(f"f{n}", "ok"))
    ]
    messages = [
        # Long enough for the prompt cache to serve every call, output hidden or not.
        Message.system("You are a test agent. " * 400),
        Message.user("Find the answer."),
        call("call_1", '{"path": "a"}'),
        result("call_1", _with_name_at(3000)),
        *filler,
        call("call_2", f'{{"path": "{NAME}"}}'),
        result("call_2", "short"),
        Message.assistant("The answer is 42."),
    ]
    conv = RecordedConversation("hand", messages, TOOLS)
    run = run_ceiling(conv, pricing=SONNET)
    first = run.outputs[0]
    assert (first.step, first.read_back, first.read_back_all) == (KEPT_WHOLE, True, True)
    assert run.no_miss_misses == 0
    assert run.misses == 1
    assert run.cost_usd < run.no_miss_cost_usd


def test_cli_ceiling_prints_the_ceiling_and_its_variants(tmp_path: Path) -> None:
    path = tmp_path / "hand.json"
    conv = _conversation(FILLER[:6000], use_name=False)
    path.write_text(json.dumps(messages_to_openai(list(conv.messages))), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert main(["ceiling", str(path), "--pricing", "gpt-4o", "--quiet"], out=out, err=err) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("1 run at gpt-4o prices; no reduction: $")
    assert lines[1].startswith("ceiling: $") and lines[2].startswith("without a miss: $")
    assert sum(1 for line in lines if line.startswith("  ")) == len(VARIANTS)
    assert "ladder (outputs per step, without a miss): 100: 1," in out.getvalue()
    assert err.getvalue().startswith("worked out the ceiling of 1 runs in ")
    out = io.StringIO()
    assert main(["ceiling", str(path), "--quiet", "--json"], out=out, err=io.StringIO()) == 0
    assert json.loads(out.getvalue())["runs"] == 1
    err = io.StringIO()
    assert main(["ceiling", str(tmp_path / "missing.json")], out=io.StringIO(), err=err) == 2
    assert err.getvalue().startswith("error: ")
