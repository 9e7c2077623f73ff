"""The benchmark corpus: a long, realistic agent conversation, made by running real tools.

The scripted agent and its tools live in :mod:`simulator.corpus`, shared with the app's
demo data; this module picks the benchmark's size and seed and dumps the result
(``python -m benchmarks.corpus --out corpus.json``). It does not time anything;
:mod:`benchmarks.replay` does.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from simulator.corpus import (
    DEFAULT_SEED,
    SourceTree,
    build_conversation,
    conversation_chars,
    django_root,
    dump_openai,
)

__all__ = [
    "DEFAULT_SEED",
    "SourceTree",
    "build_conversation",
    "conversation_chars",
    "django_root",
    "dump_openai",
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write OpenAI chat JSON here (else stdout)")
    parser.add_argument("--min-messages", type=int, default=1000)
    parser.add_argument("--min-chars", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    messages = build_conversation(args.min_messages, args.min_chars, seed=args.seed)
    text = json.dumps(dump_openai(messages), ensure_ascii=False, indent=1)
    if args.out is None:
        sys.stdout.write(text + "\n")
    else:
        args.out.write_text(text + "\n", encoding="utf-8")
        print(
            f"{len(messages)} messages, {conversation_chars(messages):,} characters -> {args.out}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
