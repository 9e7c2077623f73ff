"""Reduction events as OpenTelemetry span events (engine/telemetry.py), with the real SDK."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import Tracer

from reduction_app.engine import InMemoryBackend, ReductionEvent, ToolContext, truncate_output
from reduction_app.engine.config import ReductionConfig
from reduction_app.engine.middleware import new
from reduction_app.engine.telemetry import (
    CONFIG_ATTRIBUTE,
    CONVERSATION_ATTRIBUTE,
    EVENT_ATTRIBUTES,
    SPAN_ATTRIBUTES,
    event_from_attributes,
    recording,
    span_attributes,
)
from tests.engine.clear_support import ID1, c2, state

S = "hello world" * 10 + "\n" + "hello world" * 8

TRUNCATION = {
    "reduction.phase": "truncation",
    "reduction.kind": "tool",
    "reduction.tool_name": "t",
    "reduction.call_id": "12345",
    # S has 199 characters: 199 // 4 = 49 tokens; the notice 236: 59 tokens.
    "reduction.chars_before": 199,
    "reduction.chars_after": 236,
    "reduction.tokens_before": 49,
    "reduction.tokens_after": 59,
    "reduction.tokens_saved": -10,
    "reduction.offload_path": "/tmp/trunc/12345",
    "reduction.streamed": False,
    "reduction.applied": False,
    "reduction.calls_cleared": 0,
    "reduction.reason": "",
    "reduction.threshold": 0,
    "reduction.strategy": "",
}


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracer(exporter: InMemorySpanExporter) -> Iterator[Tracer]:
    """A tracer of a provider of its own (the global one is left alone)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("tests")
    provider.shutdown()


def _events(span: ReadableSpan) -> list[tuple[str, dict[str, Any]]]:
    return [(e.name, dict(e.attributes or {})) for e in span.events]


def _middleware(**fields: Any) -> Any:
    return new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=70, **fields))


def test_span_attributes_name_every_event_field_once() -> None:
    assert SPAN_ATTRIBUTES == (
        "reduction.phase",
        "reduction.kind",
        "reduction.tool_name",
        "reduction.call_id",
        "reduction.chars_before",
        "reduction.chars_after",
        "reduction.tokens_before",
        "reduction.tokens_after",
        "reduction.tokens_saved",
        "reduction.offload_path",
        "reduction.streamed",
        "reduction.applied",
        "reduction.calls_cleared",
        "reduction.reason",
        "reduction.threshold",
        "reduction.strategy",
        "reduction.config",
        "reduction.conversation_id",
    )
    assert SPAN_ATTRIBUTES[-2:] == (CONFIG_ATTRIBUTE, CONVERSATION_ATTRIBUTE)
    assert set(EVENT_ATTRIBUTES.values()) == set(TRUNCATION)


