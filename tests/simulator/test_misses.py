"""Misses: hidden tool output the agent used later, and the cost of reading it back."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from reduction_app.engine import Message
from reduction_app.engine.formats import messages_to_openai
from simulator.compare import sweep
from simulator.importers import RecordedConversation, load_conversations
from simulator.misses import RECOVERY, is_name, strings_in
from simulator.pricing import LongContext, Pricing
from simulator.replay import no_reduction, replay, replay_many
from simulator.results import MissExample
from tests.conftest import CONVERSATIONS, needs_recordings
from tests.simulator.cases import ENGINE, TOOLS, call, result

# A 72-character output: 20 "=", " alpha_beta_gamma delta_epsilon ", 20 "=" ("=" is no
# string character, so the fillers hold no string). Truncated at 40 characters, its
# notice previews its first and last 20 characters: the fillers; both names are cut.
CUT = "=" * 20 + " alpha_beta_gamma delta_epsilon " + "=" * 20
TRUNCATE_40 = {"max_length_for_trunc": 40, "skip_clear": True}


def cut_conversation(*later: str, user: str = "Find the answer.") -> RecordedConversation:
    """read_file returns :data:`CUT`; the agent then reads ``later[0]`` (a path) and
    ends with the text ``later[1]``."""
    return RecordedConversation(
        "cut",
        [
            Message.system("You are a test agent."),
            Message.user(user),
            call("call_1", '{"path": "a"}'),
            result("call_1", CUT),
            call("call_2", json.dumps({"path": later[0]})),
            result("call_2", "fine"),
            Message.assistant(later[1]),
        ],
        TOOLS,
    )


def test_strings_in_keeps_identifiers_and_paths_of_8_characters() -> None:
    """A string runs on through dots and colons, a sentence's last period included."""
    text = "see src/app/main.py:12 and get_user, not short or 9lives_abc; ends.with."
    assert strings_in([text]) == ("src/app/main.py:12", "get_user", "lives_abc", "ends.with.")


def test_strings_in_leaves_plain_words_out() -> None:
    """Words of 8 letters or more are no names, capitalised, hyphenated or ending a
    sentence or a label; an inner capital, digit, underscore, slash, dot or colon makes
    one."""
    text = (
        "Actually the standard definition: Makefile well-known expression. Summary: "
        "getValue LLVM_DIR version2x _private http://host ends.with."
    )
    assert strings_in([text]) == (
        "getValue", "LLVM_DIR", "version2x", "_private", "http://host", "ends.with."
    )  # fmt: skip


@pytest.mark.parametrize(
    ("string", "name"),
    [
        ("expression.", False),
        ("expression...", False),
        ("Summary:", False),
        ("Summary:.", False),
        ("Makefile", False),
        ("well-known", False),
        ("getValue", True),
        ("config.py", True),
        ("Summary:x", True),
        ("abcdefgH", True),
        ("abcdefg1", True),
        ("abc/defg", True),
    ],
)
def test_is_name_by_its_marks(string: str, name: bool) -> None:
    """A trailing dot or colon makes no name; one with more of the string after it does."""
    assert is_name(string) is name


def test_misses_nothing_for_a_plain_word_only_in_the_cut_middle() -> None:
    """The cut middle's plain words are no names: the agent typing one is no miss."""
    cut = "=" * 20 + " particularly alpha_beta_gamma " + "=" * 20
    conversation = RecordedConversation(
        "word",
        [
            Message.system("You are a test agent."),
            Message.user("Find the answer."),
            call("call_1", '{"path": "a"}'),
            result("call_1", cut),
            Message.assistant("Done, particularly so."),
        ],
        TOOLS,
    )
    assert replay(conversation, TRUNCATE_40, pricing=ENGINE).totals.misses == 0


