"""The prefix a Claude Code log left out, in the app: kept at import as the provider's
counts, inferred by the simulator's own rule at replay, the same as the command line on
the same file; shown on the conversation, Compare, Tune and simulation pages, and
switched off on Compare and Tune."""

from __future__ import annotations

import io
import json
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from reduction_app.conversations.imports import recordings_import
from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.conversations.timeline import ENGINE_MEASURE
from reduction_app.engine import get_token_counter
from reduction_app.models import Conversation, Workspace
from reduction_app.simulations import services
from reduction_app.simulations.corpus import corpus_simulation_create
from simulator import cli
from simulator.importers import load_conversations
from simulator.metering import Meter
from simulator.pricing import PRESETS
from simulator.replay import no_reduction
from tests.app.conversations.recordings import CLAUDE_CODE
from tests.app.pages_support import elements, member_client, metric, parsed, row_of, text
from tests.conftest import CONVERSATIONS, needs_recordings

pytestmark = pytest.mark.django_db

PRICING = "claude-sonnet-4"
TIGHT = {"max_tokens_for_clear": 16000, "clear_retention_suffix_limit": 1}
LISTING = "\n".join(
    f"src/package/module_{n:03}.py: def handler_{n}(request): ..." for n in range(60)
)

# Three model calls. The provider counted each whole prompt as input_tokens +
# cache_creation_input_tokens + cache_read_input_tokens: 4 + 15,210 + 0 = 15,214, then
# 6 + 900 + 15,214 = 16,120, then 8 + 700 + 16,114 = 16,822. The logged messages are a
# few hundred to about 1,600 tokens: the rest is what Claude Code sent before them.
PROMPT_TOKENS = {1: 15_214, 3: 16_120, 5: 16_822}


def _line(n: int, kind: str, message: dict[str, Any]) -> str:
    event = {"type": kind, "sessionId": "prefix-session", "uuid": f"u{n}", "message": message}
    return json.dumps(event)


def _assistant(message_id: str, content: list[Any], usage: tuple[int, int, int]) -> dict[str, Any]:
    fresh, written, read = usage
    return {
        "id": message_id,
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": content,
        "usage": {
            "input_tokens": fresh,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "output_tokens": 40,
        },
    }


def _result(call_id: str, output: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": output}
    return {"role": "user", "content": [block]}


def write_log(folder: Path) -> Path:
    """A small Claude Code session log: a prompt, two tool calls with their results and
    an answer, each call with the provider's usage."""
    read = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "setup.py"}}
    grep = {"type": "tool_use", "id": "toolu_2", "name": "Grep", "input": {"pattern": "handler"}}
    lines = [
        _line(1, "user", {"role": "user", "content": "Which handlers does the package define?"}),
        _line(2, "assistant", _assistant("msg_1", [read], (4, 15_210, 0))),
        _line(3, "user", _result("toolu_1", "from setuptools import setup\nsetup(name='pkg')")),
        _line(4, "assistant", _assistant("msg_2", [grep], (6, 900, 15_214))),
        _line(5, "user", _result("toolu_2", LISTING)),
        _line(
            6,
            "assistant",
            _assistant("msg_3", [{"type": "text", "text": "Sixty."}], (8, 700, 16_114)),
        ),
    ]
    path = folder / "prefix-session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _import(workspace: Workspace, path: Path) -> Conversation:
    recordings_import(workspace=workspace, files=[(path.name, path.read_bytes())])
    return Conversation.objects.get(workspace=workspace, imported_from=path.name)


def _cli(path: Path, tmp_path: Path, *extra: str) -> list[dict[str, Any]]:
    """``python -m simulator replay FILE --json`` under no reduction and TIGHT."""
    configs = []
    for name, config in (("none", no_reduction()), ("tight", TIGHT)):
        configs += ["--config", str(tmp_path / f"{name}.json")]
        (tmp_path / f"{name}.json").write_text(json.dumps(config), encoding="utf-8")
    out = io.StringIO()
    assert (
        cli.main(["replay", str(path), "--pricing", PRICING, "--json", *configs, *extra], out=out)
        == 0
    )
    results: list[dict[str, Any]] = json.loads(out.getvalue())["results"]
    return results


def _app(workspace: Workspace, conversation: Conversation, *, prefix: bool) -> list[dict[str, Any]]:
    simulation = services.simulation_create(
        workspace=workspace,
        conversation=conversation,
        configs=[{"name": "none", "config": no_reduction()}, {"name": "tight", "config": TIGHT}],
        pricing=PRICING,
        min_cacheable_prefix=PRESETS[PRICING].min_cacheable_prefix,
        inferred_prefix=prefix,
    )
    done = services.simulation_run(simulation_id=simulation.pk)
    assert done.status == "done", done.error
    results: list[dict[str, Any]] = done.results["results"]
    return results


