"""What a conversation holds for replays before any config: arrivals, call keys, meters."""

from __future__ import annotations

from reduction_app.engine import (
    AgenticMessage,
    FunctionToolCall,
    FunctionToolResult,
    Message,
    ToolResultContent,
    UserInputText,
    get_token_counter,
)
from simulator.importers import RecordedConversation
from simulator.pricing import pricing_for
from simulator.replay import Prepared
from simulator.transcript import call_key
from tests.simulator.cases import ENGINE, TOOLS, call, hand_conversation, result


def test_prepared_arrivals_take_the_latest_call_with_their_id() -> None:
    """Models reuse ids: a result belongs to the latest call made with its id."""
    conversation = RecordedConversation(
        "reused",
        [
            Message.user("go"),
            call("c1", '{"path": "a"}'),
            result("c1", "A"),
            call("c1", '{"path": "b"}', name="grep"),
            result("c1", "B", name="grep"),
            Message.assistant("done"),
        ],
        TOOLS,
    )
    prepared = Prepared(conversation, ENGINE)
    assert prepared.calls == frozenset({1, 3, 5})
    first, second = prepared.arrivals[2][0], prepared.arrivals[4][0]
    assert (first.name, first.arguments, first.key) == (
        "read_file",
        '{"path": "a"}',
        call_key("read_file", '{"path": "a"}'),
    )
    assert (second.name, second.key) == ("grep", ("grep", '{"path": "b"}'))
    assert prepared.call_keys[3] == [("c1", ("grep", '{"path": "b"}'))]


def test_prepared_agentic_results_arrive_block_by_block() -> None:
    blocks = (
        FunctionToolResult(call_id="t1", name="ls", content=(ToolResultContent(text="a"),)),
        FunctionToolResult(call_id="t1", name="ls", content=(ToolResultContent(text="b"),)),
    )
    conversation = RecordedConversation(
        "agentic",
        [
            AgenticMessage(role="user", content_blocks=(UserInputText(text="go"),)),
            AgenticMessage(
                role="assistant",
                content_blocks=(FunctionToolCall(call_id="t1", name="ls", arguments="{}"),),
            ),
            AgenticMessage(role="user", content_blocks=blocks),
        ],
        format="anthropic",
    )
    prepared = Prepared(conversation, ENGINE)
    arrivals = prepared.arrivals[2]
    assert [(a.item, a.occurrence, a.key) for a in arrivals] == [
        (blocks[0], 0, ("ls", "{}")),
        (blocks[1], 1, ("ls", "{}")),
    ]
    meter = prepared.meter(get_token_counter("approx"))
    assert prepared.result_tokens(meter, arrivals[0]) == meter.message(
        AgenticMessage(role="user", content_blocks=(blocks[0],))
    )


def test_prepared_meters_one_per_measure() -> None:
    """The provider's tokenizer measures every config alike; the engine measure is each
    config's own counter."""
    approx, cl100k = get_token_counter("approx"), get_token_counter("cl100k_base")
    provider = Prepared(hand_conversation(), pricing_for("gpt-4o"))
    assert provider.meter(approx) is provider.meter(cl100k)
    engine = Prepared(hand_conversation(), ENGINE)
    assert engine.meter(approx) is engine.meter(approx)
    assert engine.meter(approx) is not engine.meter(cl100k)