def test_misses_none_when_nothing_is_hidden() -> None:
    conversation = cut_conversation("alpha_beta_gamma", "Done: delta_epsilon here")
    for config in (None, {"max_length_for_trunc": 72, "skip_clear": True}):
        totals = replay(conversation, config, pricing=ENGINE).totals
        assert (totals.misses, totals.cost_with_recovery_usd) == (0, totals.cost_usd)


def test_misses_a_string_only_in_the_cut_middle() -> None:
    """The agent reads the path it could only have seen in the cut middle: a miss at
    call 1, the call that sent that read."""
    result_ = replay(cut_conversation("alpha_beta_gamma", "Done."), TRUNCATE_40, pricing=ENGINE)
    assert result_.totals.misses == 1
    assert result_.miss_examples == (
        MissExample(call=1, tool="read_file", string="alpha_beta_gamma"),
    )


def test_misses_none_when_the_string_is_visible_elsewhere() -> None:
    conversation = cut_conversation(
        "alpha_beta_gamma", "Done.", user="Look for alpha_beta_gamma here."
    )
    assert replay(conversation, TRUNCATE_40, pricing=ENGINE).totals.misses == 0


def test_misses_two_strings_of_one_part_are_one_miss() -> None:
    """Both names come from the one cut output, used at calls 1 and 2: one miss, at the
    first use."""
    conversation = cut_conversation("alpha_beta_gamma", "Done: delta_epsilon here")
    result_ = replay(conversation, TRUNCATE_40, pricing=ENGINE)
    assert result_.totals.misses == 1
    assert [m.call for m in result_.miss_examples] == [1]


def test_misses_counted_at_the_first_use_only() -> None:
    conversation = cut_conversation("delta_epsilon", "Done: delta_epsilon again")
    result_ = replay(conversation, TRUNCATE_40, pricing=ENGINE)
    assert result_.miss_examples == (MissExample(call=1, tool="read_file", string="delta_epsilon"),)


def cleared_conversation() -> RecordedConversation:
    """Three reads of 400, 800 and 4,000 characters, the first naming needle_identifier
    in its middle; the final answer names it."""
    first = "=" * 190 + " needle_identifier " + "=" * 191
    return RecordedConversation(
        "cleared",
        [
            Message.system("You are a test agent."),
            Message.user("Find the answer."),
            call("call_1", '{"path": "a"}'),
            result("call_1", first),
            call("call_2", '{"path": "b"}'),
            result("call_2", "y " * 400),
            call("call_3", '{"path": "c"}'),
            result("call_3", "z " * 2000),
            Message.assistant("The answer is in needle_identifier here"),
        ],
        TOOLS,
    )


def test_misses_a_cleared_result_used_later() -> None:
    """The clear phase (no truncation, a 300-token threshold) has replaced result 1 with
    its placeholder by the last call, whose answer names what it held."""
    config = {"skip_truncation": True, "max_tokens_for_clear": 300}
    result_ = replay(cleared_conversation(), config, pricing=ENGINE)
    assert result_.calls[3].clear.cleared
    assert result_.miss_examples == (
        MissExample(call=3, tool="read_file", string="needle_identifier"),
    )
    assert replay(cleared_conversation(), no_reduction(), pricing=ENGINE).totals.misses == 0


def test_cost_with_recovery_by_hand() -> None:
    """$1 an uncached token, $0.10 a cached one, every prefix cacheable; tokens by the
    approximate counter (characters // 4 of each rendered message, see cases.py):

    tools 18, system 7, user 5, call_1 8; the cut output's notice (206 characters: the
    hand case's 970 with "72" for "4000", "20" for "400" and 20-character previews) as
    a message 213 characters -> 53; the original output 79 characters -> 19; call_2
    (arguments '{"path": "alpha_beta_gamma"}') 50 characters -> 12; "fine" -> 2.
    Calls: 30 (nothing cached), 30 + 8 + 53 = 91 (30 cached), 91 + 12 + 2 = 105 (91
    cached): 105 uncached, 121 cached, $105 + $12.10 = $117.10.
    The miss at call 1 is recovered at RECOVERY's price (1.7 calls, 21% of the output):
    a call on call 1's context, 91 tokens cached, with round(19 * 0.21) = 4 new tokens,
    $4 + $9.10 = $13.10, and 0.7 of a call sending that context alone, 0.7 * $9.10 =
    $6.37: $19.47."""
    pricing = Pricing(input_per_mtok=1_000_000.0, cached_input_per_mtok=100_000.0)
    conversation = cut_conversation("alpha_beta_gamma", "Done.")
    result_ = replay(conversation, TRUNCATE_40, pricing=pricing, min_cacheable_prefix=0)
    assert [c.context_tokens for c in result_.calls] == [30, 91, 105]
    assert result_.totals.cost_usd == 117.1
    assert (RECOVERY.calls, RECOVERY.output_share) == (1.7, 0.21)
    assert result_.totals.cost_with_recovery_usd == 136.57


