"""The prefix a recording left out: inferred from the provider's counts, and counted in
costs and in the clear phase's thresholds."""

from __future__ import annotations

import dataclasses
import itertools
import json
from io import StringIO
from typing import Any

import pytest

from reduction_app.engine import AgenticMessage, Message, ReductionConfig, get_token_counter
from simulator.calibration import PREFIX_SHIPPED, calibrate_prefix
from simulator.cli import main
from simulator.importers import load_conversations, load_conversations_bytes, load_files
from simulator.metering import Meter
from simulator.prefix import (
    FIT_CALLS,
    PrefixedCounter,
    fit_calls,
    inferred_prefix,
    omitted_tokens,
    with_prefix,
)
from simulator.prepared import Prepared
from simulator.pricing import engine_measure, pricing_for
from simulator.recording import RecordedConversation
from simulator.replay import replay, replay_many
from simulator.transcript import model_calls
from tests.conftest import CONVERSATIONS, needs_recordings

SONNET = pricing_for("claude-sonnet-4")
PREFIX = 20_000
"""The prefix the synthetic logs below leave out, in tokens."""
GROWTH = (0, 300, 700, 1_200, 1_800, 2_500, 3_300)
"""What the provider counts beyond replayed context and prefix, call by call (a
tokenizer that counts more than the preset's): the gap grows as the session goes on."""


RESULTS = [
    "".join(f"line {i} of file {n}: value_{n}_{i} = compute_{i}()\n" for i in range(60))
    for n in range(6)
]
"""Six results of a few thousand characters each."""


def _lines(usage: list[int] | None = None) -> list[dict[str, Any]]:
    """A Claude Code session log: a prompt, one ``Read`` call per result of
    :data:`RESULTS`, then an answer; ``usage``: the provider's prompt tokens of each call."""
    session = {"sessionId": "s1"}
    lines: list[dict[str, Any]] = [
        {**session, "type": "user", "message": {"role": "user", "content": "read the files"}}
    ]
    for n, text in enumerate([*RESULTS, None]):
        content: list[dict[str, Any]] = [{"type": "text", "text": "Done."}]
        if text is not None:
            content = [{"type": "tool_use", "id": f"toolu_{n}", "name": "Read",
                        "input": {"file_path": f"/src/f{n}.py"}}]  # fmt: skip
        message = {"id": f"msg_{n}", "role": "assistant", "model": "claude-sonnet-4-20250514",
                   "content": content}  # fmt: skip
        if usage is not None:
            message["usage"] = {"input_tokens": 3, "cache_read_input_tokens": usage[n] - 3}
        lines.append({**session, "type": "assistant", "message": message})
        if text is not None:
            result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": text}
            lines.append(
                {**session, "type": "user", "message": {"role": "user", "content": [result]}}
            )
    return lines


def _text(usage: list[int] | None = None) -> str:
    return "\n".join(json.dumps(line) for line in _lines(usage)) + "\n"


def _log(usage: list[int] | None = None) -> RecordedConversation:
    [conv] = load_conversations_bytes(_text(usage).encode(), name="s1.jsonl")
    return conv


@pytest.fixture(scope="module")
def bare() -> RecordedConversation:
    """The log without provider figures: what it replays to, no prefix."""
    return _log()


def _contexts(conv: RecordedConversation, pricing: Any = SONNET) -> list[int]:
    return [c.context_tokens for c in replay(conv, None, pricing=pricing).calls]


@pytest.fixture(scope="module")
def logged(bare: RecordedConversation) -> RecordedConversation:
    """The log with the provider's counts: replayed context + :data:`PREFIX` + growth."""
    contexts = _contexts(bare)
    return _log([c + PREFIX + g for c, g in zip(contexts, GROWTH, strict=True)])


def test_infer_prefix_is_the_smallest_gap_of_the_first_calls(logged: RecordedConversation) -> None:
    assert logged.source == "claude_code"
    assert fit_calls(logged) == [1, 3, 5][:FIT_CALLS]
    assert inferred_prefix(logged, SONNET) == PREFIX
    result = replay(logged, None, pricing=SONNET)
    assert result.inferred_prefix_tokens == PREFIX


def test_infer_prefix_reads_only_the_first_calls(bare: RecordedConversation) -> None:
    """A later call whose gap is smaller (a provider count cut short) changes nothing; a
    smaller gap among the first calls is the prefix."""
    contexts = _contexts(bare)
    later = [c + PREFIX for c in contexts]
    later[4] -= 5_000
    assert inferred_prefix(_log(later), SONNET) == PREFIX
    first = [c + PREFIX for c in contexts]
    first[2] -= 400
    assert inferred_prefix(_log(first), SONNET) == PREFIX - 400