def _same_replays(app: list[dict[str, Any]], cli_results: list[dict[str, Any]]) -> None:
    # Everything but the conversation's name (the file's label, the app's id) and the
    # config's name (the command line names a config after its file).
    for ours, theirs in zip(app, cli_results, strict=True):
        for key in ("inferred_prefix_tokens", "totals", "calls", "strategies", "measure"):
            assert ours[key] == theirs[key], key


def _expected_prefix(path: Path, pricing: Any) -> int:
    """The smallest gap between the provider's prompt tokens and the logged context, over
    the three calls (all the calls this log has)."""
    [recorded] = load_conversations(path)
    meter = Meter(pricing, get_token_counter("approx"))
    messages = list(recorded.messages)
    return min(n - meter.request(messages[:i], []) for i, n in PROMPT_TOKENS.items())


@pytest.fixture
def member() -> tuple[Client, Workspace]:
    return member_client()


def test_import_keeps_the_provider_counts(workspace: Workspace, tmp_path: Path) -> None:
    conversation = _import(workspace, write_log(tmp_path))
    assert conversation.source == "claude_code"
    assert conversation.provider_usage == {
        "prompt_tokens": {str(i): n for i, n in PROMPT_TOKENS.items()},
        "total_prompt_tokens": None,
        "api_calls": None,
        "cached_prompt_tokens": {},
        "completion_tokens": {},
        "call_times": {},
        "cost": None,
    }
    recorded = recorded_conversation(conversation)
    assert recorded.source == "claude_code"
    assert recorded.usage is not None
    assert dict(recorded.usage.prompt_tokens) == PROMPT_TOKENS


def test_app_replay_counts_the_prefix_as_the_command_line_does(
    workspace: Workspace, tmp_path: Path
) -> None:
    path = write_log(tmp_path)
    conversation = _import(workspace, path)
    app = _app(workspace, conversation, prefix=True)
    _same_replays(app, _cli(path, tmp_path))
    prefix = _expected_prefix(path, PRESETS[PRICING])
    assert prefix > 14_000  # most of the 15,214 tokens of the first prompt
    assert [r["inferred_prefix_tokens"] for r in app] == [prefix, prefix]


def test_app_replay_without_the_prefix_matches_no_inferred_prefix(
    workspace: Workspace, tmp_path: Path
) -> None:
    path = write_log(tmp_path)
    conversation = _import(workspace, path)
    off = _app(workspace, conversation, prefix=False)
    _same_replays(off, _cli(path, tmp_path, "--no-inferred-prefix"))
    assert [r["inferred_prefix_tokens"] for r in off] == [None, None]
    on = _app(workspace, conversation, prefix=True)
    # Without reduction each of the three calls sends the same messages, plus the prefix.
    prefix = on[0]["inferred_prefix_tokens"]
    billed = [r[0]["totals"]["input_tokens_billed"] for r in (on, off)]
    assert billed[0] - billed[1] == 3 * prefix


@needs_recordings
def test_app_replay_of_a_shipped_log_matches_the_command_line(
    workspace: Workspace, tmp_path: Path
) -> None:
    path = CONVERSATIONS / CLAUDE_CODE
    conversation = _import(workspace, path)
    app = _app(workspace, conversation, prefix=True)
    _same_replays(app, _cli(path, tmp_path))
    assert app[0]["inferred_prefix_tokens"] is not None


def test_a_conversation_imported_without_the_counts_infers_no_prefix(
    workspace: Workspace, tmp_path: Path
) -> None:
    conversation = _import(workspace, write_log(tmp_path))
    Conversation.objects.filter(pk=conversation.pk).update(provider_usage=None)
    conversation.refresh_from_db()
    app = _app(workspace, conversation, prefix=True)
    _same_replays(app, _cli(write_log(tmp_path), tmp_path, "--no-inferred-prefix"))


# Pages ----------------------------------------------------------------------------------


def _compare(client: Client, conversation: Conversation, *extra: str) -> Any:
    query = "&".join(
        [f"conversation={conversation.pk}", "config=none", f"pricing={PRICING}", *extra]
    )
    response = client.get(f"/compare/?{query}")
    assert response.status_code == HTTPStatus.OK
    return parsed(response)


def _billed(page: Any) -> int:
    figure = metric(row_of(page, "totals", "no reduction"), "input_tokens_billed")
    return int(figure.split()[0].replace(",", ""))


def _attributes(node: Any) -> dict[str, Any]:
    return dict(node.attributes)


def _box(page: Any) -> Any:
    boxes = elements(page, "input", type="checkbox", name="prefix")
    return boxes[0] if boxes else None


