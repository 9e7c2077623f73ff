"""Replaying many configs: batches, the process pool, progress, and results in order."""

from __future__ import annotations

from typing import Any

import pytest

from simulator import parallel
from simulator.importers import load_conversations
from simulator.parallel import batches, replay_configs, totals_only
from simulator.pricing import pricing_for
from simulator.replay import replay
from tests.conftest import CONVERSATIONS, needs_recordings
from tests.simulator.cases import ENGINE, hand_conversation

CONFIGS: list[tuple[str, dict[str, Any] | None]] = [
    (f"clear {t} trunc {n}", {"max_tokens_for_clear": t, "max_length_for_trunc": n})
    for n in (2_000, 50_000)
    for t in (4_000, 8_000, 16_000, 10_000_000)
] + [("no reduction", None)]


def test_batches_keep_configs_that_truncate_alike_together() -> None:
    assert batches(CONFIGS, workers=2) == [[0, 1], [2, 3], [4, 5], [6, 7], [8]]
    assert batches(CONFIGS, workers=1) == [[0, 1, 2], [4, 5, 6], [3], [7], [8]]
    assert batches(CONFIGS[:2], workers=8) == [[0], [1]]


@needs_recordings
@pytest.mark.parametrize("share", [True, False])
def test_replay_configs_pool_gives_the_loops_results_in_order(
    share: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "POOL_MIN_STEPS", 0)
    conversation = load_conversations(CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl")[0]
    pricing = pricing_for("gpt-4o")
    progress: list[tuple[int, int]] = []
    pooled = replay_configs(
        conversation,
        CONFIGS,
        pricing=pricing,
        workers=2,
        share=share,
        progress=lambda done, total: progress.append((done, total)),
        counted=len(CONFIGS) - 1,
    )
    alone = [totals_only(replay(conversation, c, name=n, pricing=pricing)) for n, c in CONFIGS]
    assert pooled == alone
    assert [r.name for r in pooled] == [n for n, _ in CONFIGS]
    assert pooled[0].calls == ()
    # The baseline (last) is not counted; every other config once, as it finished.
    assert progress == [(i, 8) for i in range(1, 9)]


def test_replay_configs_small_work_stays_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("no pool for a small sweep")

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", refuse)
    results = replay_configs(hand_conversation(), CONFIGS, pricing=ENGINE, workers=4)
    assert len(results) == len(CONFIGS)