def test_cost_with_recovery_bills_cache_writes_as_the_preset_does() -> None:
    """With cache writes at $1.25 and a 95-token minimum prefix: call 1's 91-token
    context is too short to be served, so the first call sends 91 + 4 = 95 tokens
    uncached, all written to the cache (95 reaches the minimum): $118.75; the further
    0.7 of a call sends the 91 alone, uncached and too short to be written: $63.70."""
    pricing = Pricing(
        input_per_mtok=1_000_000.0,
        cached_input_per_mtok=100_000.0,
        cache_write_per_mtok=1_250_000.0,
    )
    conversation = cut_conversation("alpha_beta_gamma", "Done.")
    totals = replay(conversation, TRUNCATE_40, pricing=pricing, min_cacheable_prefix=95).totals
    assert round(totals.cost_with_recovery_usd - totals.cost_usd, 6) == 182.45


CONFIGS: list[tuple[str, Any]] = [
    ("none", None),
    ("trunc 40", TRUNCATE_40),
    ("trunc 100", {"max_length_for_trunc": 100, "skip_clear": True}),
    ("clear 300", {"skip_truncation": True, "max_tokens_for_clear": 300}),
    ("clear 600", {"skip_truncation": True, "max_tokens_for_clear": 600}),
    ("both", {"max_length_for_trunc": 40, "max_tokens_for_clear": 300}),
]


@pytest.mark.parametrize(
    "conversation", [cut_conversation("delta_epsilon", "x"), cleared_conversation()]
)
def test_misses_the_same_when_replays_share(conversation: RecordedConversation) -> None:
    """Configs replayed together (sharing and forking) miss what each misses alone."""
    together = replay_many(conversation, CONFIGS, pricing=ENGINE)
    alone = [replay(conversation, c, name=n, pricing=ENGINE) for n, c in CONFIGS]
    assert [(r.totals, r.miss_examples) for r in together] == [
        (r.totals, r.miss_examples) for r in alone
    ]
    assert sum(r.totals.misses for r in together) > 0


def test_misses_the_same_in_a_shared_sweep() -> None:
    grid = {"max_tokens_for_clear": [200, 300, 600], "max_length_for_trunc": [40, 100, 5000]}
    shared = sweep(cleared_conversation(), grid, pricing=ENGINE, workers=1)
    alone = sweep(cleared_conversation(), grid, pricing=ENGINE, workers=1, share=False)
    assert [r.totals for r in shared.results] == [r.totals for r in alone.results]
    assert any(r.totals.misses for r in shared.results)


# --- agreement with an independent count, on the mini-swe-agent runs ---------------------

_STRING = re.compile(r"[A-Za-z_][A-Za-z0-9_./:-]{7,}")


def _names(text: str) -> set[str]:
    """The strings of ``text`` that are names, by the rule written out again: one of
    ``_ / :`` or ``.`` or a digit, a trailing run of dots and colons left out, or a capital
    after the first character."""
    found = set()
    for s in _STRING.findall(text):
        body = s.rstrip(".:")
        if any(c in "_/.:0123456789" for c in body) or any(c.isupper() for c in body[1:]):
            found.add(s)
    return found


