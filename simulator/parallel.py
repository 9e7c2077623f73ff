"""Replaying many configs of one conversation: shared, and over a pool of processes.

:func:`replay_configs` is what a sweep runs: batches of configs that truncate alike,
replayed together (:func:`~simulator.replay.replay_many`) or one by one (``share=False``),
in a process pool forked after the conversation is prepared where the platform allows.
Results come back in the configs' order, equal to the per-config loop's.
"""

from __future__ import annotations

import dataclasses
import json
import math
import multiprocessing
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from simulator.members import CLEAR_ONLY
from simulator.prepared import Prepared
from simulator.pricing import Pricing
from simulator.recording import RecordedConversation
from simulator.replay import replay, replay_many
from simulator.results import ReplayResult

__all__ = ["POOL_MIN_STEPS", "default_workers", "replay_configs", "totals_only"]

POOL_MIN_STEPS = 20_000
"""Below this many message steps (messages × configs) a pool is not worth its start:
the configs are replayed in this process."""
BATCHES_PER_WORKER = 4

Named = tuple[str, Mapping[str, Any] | None]
Progress = Callable[[int, int], None]


def default_workers() -> int:
    """One worker per CPU."""
    return os.cpu_count() or 1


def totals_only(result: ReplayResult) -> ReplayResult:
    """``result`` without its per-call records and kept contexts."""
    return dataclasses.replace(result, calls=(), contexts={})


def replay_configs(
    conversation: RecordedConversation,
    configs: Sequence[Named],
    *,
    pricing: Pricing,
    min_cacheable_prefix: int | None = None,
    workers: int = 1,
    share: bool = True,
    progress: Progress | None = None,
    counted: int | None = None,
    inferred_prefix: bool = True,
) -> list[ReplayResult]:
    """Replay each ``(name, config)``; results without per-call records, in order.
    ``inferred_prefix``: as :func:`~simulator.replay.replay`.

    ``progress(done, total)`` is called as configs finish, ``total`` being ``counted``
    (default: all of them) and only the first ``counted`` configs counting (a sweep's
    baseline, last, does not).
    """
    total = len(configs) if counted is None else counted
    done = [0]

    def finished(positions: Sequence[int]) -> None:
        for position in positions:
            if position < total and progress is not None:
                done[0] += 1
                progress(done[0], total)

    steps = len(conversation.messages) * len(configs)
    if workers <= 1 or len(configs) < 2 or steps < POOL_MIN_STEPS:
        return _in_process(
            conversation, configs, pricing, min_cacheable_prefix, share, finished, inferred_prefix
        )
    return _pooled(
        conversation,
        configs,
        pricing,
        min_cacheable_prefix,
        workers,
        share,
        finished,
        inferred_prefix,
    )


def _in_process(
    conversation: RecordedConversation,
    configs: Sequence[Named],
    pricing: Pricing,
    min_prefix: int | None,
    share: bool,
    finished: Callable[[Sequence[int]], None],
    inferred_prefix: bool,
) -> list[ReplayResult]:
    if not share:
        out = []
        for position, (name, config) in enumerate(configs):
            result = replay(
                conversation,
                config,
                name=name,
                pricing=pricing,
                min_cacheable_prefix=min_prefix,
                inferred_prefix=inferred_prefix,
            )
            out.append(totals_only(result))
            finished([position])
        return out
    results = replay_many(
        conversation,
        configs,
        pricing=pricing,
        min_cacheable_prefix=min_prefix,
        done=finished,
        inferred_prefix=inferred_prefix,
    )
    return [totals_only(r) for r in results]