def test_no_prefix_where_the_recording_keeps_it(bare: RecordedConversation) -> None:
    """Without provider figures, or for a recording of another kind: none. A provider
    count below the replay's: 0."""
    assert inferred_prefix(bare, SONNET) is None
    assert replay(bare, None, pricing=SONNET).inferred_prefix_tokens is None
    below = _log([c - 10 for c in _contexts(bare)])
    assert inferred_prefix(below, SONNET) == 0
    other = dataclasses.replace(below, source="anthropic")
    assert inferred_prefix(other, SONNET) is None


def test_omitted_tokens_of_a_log_are_its_inferred_prefix(logged: RecordedConversation) -> None:
    assert omitted_tokens(logged, SONNET) == inferred_prefix(logged, SONNET) == PREFIX


def test_omitted_tokens_of_any_format_with_per_call_counts(logged: RecordedConversation) -> None:
    """A format whose replays add nothing still has its gap reckoned, to read; without
    per-call counts there is none."""
    other = dataclasses.replace(logged, source="tau2")
    assert inferred_prefix(other, SONNET) is None
    assert omitted_tokens(other, SONNET) == PREFIX
    assert omitted_tokens(dataclasses.replace(other, usage=None), SONNET) is None


@needs_recordings
def test_omitted_tokens_of_a_real_tau2_run_is_the_first_calls_gap() -> None:
    """τ²-bench keeps each call's prompt tokens but neither the agent's instructions nor
    its tool schemas: the least gap of the first three calls."""
    [run] = load_conversations(CONVERSATIONS / "tau2" / "retail-gpt-4.1-mini.json")
    meter = Meter(SONNET, get_token_counter("approx"))
    assert run.usage is not None
    calls = [i for i in model_calls(run.messages) if i in run.usage.prompt_tokens][:FIT_CALLS]
    gaps = [run.usage.prompt_tokens[i] - meter.request(run.messages[:i], run.tools) for i in calls]
    assert omitted_tokens(run, SONNET) == max(0, min(gaps)) > 1_000


def test_prefix_counts_in_every_call_and_is_cached_after_the_first(
    bare: RecordedConversation, logged: RecordedConversation
) -> None:
    without = replay(logged, None, pricing=SONNET, inferred_prefix=False)
    assert without.inferred_prefix_tokens is None
    assert [c.context_tokens for c in without.calls] == _contexts(bare)
    with_ = replay(logged, None, pricing=SONNET)
    calls = with_.calls
    assert [
        c.context_tokens - w.context_tokens for c, w in zip(calls, without.calls, strict=True)
    ] == [PREFIX] * len(calls)
    # The first call writes all of it to the cache; each later one reads the previous
    # request (all but its reply primer) from the cache and writes the rest.
    reply = SONNET.framing.per_reply
    assert (calls[0].cached_tokens, calls[0].cache_write_tokens) == (0, calls[0].context_tokens)
    for previous, call in itertools.pairwise(calls):
        assert call.cached_tokens == previous.context_tokens - reply
        assert call.cache_write_tokens == call.context_tokens - call.cached_tokens
    totals = with_.totals
    assert totals.input_tokens_billed == without.totals.input_tokens_billed + PREFIX * len(calls)
    expected = (
        (totals.uncached_tokens - totals.cache_write_tokens) * SONNET.input_per_mtok
        + totals.cache_write_tokens * (SONNET.cache_write_per_mtok or 0)
        + totals.cached_tokens * SONNET.cached_input_per_mtok
    ) / 1e6
    assert totals.cost_usd == round(expected, 6)
    assert totals.cost_usd > without.totals.cost_usd


def test_prefix_is_no_message(logged: RecordedConversation) -> None:
    """The prefix is a count: what the context shows, misses and offloads are the same."""
    config = {"max_length_for_trunc": 800, "skip_clear": True}
    with_ = replay(logged, config, pricing=SONNET, contexts=range(7))
    without = replay(logged, config, pricing=SONNET, contexts=range(7), inferred_prefix=False)
    assert with_.contexts == without.contexts
    assert with_.totals.truncations == without.totals.truncations > 0
    assert with_.totals.misses == without.totals.misses
    assert with_.totals.chars_offloaded == without.totals.chars_offloaded
    assert with_.miss_examples == without.miss_examples
    assert with_.totals.peak_context_tokens == without.totals.peak_context_tokens + PREFIX


