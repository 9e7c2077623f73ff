"""Recovery measured on real agents: the outputs they cut themselves and what came next."""

from __future__ import annotations

import json
from pathlib import Path

from reduction_app.engine import (
    AgenticMessage,
    FunctionToolCall,
    FunctionToolResult,
    Message,
    ToolCall,
    ToolResultContent,
    UserInputText,
)
from reduction_app.engine.formats import messages_to_openai
from simulator.importers import load_files
from simulator.misses import RECOVERY
from simulator.recording import ProviderUsage, RecordedConversation
from simulator.recovery import Truncation, corpus_recovery, pooled, truncations
from tests.conftest import CONVERSATIONS, REPO, needs_recordings
from tests.simulator.test_cli import run

# --- mini-swe-agent shaped: one bash tool, outputs over 10,000 characters cut ----------

CUT = (
    "<warning>\nThe output of your last command was too long.\n</warning><output_head>\n"
    "first_line_of_the_head = 1\n</output_head>\n"
    "<elided_chars>\n500 characters elided\n</elided_chars>\n"
    "<output_tail>\nlast_line_of_the_tail = 2\n</output_tail>"
)


def bash(call_id: str, command: str) -> Message:
    arguments = json.dumps({"command": command})
    return Message.assistant(tool_calls=(ToolCall(id=call_id, name="bash", arguments=arguments),))


def output(call_id: str, text: str) -> Message:
    return Message.tool(text, tool_call_id=call_id, tool_name="bash")


def mini(*after: tuple[str, str]) -> RecordedConversation:
    """``cat pkg/module.py`` cut, then the calls ``after`` (command, output) and an end."""
    messages: list[Message] = [
        Message.system("You run shell commands."),
        Message.user("Fix the bug."),
        bash("c0", "cat pkg/module.py"),
        output("c0", CUT),
    ]
    for i, (command, text) in enumerate(after, start=1):
        messages += [bash(f"c{i}", command), output(f"c{i}", text)]
    return RecordedConversation("mini", [*messages, Message.assistant("Done.")])