def batches(configs: Sequence[Named], workers: int) -> list[list[int]]:
    """Positions of ``configs`` in batches: configs that truncate alike together, at most
    ``len(configs) / (4 × workers)`` (rounded up) a batch, the biggest batches first."""
    size = max(1, math.ceil(len(configs) / (workers * BATCHES_PER_WORKER)))
    groups: dict[str, list[int]] = {}
    for position, (_, config) in enumerate(configs):
        key = "no reduction"
        if config is not None:
            fields = {k: v for k, v in config.items() if k not in CLEAR_ONLY}
            key = json.dumps(fields, sort_keys=True, default=str)
        groups.setdefault(key, []).append(position)
    out = [g[i : i + size] for g in groups.values() for i in range(0, len(g), size)]
    return sorted(out, key=len, reverse=True)


# The pool -----------------------------------------------------------------------------

_WORKER: dict[str, Any] = {}
"""In a worker process: the prepared conversation and the replay options."""


def _init_worker(
    source: Prepared | RecordedConversation, pricing: Pricing, min_prefix: Any, inferred: bool
) -> None:
    prepared = (
        source
        if isinstance(source, Prepared)
        else Prepared(source, pricing, inferred_prefix=inferred)
    )
    _WORKER.update(prepared=prepared, min_prefix=min_prefix)


def _run_batch(batch: list[tuple[int, str, Any]], share: bool) -> list[tuple[int, ReplayResult]]:
    prepared: Prepared = _WORKER["prepared"]
    conversation = prepared.conversation
    pricing = prepared.pricing
    min_prefix = _WORKER["min_prefix"]
    if not share:
        return [
            (
                p,
                totals_only(
                    replay(
                        conversation,
                        c,
                        name=n,
                        pricing=pricing,
                        min_cacheable_prefix=min_prefix,
                        inferred_prefix=prepared.inferred_prefix,
                    )
                ),
            )
            for p, n, c in batch
        ]
    results = replay_many(
        conversation,
        [(n, c) for _, n, c in batch],
        pricing=pricing,
        min_cacheable_prefix=min_prefix,
        prepared=prepared,
        inferred_prefix=prepared.inferred_prefix,
    )
    return [(p, totals_only(r)) for (p, _, _), r in zip(batch, results, strict=True)]


def _pooled(
    conversation: RecordedConversation,
    configs: Sequence[Named],
    pricing: Pricing,
    min_prefix: int | None,
    workers: int,
    share: bool,
    finished: Callable[[Sequence[int]], None],
    inferred_prefix: bool,
) -> list[ReplayResult]:
    out: list[ReplayResult | None] = [None] * len(configs)
    todo = batches(configs, workers)
    source: Prepared | RecordedConversation = conversation
    context = None
    if sys.platform.startswith("linux"):
        # Forked workers inherit what this process has loaded and counted: replaying the
        # last config here first (a sweep's baseline: no reduction, which counts every
        # recorded message and costs little else) warms the prepared conversation for all.
        context = multiprocessing.get_context("fork")
        prepared = Prepared(conversation, pricing, inferred_prefix=inferred_prefix)
        last = len(configs) - 1
        name, config = configs[last]
        if share:
            first = replay_many(
                conversation, [(name, config)], pricing=pricing,
                min_cacheable_prefix=min_prefix, prepared=prepared,
                inferred_prefix=inferred_prefix,
            )[0]  # fmt: skip
            out[last] = totals_only(first)
            finished([last])
            todo = [[p for p in batch if p != last] for batch in todo]
            todo = [batch for batch in todo if batch]
        source = prepared
    workers = min(workers, len(todo)) or 1
    with ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_init_worker,
        initargs=(source, pricing, min_prefix, inferred_prefix),
    ) as pool:
        running: set[Future[list[tuple[int, ReplayResult]]]] = {
            pool.submit(_run_batch, [(p, *configs[p]) for p in batch], share) for batch in todo
        }
        while running:
            ready, running = wait(running, return_when=FIRST_COMPLETED)
            for future in ready:
                pairs = future.result()
                for position, result in pairs:
                    out[position] = result
                finished([p for p, _ in pairs])
    assert all(r is not None for r in out)
    return [r for r in out if r is not None]