def test_compare_counts_the_prefix_and_switches_it_off(
    member: tuple[Client, Workspace], tmp_path: Path
) -> None:
    client, ws = member
    path = write_log(tmp_path)
    conversation = _import(ws, path)
    prefix = _expected_prefix(path, PRESETS[PRICING])
    on = _compare(client, conversation)
    assert "checked" in _attributes(_box(on))
    [note] = elements(on, "p", id="prefix-note")
    assert text(note).startswith(f"Every request also counts {prefix:,} tok the log left out")
    off = _compare(client, conversation, "prefix=off")
    assert "checked" not in _attributes(_box(off))
    [note] = elements(off, "p", id="prefix-note")
    assert text(note).startswith(f"Not counted: the {prefix:,} tok the log left out")
    assert _billed(on) - _billed(off) == 3 * prefix
    # The form sends a hidden "off" and, ticked, "on": the last one wins.
    assert _billed(_compare(client, conversation, "prefix=off", "prefix=on")) == _billed(on)
    # Each call's link keeps the switch.
    hrefs = [_attributes(a).get("href") or "" for a in elements(off, "a")]
    links = [href for href in hrefs if "call=" in href]
    assert links and all("prefix=off" in href for href in links)


def test_tune_counts_the_prefix_and_switches_it_off(
    member: tuple[Client, Workspace], tmp_path: Path
) -> None:
    client, ws = member
    path = write_log(tmp_path)
    conversation = _import(ws, path)
    prefix = _expected_prefix(path, PRESETS[PRICING])
    base = f"/tune/?conversation={conversation.pk}&pricing={PRICING}"
    on = parsed(client.get(base))
    assert "checked" in _attributes(_box(on))
    [note] = elements(on, "p", id="prefix-note")
    assert text(note).startswith(f"Every request also counts {prefix:,} tok the log left out")
    off = parsed(client.get(base + "&prefix=off"))
    assert "checked" not in _attributes(_box(off))
    [note] = elements(off, "p", id="prefix-note")
    assert text(note).startswith("Not counted:")
    saved = elements(off, "input", type="hidden", name="prefix")
    assert [_attributes(i)["value"] for i in saved] == ["off", "off", "off"]  # pick, switch, save


def test_conversation_page_says_how_much_the_log_left_out(
    member: tuple[Client, Workspace], tmp_path: Path
) -> None:
    client, ws = member
    path = write_log(tmp_path)
    conversation = _import(ws, path)
    page = parsed(client.get(f"/conversations/{conversation.client_id}/"))
    [note] = elements(page, "p", id="prefix-note")
    prefix = _expected_prefix(path, ENGINE_MEASURE)
    assert text(note).startswith(
        f"This log leaves out {prefix:,} tok that every request sent before its messages"
    )
    assert "Replays count them" in text(note)


def test_pages_of_a_conversation_without_the_counts_offer_no_switch(
    member: tuple[Client, Workspace], tmp_path: Path
) -> None:
    client, ws = member
    conversation = _import(ws, write_log(tmp_path))
    Conversation.objects.filter(pk=conversation.pk).update(provider_usage=None)
    page = _compare(client, conversation)
    assert _box(page) is None
    assert elements(page, "p", id="prefix-note") == []
    assert _billed(page) > 0
    page = parsed(client.get(f"/conversations/{conversation.client_id}/"))
    assert elements(page, "p", id="prefix-note") == []


def test_simulation_page_says_its_replays_count_the_prefix(
    member: tuple[Client, Workspace], tmp_path: Path
) -> None:
    client, ws = member
    conversation = _import(ws, write_log(tmp_path))
    other = tmp_path / "plain.json"
    other.write_text(
        json.dumps(
            {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
        ),
        encoding="utf-8",
    )
    plain = _import(ws, other)
    sweep = corpus_simulation_create(
        workspace=ws,
        conversations=[conversation, plain],
        kind="sweep",
        grid={"max_tokens_for_clear": [16000, 32000]},
        pricing=PRICING,
    )
    page = parsed(client.get(f"/simulations/{sweep.pk}/"))
    [note] = elements(page, "p", id="prefix-note")
    assert text(note).startswith("These replays count what 1 of the logs (")
    assert "left out before the messages of every request" in text(note)
    links = [_attributes(a)["href"] for a in elements(note, "a")]
    assert links == [f"/conversations/{conversation.client_id}/"]
    off = services.simulation_create(
        workspace=ws,
        conversation=conversation,
        configs=[{"name": "none", "config": no_reduction()}],
        pricing=PRICING,
        inferred_prefix=False,
    )
    page = parsed(client.get(f"/simulations/{off.pk}/"))
    [note] = elements(page, "p", id="prefix-note")
    assert text(note).startswith("These replays leave out what the log left out")
    alone = services.simulation_create(
        workspace=ws, conversation=plain, configs=[{"name": "none", "config": no_reduction()}]
    )
    page = parsed(client.get(f"/simulations/{alone.pk}/"))
    assert elements(page, "p", id="prefix-note") == []