def approx(*texts: str) -> int:
    """The approximate counter's tokens of each text, summed: characters // 4."""
    return sum(len(t) // 4 for t in texts)


def call_text(command: str) -> str:
    """What a recovery call brings besides its output: its (empty) text and arguments."""
    return "\n" + json.dumps({"command": command})


def test_truncations_a_narrower_read_is_going_back() -> None:
    """A grep then a range of the cut file, both showing lines seen nowhere before: a
    recovery of 2 calls from the next one; the test run after it aims elsewhere."""
    grep = 'grep -n "def hidden_function" pkg/module.py'
    sed = "sed -n '40,41p' pkg/module.py"
    found = "40:def hidden_function(value):"
    lines = "def hidden_function(value):\n    return value * 2"
    conversation = mini((grep, found), (sed, lines), ("python run_tests.py", "all passed"))
    (cut,) = truncations(conversation, tokenizer="approx")
    assert cut == Truncation(
        conversation="mini",
        call=0,
        kind="elided",
        shown_chars=len(CUT),
        # The whole output at the rate of the text shown: (shown + 500) * (shown // 4) / shown.
        original_tokens=round((len(CUT) + 500) * (len(CUT) // 4) / len(CUT)),
        went_back=1,
        recovery_calls=2,
        recovery_tokens=approx(call_text(grep), found, call_text(sed), lines),
    )


def test_truncations_an_edit_of_the_cut_file_is_going_on() -> None:
    """Editing the same file shows nothing new; showing the tail again shows nothing new."""
    conversation = mini(
        ("sed -i 's/a/b/' pkg/module.py", ""),
        ("tail -n 1 pkg/module.py", "last_line_of_the_tail = 2"),
        ("python run_tests.py", "all passed"),
    )
    (cut,) = truncations(conversation, tokenizer="approx")
    assert (cut.went_back, cut.recovery_calls, cut.recovery_tokens) == (None, 0, 0)


def test_truncations_look_five_calls_ahead() -> None:
    later = [(f"echo step_{i}", f"step_{i} done") for i in range(5)]
    going_back = [("sed -n '1,9p' pkg/module.py", "a_line_never_seen = 3")]
    assert truncations(mini(*later[:4], *going_back), tokenizer="approx")[0].went_back == 5
    assert truncations(mini(*later, *going_back), tokenizer="approx")[0].went_back is None


# --- Claude Code shaped: content blocks, the output persisted to a file -------------------


def tool_use(call_id: str, name: str, arguments: dict[str, object]) -> AgenticMessage:
    block = FunctionToolCall(call_id=call_id, name=name, arguments=json.dumps(arguments))
    return AgenticMessage(role="assistant", content_blocks=(block,))


def tool_result(call_id: str, name: str, text: str) -> AgenticMessage:
    content = (ToolResultContent(text=text),)
    block = FunctionToolResult(call_id=call_id, name=name, content=content)
    return AgenticMessage(role="user", content_blocks=(block,))


PERSISTED = (
    "<persisted-output>\nOutput too large (64KB). Full output saved to: "
    "/home/me/.claude/tool-results/t1.txt\n\nPreview (first 2KB):\n"
    "diff --git a/agent.go b/agent.go\n</persisted-output>"
)


def claude_code(
    *after: AgenticMessage, usage: dict[int, int] | None = None
) -> RecordedConversation:
    messages = [
        AgenticMessage(role="user", content_blocks=(UserInputText(text="Review the diff."),)),
        tool_use("t1", "Bash", {"command": "git diff main...HEAD"}),
        tool_result("t1", "Bash", PERSISTED),
        *after,
        AgenticMessage(role="assistant", content_blocks=()),
    ]
    recorded = ProviderUsage(prompt_tokens=usage) if usage else None
    return RecordedConversation("cc", messages, format="anthropic", usage=recorded)


def test_truncations_reading_the_persisted_file_is_going_back() -> None:
    """The Read names the notice's path; the provider's prompt tokens rose by 400 from
    the Read's call (message 3) to the next (message 5)."""
    read = {"file_path": "/home/me/.claude/tool-results/t1.txt"}
    text = "+func NewAgent() *Agent {"
    conversation = claude_code(
        tool_use("t2", "Read", read),
        tool_result("t2", "Read", text),
        usage={1: 1000, 3: 1100, 5: 1500},
    )
    (cut,) = truncations(conversation, tokenizer="approx")
    assert (cut.kind, cut.went_back, cut.recovery_calls) == ("persisted", 1, 1)
    assert cut.original_tokens == round(64 * 1024 * (len(PERSISTED) // 4) / len(PERSISTED))
    assert cut.recovery_tokens == approx("\n" + json.dumps(read), text)
    assert cut.recovery_provider_tokens == 400


def test_truncations_a_refused_read_and_a_cut_shell_output() -> None:
    """The refusal says the file's tokens; the shell cut, the characters it left out."""
    refused = "File content (26800 tokens) exceeds maximum allowed tokens (25000)."
    cut = "go vet ./...\n\n... [3000 characters truncated] ...\n\nok pkg/agent"
    path = {"file_path": "/src/pkg/big_test.go"}
    conversation = claude_code(
        tool_use("t2", "Read", path),
        tool_result("t2", "Read", refused),
        tool_use("t3", "Read", {**path, "offset": 1, "limit": 80}),
        tool_result("t3", "Read", "     1\tpackage agent_test"),
        tool_use("t4", "Bash", {"command": "make lint"}),
        tool_result("t4", "Bash", cut),
    )
    by_kind = {t.kind: t for t in truncations(conversation, tokenizer="approx")}
    assert by_kind["refused"].original_tokens == 26800
    assert (by_kind["refused"].went_back, by_kind["refused"].recovery_calls) == (1, 1)
    assert by_kind["cut"].original_tokens == round((len(cut) + 3000) * (len(cut) // 4) / len(cut))
    assert by_kind["cut"].went_back is None


def test_corpus_recovery_sums_per_recovery() -> None:
    back = mini(('grep -n "def hidden" pkg/module.py', "12:def hidden():"))
    on = mini(("python run_tests.py", "all passed"))
    corpus = corpus_recovery("two", [back, on], tokenizer="approx")
    (recovered,) = corpus.recovered
    figures = corpus.summary()
    assert figures["truncations"] == 2
    assert figures["went_back"] == {"1": 1, "3": 1, "5": 1}
    assert figures["calls_per_recovery"] == 1
    assert figures["tokens_per_recovery"] == recovered.recovery_tokens
    assert figures["output_share"] == round(
        recovered.recovery_tokens / recovered.original_tokens, 4
    )
    assert pooled([corpus, corpus]).summary()["truncations"] == 4


def test_cli_recovery_prints_a_table_and_json(tmp_path: Path) -> None:
    conversation = mini(('grep -n "def hidden" pkg/module.py', "12:def hidden():"))
    path = tmp_path / "mini.json"
    path.write_text(
        json.dumps({"messages": messages_to_openai(list(conversation.messages))}),
        encoding="utf-8",
    )
    code, out, err = run("recovery", path)
    assert (code, err) == (0, "")
    header, row = out.splitlines()
    assert header.split()[:6] == ["corpus", "runs", "cut", "back<=1", "back<=3", "back<=5"]
    assert row.split()[:7] == [path.name, "1", "1", "1", "1", "1", "1.00"]
    code, out, _ = run("recovery", path, path, "--json")
    payload = json.loads(out)
    assert [c["went_back"]["1"] for c in payload["corpora"]] == [1, 1]
    assert payload["all"]["truncations"] == 2
    assert payload["corpora"][0]["items"][0]["kind"] == "elided"


@needs_recordings
def test_recovery_on_the_shipped_recordings_prices_a_miss() -> None:
    """Every mini-swe-agent output the agent cut is found (counted here on the raw
    trajectories), and :data:`~simulator.misses.RECOVERY` is the measurement pooled over
    mini-swe-agent and the long Claude Code sessions, rounded."""
    folder = CONVERSATIONS / "mini-swe-agent"
    raw = 0
    for file in sorted(folder.glob("*.traj.json")):
        for message in json.loads(file.read_text(encoding="utf-8"))["messages"]:
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content)
            raw += message["role"] == "user" and "<output_head>" in (content or "")
    corpora = [
        corpus_recovery(name, load_files([CONVERSATIONS / name]))
        for name in ("mini-swe-agent", "claude-code-long")
    ]
    assert len(corpora[0].truncations) == raw
    figures = pooled(corpora).summary()
    assert round(figures["calls_per_recovery"], 1) == RECOVERY.calls
    assert round(figures["output_share"], 2) == RECOVERY.output_share


@needs_recordings
def test_simulator_page_shows_the_recovery_table_as_printed() -> None:
    """docs/simulator.md's table of recoveries is what its command prints."""
    folders = [
        CONVERSATIONS / name for name in ("mini-swe-agent", "claude-code-long", "claude-code")
    ]
    code, out, _ = run("recovery", *folders)
    assert code == 0
    page = (REPO / "docs" / "simulator.md").read_text(encoding="utf-8")
    assert f"```text\n{out}```\n" in page
