"""Tests for the opt-in ``trunc_only_when_shorter`` (docs/behaviour.md §3.9): the truncation
phase keeps an output its notice would not shorten."""

from __future__ import annotations

from reduction_app.engine import InMemoryBackend
from reduction_app.engine.config import ReductionConfig, config_from_dict
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.middleware import new
from reduction_app.engine.tool_io import ToolArgument, ToolContext, ToolOutputPart, ToolResult

S = "hello world" * 10 + "\n" + "hello world" * 8
"""199 characters: at a limit of 198 its notice (two previews of 99 and the text around
them) would be 361 characters long."""
LONG = "x" * 2000
ARGS = '{"path": "a"}'


def run(
    output: str, call_id: str = "c1", **fields: object
) -> tuple[str, InMemoryBackend, list[ReductionEvent]]:
    backend = InMemoryBackend()
    events: list[ReductionEvent] = []
    cfg = ReductionConfig(
        backend=backend,
        max_length_for_trunc=198,
        on_event=events.append,
        **fields,  # type: ignore[arg-type]
    )
    wrapped = new(cfg).wrap_invokable_tool_call(
        lambda _: output, ToolContext(name="t", call_id=call_id)
    )
    return wrapped(ARGS), backend, events


def test_off_by_default_a_notice_may_be_longer_than_the_output() -> None:
    """The reference's behaviour: over the limit, always a notice."""
    out, backend, events = run(S)
    assert len(out) == 361
    assert backend.files == {"/tmp/trunc/c1": S}
    assert len(events) == 1


def test_an_output_its_notice_would_not_shorten_is_kept_whole() -> None:
    out, backend, events = run(S, trunc_only_when_shorter=True)
    assert out == S
    assert (backend.files, events) == ({}, [])


def test_an_output_its_notice_shortens_is_truncated_as_usual() -> None:
    out, backend, events = run(LONG, trunc_only_when_shorter=True)
    plain, _, _ = run(LONG)
    assert out == plain
    assert len(out) < len(LONG)
    assert backend.files == {"/tmp/trunc/c1": LONG}
    assert [(e.chars_before, e.chars_after) for e in events] == [(2000, len(out))]


def test_a_kept_output_frees_the_path_it_was_given() -> None:
    """The path chosen for the notice is released: the next output of the same call id gets
    it, as if the kept output had never asked for one."""
    backend = InMemoryBackend()
    mw = new(
        ReductionConfig(backend=backend, max_length_for_trunc=198, trunc_only_when_shorter=True)
    )
    ctx = ToolContext(name="t", call_id="same")
    assert mw.wrap_invokable_tool_call(lambda _: S, ctx)(ARGS) == S
    out = mw.wrap_invokable_tool_call(lambda _: LONG, ctx)(ARGS)
    assert "Full output saved to: /tmp/trunc/same\n" in out
    assert backend.files == {"/tmp/trunc/same": LONG}


def test_multi_part_outputs_compare_their_text_parts() -> None:
    """Two text parts of 150 characters (300 > 198): each would become a notice with
    previews of 49, longer than the 300 characters in all."""
    backend = InMemoryBackend()
    mw = new(
        ReductionConfig(backend=backend, max_length_for_trunc=198, trunc_only_when_shorter=True)
    )
    parts = (
        ToolOutputPart(type="text", text="a" * 150),
        ToolOutputPart(type="text", text="b" * 150),
    )
    wrapped = mw.wrap_enhanced_invokable_tool_call(
        lambda _: ToolResult(parts=parts), ToolContext(name="t", call_id="m")
    )
    assert wrapped(ToolArgument(text=ARGS)).parts == parts
    assert not backend


def test_streamed_outputs_are_cut_as_before() -> None:
    """Streams are cut incrementally, before their length is known: unaffected."""
    backend = InMemoryBackend()
    mw = new(
        ReductionConfig(backend=backend, max_length_for_trunc=198, trunc_only_when_shorter=True)
    )
    wrapped = mw.wrap_streamable_tool_call(
        lambda _: iter([S[:100], S[100:]]), ToolContext(name="t", call_id="s")
    )
    out = "".join(wrapped(ARGS))
    assert out.startswith(S[:198]) and "Output truncated after 198 characters" in out


def test_the_field_is_read_from_json() -> None:
    cfg = config_from_dict({"trunc_only_when_shorter": True}, backend=InMemoryBackend())
    assert cfg.trunc_only_when_shorter is True