def test_clear_threshold_sees_the_prefix(logged: RecordedConversation) -> None:
    """The clear phase counts the prefix with the context: the same threshold fires at an
    earlier call, and every count before it is the prefix more."""
    config = {"max_tokens_for_clear": PREFIX + 2_000, "clear_retention_suffix_limit": 1}
    with_ = replay(logged, config, pricing=SONNET)
    without = replay(logged, config, pricing=SONNET, inferred_prefix=False)
    assert not any(c.clear.cleared for c in without.calls)
    fired = [c.index for c in with_.calls if c.clear.cleared]
    over = [c.index for c in without.calls if c.clear.tokens_before + PREFIX > PREFIX + 2_000]
    assert fired and fired[0] == over[0] < len(with_.calls) - 1
    for call, alone in zip(with_.calls[: fired[0] + 1], without.calls, strict=False):
        assert call.clear.tokens_before == alone.clear.tokens_before + PREFIX
        assert call.clear.threshold == PREFIX + 2_000
    # The events of single results stay in the config's own counter: no prefix in them.
    cleared = [e for c in with_.calls for e in c.events if e.phase == "clear" and e.kind == "tool"]
    assert cleared and all(e.tokens_before < 2_000 for e in cleared)
    # at_least and cache-aware checks compare differences: the prefix cancels out.
    careful = {**config, "clear_at_least_tokens": 500}
    assert replay(logged, careful, pricing=SONNET).totals.clears == with_.totals.clears


def test_clear_threshold_under_the_engine_measure_and_a_callable_counter(
    logged: RecordedConversation,
) -> None:
    """A config's own callable counter gets the prefix too; a bare text it counts alone."""
    approx = get_token_counter("approx")
    counted: list[int] = []

    def counter(messages: Any, tools: Any) -> int:
        counted.append(len(messages))
        return int(approx(messages, tools))

    config = ReductionConfig(
        token_counter=counter, max_tokens_for_clear=PREFIX + 2_000, clear_retention_suffix_limit=1
    )
    measure = engine_measure(SONNET)
    result = replay(logged, config, pricing=measure)
    plain = replay(logged, {"max_tokens_for_clear": PREFIX + 2_000,
                            "clear_retention_suffix_limit": 1}, pricing=measure)  # fmt: skip
    assert result.inferred_prefix_tokens == plain.inferred_prefix_tokens
    assert [c.clear for c in result.calls] == [c.clear for c in plain.calls]
    assert result.totals.clears == plain.totals.clears > 0


def test_prefixed_counter_adds_the_prefix_to_requests_only() -> None:
    inner = get_token_counter("approx")
    counter: Any = with_prefix(inner, 1_000)
    assert isinstance(counter, PrefixedCounter) and counter.name == "approx"
    messages = [Message.user("x" * 40), Message.assistant("y" * 80)]
    assert counter(messages, []) == inner(messages, []) + 1_000
    assert counter.count_message(messages[0]) == inner.count_message(messages[0])
    assert counter.count_text("z" * 400) == 100
    assert with_prefix(inner, 0) is inner

    def plain(messages: Any, tools: Any) -> int:
        return 7 * len(messages)

    offset: Any = with_prefix(plain, 1_000)
    assert offset(messages, []) == 1_014
    assert offset.count_text("anything") == 7
    agentic: Any = with_prefix(lambda m, t: 5 if isinstance(m[0], AgenticMessage) else 0, 10)
    assert agentic.count_text("x") == 0
    agentic = with_prefix(lambda m, t: 5 if isinstance(m[0], AgenticMessage) else 0, 10,
                          agentic=True)  # fmt: skip
    assert agentic.count_text("x") == 5


def test_replay_many_equals_each_replay_with_a_prefix(logged: RecordedConversation) -> None:
    named: list[tuple[str, Any]] = [
        ("none", None),
        ("low", {"max_tokens_for_clear": PREFIX + 1_000, "clear_retention_suffix_limit": 1}),
        ("high", {"max_tokens_for_clear": PREFIX + 4_000}),
        ("trunc", {"max_length_for_trunc": 1_000, "max_tokens_for_clear": PREFIX + 3_000}),
        ("aware", {"max_tokens_for_clear": PREFIX + 1_000, "clear_cache_aware": True}),
    ]
    for flag in (True, False):
        together = replay_many(logged, named, pricing=SONNET, inferred_prefix=flag)
        alone = [replay(logged, c, name=n, pricing=SONNET, inferred_prefix=flag) for n, c in named]
        assert together == alone
    assert {r.inferred_prefix_tokens for r in together} == {None}


