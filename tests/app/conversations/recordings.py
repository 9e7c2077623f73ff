"""One real recording of each format the simulator reads, for the import tests.

The recordings folder (``tests.conftest.CONVERSATIONS``) holds a folder per recording
format named after it (``swe_agent`` → ``swe-agent/``): a format's sample is the smallest
file there, so a format added to ``simulator.importers.FORMATS`` with its folder is
tested without a change here. tau-bench is one big file, so its sample is its first two
runs; the engine's wire formats (OpenAI chat, Anthropic, OpenAI Responses) have no
recordings of their own, so theirs are real recordings written out in that format by the
engine's dumpers; Inspect AI logs have no shipped recordings either, so theirs is a
``.eval`` log written at test time by a small real task (``tests.simulator.inspect_logs``).
OpenTelemetry traces have no folder there: theirs is a small hand-written file of the
simulator's tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reduction_app.engine import formats
from simulator.importers import FORMATS, load_conversations
from tests.conftest import CONVERSATIONS, skip_without_recordings
from tests.simulator.inspect_logs import write_log

SWE_AGENT = "swe-agent/gpt-4o-test-repo-1c2844.traj"
"""11 messages, openai_chat."""
CLAUDE_CODE = "claude-code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
"""14 messages, anthropic."""
TAU_BENCH = "tau-bench-airline-gpt-4o.json"
OTEL = Path(__file__).parents[2] / "simulator" / "data" / "otel" / "genai-current.jsonl"
"""5 messages, openai_chat: one conversation of two calls with a tool call."""

# The wire formats: which real recording is written out in each.
_WIRE = {"openai_chat": SWE_AGENT, "anthropic": CLAUDE_CODE, "openai_responses": CLAUDE_CODE}


def folder_of(fmt: str) -> Path:
    return CONVERSATIONS / fmt.replace("_", "-")


def sample(fmt: str, folder: Path) -> Path:
    """A small real file in format ``fmt``, written into ``folder`` when it is not a
    shipped file as it is."""
    if fmt == "inspect":
        return write_log(folder / "inspect", "eval")
    if fmt == "otel":
        return OTEL  # a file of the repository: no recordings needed
    skip_without_recordings()
    if fmt in _WIRE:
        [recorded] = load_conversations(CONVERSATIONS / _WIRE[fmt])
        system, messages = formats.dump(fmt, recorded.messages)
        wire = formats.get_format(fmt)
        body: dict[str, Any] = {
            wire.messages_key: messages,
            "tools": formats.dump_tools(fmt, recorded.tools),
        }
        if system is not None:
            body["system"] = system
        out = folder / f"{Path(_WIRE[fmt]).name.split('.')[0]}-{fmt}.json"
        out.write_text(json.dumps(body), encoding="utf-8")
        return out
    if fmt == "tau_bench":
        runs = json.loads((CONVERSATIONS / TAU_BENCH).read_text(encoding="utf-8"))[:2]
        out = folder / "tau-bench-airline-first-two.json"
        out.write_text(json.dumps(runs), encoding="utf-8")
        return out
    files = sorted(
        (p for p in folder_of(fmt).iterdir() if p.is_file() and p.suffix != ".md"),
        key=lambda p: (p.stat().st_size, p.name),
    )
    assert files, f"no recording of format {fmt!r} in {folder_of(fmt)}"
    return files[0]


ALL_FORMATS = list(FORMATS)