def test_truncation_adds_a_span_event_without_a_listener(
    tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    mw = _middleware()
    with tracer.start_as_current_span("tool call"):
        truncate_output(mw, S, ToolContext(name="t", call_id="12345"))
    [span] = exporter.get_finished_spans()
    assert _events(span) == [("reduction.truncation", TRUNCATION)]


def test_truncation_span_event_carries_the_config_and_conversation_names(
    tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    seen: list[ReductionEvent] = []
    mw = _middleware(on_event=seen.append)
    mw.set_telemetry(config_name="tight", conversation_id="run-7")
    with tracer.start_as_current_span("tool call"):
        truncate_output(mw, S, ToolContext(name="t", call_id="12345"))
    [span] = exporter.get_finished_spans()
    expected = {**TRUNCATION, "reduction.config": "tight", "reduction.conversation_id": "run-7"}
    assert _events(span) == [("reduction.truncation", expected)]
    assert [span_attributes(e, config_name="tight", conversation_id="run-7") for e in seen] == [
        expected
    ]
    mw.set_telemetry(config_name="")
    with tracer.start_as_current_span("again"):
        truncate_output(mw, S, ToolContext(name="t", call_id="12345"))
    again = exporter.get_finished_spans()[-1]
    assert _events(again)[0][1] == {**TRUNCATION, "reduction.conversation_id": "run-7"}


def test_async_truncation_adds_the_same_span_event(
    tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    from reduction_app.engine import atruncate_output

    async def run() -> None:
        with tracer.start_as_current_span("tool call"):
            await atruncate_output(_middleware(), S, ToolContext(name="t", call_id="12345"))

    asyncio.run(run())
    [span] = exporter.get_finished_spans()
    assert _events(span) == [("reduction.truncation", TRUNCATION)]


def test_streamed_truncation_adds_a_span_event_marked_streamed(
    tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    mw = _middleware()
    wrapped = mw.wrap_streamable_tool_call(
        lambda _: iter([S[:100], S[100:]]), ToolContext(name="t", call_id="9")
    )
    with tracer.start_as_current_span("tool call"):
        "".join(wrapped("{}"))
    [span] = exporter.get_finished_spans()
    [(name, attributes)] = _events(span)
    assert name == "reduction.truncation"
    assert (attributes["reduction.streamed"], attributes["reduction.offload_path"]) == (
        True,
        "/tmp/trunc/9",
    )
    assert attributes["reduction.chars_before"] == len(S)


def test_clear_adds_tool_and_summary_span_events(
    tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    """Without a listener, the span gets the very events a listener gets."""
    fields = {
        "skip_truncation": True,
        "max_tokens_for_clear": 20,
        "clear_retention_suffix_limit": 0,
    }
    heard: list[ReductionEvent] = []
    _middleware(on_event=heard.append, **fields).before_model_rewrite_state(state(c2()))
    mw = _middleware(**fields)
    mw.set_telemetry(config_name="default")
    with tracer.start_as_current_span("model call"):
        mw.before_model_rewrite_state(state(c2()))
    [span] = exporter.get_finished_spans()
    assert [e.kind for e in heard] == ["tool", "summary"]
    assert heard[0].call_id == ID1
    assert heard[0].offload_path == f"/tmp/clear/{ID1}"
    assert (heard[1].reason, heard[1].applied, heard[1].calls_cleared) == ("applied", True, 1)
    assert _events(span) == [
        ("reduction.clear", span_attributes(e, config_name="default")) for e in heard
    ]
    assert [event_from_attributes(a) for _, a in _events(span)] == heard


def test_clear_below_threshold_still_adds_its_summary(
    tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    """A pass that changed nothing is a span event too, as the REST API records it."""
    mw = _middleware(skip_truncation=True)
    with tracer.start_as_current_span("model call"):
        mw.before_model_rewrite_state(state(c2()))
    [span] = exporter.get_finished_spans()
    [(name, attributes)] = _events(span)
    assert name == "reduction.clear"
    assert (attributes["reduction.kind"], attributes["reduction.reason"]) == (
        "summary",
        "below_threshold",
    )
    assert attributes["reduction.applied"] is False
    assert attributes["reduction.threshold"] == 160_000


def test_no_span_event_outside_a_span_or_on_an_unsampled_one(
    exporter: InMemorySpanExporter,
) -> None:
    assert recording() is False
    out = truncate_output(_middleware(), S, ToolContext(name="t", call_id="1"))
    assert out.startswith("<persisted-output>")
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("tests").start_as_current_span("unsampled"):
        assert recording() is False
        truncate_output(_middleware(), S, ToolContext(name="t", call_id="1"))
    assert exporter.get_finished_spans() == ()


def test_event_from_attributes_refuses_wrong_types() -> None:
    with pytest.raises(TypeError, match=r"^reduction\.tokens_before: '3' is not a int$"):
        event_from_attributes({**TRUNCATION, "reduction.tokens_before": "3"})
    with pytest.raises(TypeError, match=r"must name a phase and a kind"):
        event_from_attributes({"reduction.phase": "other", "reduction.kind": "tool"})
    assert event_from_attributes({**TRUNCATION, "other": 1}).tokens_saved == -10


def test_engine_works_without_opentelemetry() -> None:
    """With ``opentelemetry`` not importable, the engine imports and truncates as before."""
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "from reduction_app.engine import InMemoryBackend, ReductionConfig, ToolContext, new\n"
        "from reduction_app.engine import truncate_output\n"
        "from reduction_app.engine.telemetry import recording\n"
        "mw = new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=10))\n"
        "out = truncate_output(mw, 'x' * 100, ToolContext(name='t', call_id='c'))\n"
        "assert out.startswith('<persisted-output>'), out\n"
        "assert recording() is False\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")