def test_replay_many_refuses_a_prepared_conversation_of_the_other_switch(
    logged: RecordedConversation,
) -> None:
    prepared = Prepared(logged, SONNET, inferred_prefix=False)
    with pytest.raises(ValueError, match="inferred prefix switched the other way"):
        replay_many(logged, [("a", None)], pricing=SONNET, prepared=prepared)


def test_cli_says_what_it_counted(tmp_path: Any, bare: RecordedConversation) -> None:
    usage = [c + PREFIX + g for c, g in zip(_contexts(bare), GROWTH, strict=True)]
    path = tmp_path / "s1.jsonl"
    path.write_text(_text(usage), encoding="utf-8")
    on = _run("replay", str(path), "--pricing", "claude-sonnet-4", "--baseline", "none")
    assert on.splitlines()[-1] == (
        f"inferred prefix: {PREFIX:,} tokens in every call of the run: the system prompt and "
        "tool schemas the recording left out, inferred from the provider's counts of the "
        "first calls (--no-inferred-prefix leaves it out)"
    )
    off = _run("replay", str(path), "--pricing", "claude-sonnet-4", "--no-inferred-prefix")
    assert off.splitlines()[-1] == (
        "inferred prefix: left out (--no-inferred-prefix): the run left out the system "
        "prompt and tool schemas, and the counts miss them"
    )
    data = json.loads(_run("replay", str(path), "--pricing", "claude-sonnet-4", "--json"))
    assert {r["inferred_prefix_tokens"] for r in data["results"]} == {PREFIX}
    data = json.loads(
        _run("replay", str(path), "--pricing", "claude-sonnet-4", "--json", "--no-inferred-prefix")
    )
    assert {r["inferred_prefix_tokens"] for r in data["results"]} == {None}
    for command in ("sweep", "recommend"):
        grid = tmp_path / "grid.json"
        grid.write_text(json.dumps({"max_tokens_for_clear": [PREFIX + 2_000]}), encoding="utf-8")
        args = [command, str(path), "--pricing", "claude-sonnet-4", "--grid", str(grid)]
        args += ["--quiet", "--workers", "1"]
        with_ = _run(*args, code=None)
        without = _run(*args, "--no-inferred-prefix", code=None)
        assert f"inferred prefix: {PREFIX:,} tokens in every call of the run" in with_
        assert "inferred prefix: left out (--no-inferred-prefix)" in without


def _run(*args: str, code: int | None = 0) -> str:
    out, err = StringIO(), StringIO()
    returned = main(list(args), out=out, err=err)
    if code is not None:
        assert returned == code, err.getvalue()
    return out.getvalue()


# The shipped Claude Code logs ---------------------------------------------------------


@needs_recordings
def test_shipped_claude_code_logs_prefix_and_calibration() -> None:
    """Every long session gets a prefix of 25,000 to 55,000 tokens; with it the replay
    comes to 80–90% of the provider's count on the calls it was not inferred from (the
    rest grows with the context: the Claude tokenizer counts more than cl100k_base), where
    without it the replay is half the bill."""
    pricing = pricing_for("claude-opus-4.5")
    conversations = load_files([CONVERSATIONS / "claude-code-long"])
    prefixes = [inferred_prefix(c, pricing) for c in conversations]
    assert len(prefixes) == 26
    assert all(p is not None and 25_000 < p < 55_000 for p in prefixes), prefixes
    [long, short] = [calibrate_prefix(CONVERSATIONS, item) for item in PREFIX_SHIPPED]
    assert long.prefixes == tuple(prefixes)
    assert long.fit_calls == FIT_CALLS * 26
    assert 0.80 < long.ratio < 0.90 and long.ratio_without < 0.55
    assert long.worst_call is not None and long.worst_call < 0.35
    assert all(15_000 < p < 18_000 for p in short.prefixes)
    assert 0.90 < short.ratio < 1.0


@needs_recordings
def test_no_prefix_for_recordings_whose_replay_matches_the_bill() -> None:
    """τ²-bench and SWE-agent runs are calibrated within 2% as they are: no prefix."""
    for path, preset in [
        ("tau2/retail-gpt-4.1-mini.json", "gpt-4.1-mini"),
        ("swe-agent/gpt4-test-repo-i1.traj", "gpt-4-turbo"),
    ]:
        [conv] = load_conversations(CONVERSATIONS / path)
        result = replay(conv, None, pricing=pricing_for(preset))
        assert result.inferred_prefix_tokens is None
