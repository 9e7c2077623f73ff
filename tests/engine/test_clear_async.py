"""Tests for ``abefore_model_rewrite_state``: the clear phase with async collaborators
(decision 11: counters, handlers, backends, rewriters and post-process may be async)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from reduction_app.engine import InMemoryBackend, WriteRequest
from reduction_app.engine._storage._paths import content_digest
from reduction_app.engine.config import ToolReductionConfig
from reduction_app.engine.errors import OffloadError
from reduction_app.engine.messages import Message
from reduction_app.engine.tool_io import ClearResult, ToolDetail, ToolResult
from tests.engine.clear_support import (
    ID1,
    PLACEHOLDER_ID1,
    agentic_call,
    agentic_results,
    agentic_text,
    assert_untouched,
    c2,
    call_msg,
    containing,
    exactly,
    middleware,
    snapshot,
    state,
    summary,
)


class AsyncBackend:
    """An in-memory backend whose ``write`` and ``read`` are coroutines."""

    def __init__(self, fail: bool = False) -> None:
        self.files: dict[str, str] = {}
        self.fail = fail

    async def write(self, request: WriteRequest) -> None:
        await asyncio.sleep(0)
        if self.fail:
            raise OSError("async disk full")
        self.files[request.file_path] = request.content

    async def read(self, path: str) -> str:
        await asyncio.sleep(0)
        try:
            return self.files[path]
        except KeyError:
            raise FileNotFoundError(f"file not found: {path}") from None


async def test_aclear_default_handler_with_async_backend() -> None:
    backend = AsyncBackend()
    mw, events = middleware(backend, max_tokens_for_clear=20)
    s = state(c2())
    snap = snapshot(s)
    out = await mw.abefore_model_rewrite_state(s)
    assert out.messages[3].content == PLACEHOLDER_ID1
    assert backend.files == {f"/tmp/clear/{ID1}": "Sunny"}
    assert_untouched(s, snap)
    assert (summary(events).tokens_before, summary(events).tokens_after) == (69, 94)


async def test_aclear_async_read_keeps_reused_ids_apart() -> None:
    backend = AsyncBackend()
    backend.files["/tmp/clear/dup"] = "older"
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    msgs = [
        Message.user("q"),
        call_msg(("dup", "t")),
        Message.tool("newer", "dup"),
        call_msg(("k", "t")),
    ]
    out = await mw.abefore_model_rewrite_state(state(msgs))
    newer = f"/tmp/clear/dup-{content_digest('newer')[:12]}"
    assert newer in out.messages[2].content
    assert backend.files == {"/tmp/clear/dup": "older", newer: "newer"}


async def test_aclear_every_collaborator_async() -> None:
    order: list[str] = []

    async def counter(messages: Any, tools: Any) -> int:
        await asyncio.sleep(0)
        order.append("count")
        return 1000

    async def handler(detail: ToolDetail) -> ClearResult:
        await asyncio.sleep(0)
        order.append(f"handle {detail.tool_context.call_id}")
        return ClearResult(
            need_clear=True,
            tool_argument=detail.tool_argument,
            tool_result=ToolResult.of_text("moved"),
            need_offload=True,
            offload_file_path=f"/x/{detail.tool_context.call_id}",
            offload_content="orig",
        )

    async def rewriter(msg: Any, window: list[Any]) -> list[Any]:
        await asyncio.sleep(0)
        order.append("rewrite")
        return [msg, *window]

    async def post(new_state: Any) -> None:
        order.append("post")

    async def on_event(event: Any) -> None:
        order.append(event.kind)

    backend = AsyncBackend()
    mw, _ = middleware(
        backend,
        max_tokens_for_clear=1,
        token_counter=counter,
        clear_message_rewriter=rewriter,
        clear_post_process=post,
        on_event=on_event,
        clear_at_least_tokens=0,
        tool_config={"get_weather": ToolReductionConfig(clear_handler=handler)},
    )
    out = await mw.abefore_model_rewrite_state(state(c2()))
    assert out.messages[3].content == "moved"
    assert backend.files == {f"/x/{ID1}": "orig"}
    assert order == [
        "count",
        "rewrite",
        f"handle {ID1}",
        "count",
        "post",
        # the tool event's figures come from the (async) counter too
        "count",
        "count",
        "tool",
        "summary",
    ]


async def test_aclear_plain_collaborators_work_too() -> None:
    backend = InMemoryBackend()
    posts: list[Any] = []
    mw, _ = middleware(backend, max_tokens_for_clear=20, clear_post_process=posts.append)
    out = await mw.abefore_model_rewrite_state(state(c2()))
    assert posts == [out]
    assert backend.files == {f"/tmp/clear/{ID1}": "Sunny"}


async def test_aclear_failing_async_backend_leaves_the_caller_untouched() -> None:
    mw, events = middleware(AsyncBackend(fail=True), max_tokens_for_clear=20)
    s = state(c2())
    snap = snapshot(s)
    with pytest.raises(OffloadError, match=f"^clear: failed to write /tmp/clear/{ID1}: async"):
        await mw.abefore_model_rewrite_state(s)
    assert_untouched(s, snap)
    assert events == []


async def test_aclear_failing_async_handler_passes_through() -> None:
    async def handler(detail: ToolDetail) -> ClearResult:
        raise LookupError("async handler failed")

    mw, _ = middleware(
        InMemoryBackend(),
        max_tokens_for_clear=20,
        tool_config={"get_weather": ToolReductionConfig(clear_handler=handler)},
    )
    s = state(c2())
    snap = snapshot(s)
    with pytest.raises(LookupError, match=exactly("async handler failed")):
        await mw.abefore_model_rewrite_state(s)
    assert_untouched(s, snap)


async def test_aclear_at_least_with_async_counter_returns_the_original_state() -> None:
    async def counter(messages: Any, tools: Any) -> int:
        return 1000

    backend = AsyncBackend()
    mw, events = middleware(
        backend, max_tokens_for_clear=1, token_counter=counter, clear_at_least_tokens=1
    )
    s = state(c2())
    assert await mw.abefore_model_rewrite_state(s) is s
    assert backend.files == {}
    assert summary(events).reason == "below_clear_at_least_tokens"


async def test_aclear_agentic_several_results() -> None:
    backend = AsyncBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("a", "t"), ("b", "t")),
        agentic_results(("b", "B"), ("a", "A")),
        agentic_call(("k", "t")),
    ]
    await mw.abefore_model_rewrite_state(state(msgs))
    assert backend.files == {"/tmp/clear/a": "A", "/tmp/clear/b": "B"}


def test_clear_sync_phase_refuses_an_async_handler() -> None:
    async def handler(detail: ToolDetail) -> ClearResult:
        return ClearResult()

    mw, _ = middleware(
        InMemoryBackend(),
        max_tokens_for_clear=20,
        tool_config={"get_weather": ToolReductionConfig(clear_handler=handler)},
    )
    s = state(c2())
    snap = snapshot(s)
    with pytest.raises(TypeError, match=containing("returned an awaitable in a synchronous phase")):
        mw.before_model_rewrite_state(s)
    assert_untouched(s, snap)