def cut_outputs_used(runs: list[list[dict[str, Any]]], limit: int) -> int:
    """Tool outputs longer than ``limit`` characters that, cut to their first and last
    ``limit // 2``, hid a string an assistant message typed later while it was visible
    nowhere before: counted on the chat JSON alone, one walk, no simulator code."""
    used_outputs = 0
    for messages in runs:
        visible: set[str] = set()
        hidden: dict[str, int] = {}
        missed: set[int] = set()
        for i, m in enumerate(messages):
            text = m.get("content") or ""
            if not isinstance(text, str):
                text = json.dumps(text)
            for tool_call in m.get("tool_calls") or []:
                text += " " + tool_call["function"]["arguments"]
            found = _names(text)
            if m["role"] == "assistant":
                missed.update(hidden[s] for s in found - visible if s in hidden)
                visible |= found
            elif m["role"] == "tool" and len(text) > limit:
                half = limit // 2
                shown = _names(text[:half] + text[-half:])
                visible |= shown
                for s in _names(text[half:-half]) - shown - visible:
                    hidden.setdefault(s, i)
            else:
                visible |= found
                for s in found:
                    hidden.pop(s, None)
        used_outputs += len(missed)
    return used_outputs


@needs_recordings
def test_misses_agree_with_an_independent_count_on_mini_swe_agent_runs() -> None:
    """Truncation alone at 1,000, 2,000 and 8,000 characters over the 43 mini-swe-agent
    runs: the replays' misses are within 15% of the independent count. (They differ
    only at the cut's edges, where a string straddling a preview is hidden whole for the
    replay and half for the count, and where the notice's own text shows a string.)"""
    files = sorted((CONVERSATIONS / "mini-swe-agent").glob("*.traj.json"))
    conversations = [c for f in files for c in load_conversations(f)]
    assert len(conversations) == 43
    runs = [messages_to_openai(list(c.messages)) for c in conversations]
    limits = (1000, 2000, 8000)
    configs = [(str(n), {"max_length_for_trunc": n, "skip_clear": True}) for n in limits]
    ours = dict.fromkeys(limits, 0)
    for conversation in conversations:
        for limit, r in zip(
            limits, replay_many(conversation, configs, pricing=ENGINE), strict=True
        ):
            ours[limit] += r.totals.misses
    theirs = {limit: cut_outputs_used(runs, limit) for limit in limits}
    for limit in limits:
        assert theirs[limit] > 0
        assert abs(ours[limit] - theirs[limit]) <= 0.15 * theirs[limit], (limit, ours, theirs)


def test_cost_and_recovery_take_the_long_context_rates() -> None:
    """The hand case of :func:`test_cost_with_recovery_counts_one_read_back_per_miss`
    with a tier past 94 tokens at twice the prices ($2 and $0.20 a token).
    Calls 30 and 91 stay at the base rates: 30 + 61 uncached, 30 cached: $94. Call 2's
    105 tokens pass 94: 14 uncached and 91 cached at the tier's: $28 + $18.20. The
    recovery's first call sends 91 + 4 (the output's share) = 95 tokens, past 94: 4 at $2
    and 91 cached at $0.20, $26.20; its further 0.7 of a call sends the 91 alone, below
    the tier: 0.7 × $9.10 = $6.37."""
    pricing = Pricing(
        input_per_mtok=1_000_000.0,
        cached_input_per_mtok=100_000.0,
        long_context=LongContext(
            above=94, input_per_mtok=2_000_000.0, cached_input_per_mtok=200_000.0
        ),
    )
    conversation = cut_conversation("alpha_beta_gamma", "Done.")
    totals = replay(conversation, TRUNCATE_40, pricing=pricing, min_cacheable_prefix=0).totals
    assert (totals.cost_usd, totals.long_context_tokens) == (140.2, 105)
    assert totals.cost_with_recovery_usd == round(140.2 + 26.2 + 6.37, 6)
