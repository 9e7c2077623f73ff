"""The engine as a LangChain 1.x agent middleware, for ``langchain.agents.create_agent``.

:class:`ReductionMiddleware` translates between LangChain's messages and the engine's
chat :class:`~reduction_app.engine.Message` values and calls the engine where a tool
returns (truncation) and before each model call (clear); what each hook does is in
docs/integrations.md, "LangChain". It imports LangChain (with langgraph and pydantic) and
the engine's public surface only: no Django.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from inspect import isawaitable
from typing import Any, cast

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command
from pydantic import BaseModel, Field

from reduction_app.engine import (
    DEFAULT_READ_LIMIT,
    PROCESSED_FLAG,
    READ_FILE_DESCRIPTION,
    Backend,
    ChatModelAgentState,
    Media,
    Message,
    MessagePart,
    ReductionConfig,
    ReductionEvent,
    ToolCall,
    ToolContext,
    ToolInfo,
    ToolOutputPart,
    ToolResult,
    aanswer_read_file,
    answer_read_file,
    atruncate_output,
    new,
    truncate_output,
)
from reduction_app.integrations import adapter_config

__all__ = ["ReductionMiddleware"]


# Translation ---------------------------------------------------------------------------


def _text_of(content: str | list[str | dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        b if isinstance(b, str) else str(b.get("text", "")) for b in content if _is_text(b)
    )


def _is_text(block: str | dict[str, Any]) -> bool:
    return isinstance(block, str) or block.get("type") == "text"


def _image_url(block: Mapping[str, Any]) -> str | None:
    """The URL of an image block (OpenAI's ``image_url`` or LangChain's ``image``)."""
    if block.get("type") == "image_url":
        inner = block.get("image_url")
        url = inner.get("url") if isinstance(inner, Mapping) else inner
        return url if isinstance(url, str) else None
    if block.get("type") == "image" and isinstance(block.get("url"), str):
        return str(block["url"])
    return None


def _tool_parts(content: list[str | dict[str, Any]]) -> tuple[ToolOutputPart, ...]:
    """A list content as tool-output parts: text and images as such, a block's other keys
    in ``extra``; a block the engine has no part for rides whole in an empty text part's
    ``extra``, which the engine leaves alone."""
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(ToolOutputPart.of_text(block))
            continue
        url = _image_url(block)
        if block.get("type") == "text":
            rest = {k: v for k, v in block.items() if k not in ("type", "text")}
            parts.append(ToolOutputPart(text=str(block.get("text", "")), extra=rest))
        elif url is not None:
            rest = {k: v for k, v in block.items() if k not in ("type", "image_url", "url")}
            parts.append(ToolOutputPart(type="image", media=Media(url=url), extra=rest))
        else:
            parts.append(ToolOutputPart(extra=block))
    return tuple(parts)


def _message_parts(content: list[str | dict[str, Any]]) -> tuple[MessagePart, ...]:
    out = []
    for part in _tool_parts(content):
        if part.type == "image":
            out.append(MessagePart(type="image_url", media=part.media, extra=part.extra))
        else:
            out.append(MessagePart(type="text", text=part.text, extra=part.extra))
    return tuple(out)


def _blocks(
    parts: Sequence[ToolOutputPart | MessagePart],
    given: Sequence[ToolOutputPart | MessagePart],
    blocks: Any,
) -> list[str | dict[str, Any]]:
    """Parts the engine returned as content blocks: where a part is the one it was given
    (same position, equal), the very block it came from; otherwise a block built from it."""
    same_shape = isinstance(blocks, list) and len(blocks) == len(given)
    out: list[str | dict[str, Any]] = []
    for i, part in enumerate(parts):
        if same_shape and i < len(given) and (part is given[i] or part == given[i]):
            out.append(blocks[i])
        elif part.type in ("image", "image_url") and part.media is not None and part.media.url:
            out.append({"type": "image_url", "image_url": {"url": part.media.url}, **part.extra})
        else:
            out.append({"type": "text", "text": part.text, **part.extra})
    return out


def to_engine(message: BaseMessage) -> Message:
    """A LangChain message as the engine's chat message."""
    content = message.content
    if isinstance(message, ToolMessage):
        multi = _message_parts(content) if isinstance(content, list) else ()
        return Message(
            role="tool",
            content=content if isinstance(content, str) else "",
            user_input_multi_content=multi,
            tool_call_id=message.tool_call_id,
            tool_name=message.name or "",
        )
    if isinstance(message, AIMessage):
        calls = tuple(
            ToolCall(
                id=call["id"] or "",
                name=call["name"],
                arguments=json.dumps(call["args"], ensure_ascii=False),
            )
            for call in message.tool_calls
        )
        return Message(role="assistant", content=_text_of(content), tool_calls=calls)
    if isinstance(message, HumanMessage):
        if isinstance(content, str):
            return Message.user(content)
        return Message(role="user", user_input_multi_content=_message_parts(content))
    if isinstance(message, SystemMessage):
        return Message.system(_text_of(content))
    raise TypeError(f"ReductionMiddleware cannot read a {type(message).__name__}: {message!r}")


def to_langchain(
    message: Message, like: BaseMessage | None, before: Message | None = None
) -> BaseMessage:
    """An engine message the engine wrote, as LangChain's; a copy of ``like`` (its id,
    name, status and metadata) with the new content when given. ``before`` is the engine
    message ``like`` was read as: the blocks of parts it kept are given back as they were."""
    if message.user_input_multi_content:
        given = before.user_input_multi_content if before is not None else ()
        blocks = like.content if like is not None else None
        content: Any = _blocks(message.user_input_multi_content, given, blocks)
    else:
        content = message.content
    if like is not None:
        return like.model_copy(update={"content": content})
    new_id = str(uuid.uuid4())
    if message.role == "tool":
        return ToolMessage(
            content, tool_call_id=message.tool_call_id, name=message.tool_name, id=new_id
        )
    if message.role == "assistant":
        calls = [
            {"id": c.id, "name": c.name, "args": json.loads(c.arguments or "{}")}
            for c in message.tool_calls
        ]
        return AIMessage(content, tool_calls=calls, id=new_id)
    if message.role == "system":
        return SystemMessage(content, id=new_id)
    return HumanMessage(content, id=new_id)


def _unflagged(message: Message) -> Message:
    if PROCESSED_FLAG not in message.extra:
        return message
    return replace(message, extra={k: v for k, v in message.extra.items() if k != PROCESSED_FLAG})


def _tool_info(tool: BaseTool | dict[str, Any]) -> ToolInfo:
    try:
        spec = convert_to_openai_tool(tool)["function"]
    except (KeyError, TypeError, ValueError):
        # A provider's own tool (a dict such as {"type": "web_search"}): counted as sent.
        return ToolInfo(
            name=str(getattr(tool, "name", "")), extra=dict(tool) if isinstance(tool, dict) else {}
        )
    return ToolInfo(
        name=spec["name"],
        description=spec.get("description", ""),
        parameters=spec.get("parameters"),
    )


class _ReadFileArgs(BaseModel):
    path: str = Field(description="The path given in the notice.")
    offset: int = Field(default=0, ge=0, description="First line to read, from 0.")
    limit: int = Field(default=DEFAULT_READ_LIMIT, ge=1, description="How many lines to read.")


# The middleware ------------------------------------------------------------------------


class ReductionMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Reduction Lab's truncation and clear phases in a LangChain agent.

    ``config`` is the engine's :class:`~reduction_app.engine.ReductionConfig`;
    ``backend`` (when given) replaces its ``backend``, and ``on_event`` is called with
    every event after the config's own ``on_event``. Every event is also appended to
    :attr:`events`, and added to the current OpenTelemetry span (labelled with
    ``config_name`` and ``conversation_id`` when given). Give each conversation a
    middleware of its own: the engine's state is kept per middleware (one shared by
    several conversations still reduces each correctly, but reads each again from where
    it differs from the last it saw).
    """

    def __init__(
        self,
        config: ReductionConfig | None = None,
        *,
        backend: Backend | None = None,
        on_event: Callable[[ReductionEvent], Any] | None = None,
        config_name: str = "",
        conversation_id: str = "",
    ) -> None:
        base, listeners = adapter_config(config, backend=backend, on_event=on_event)
        self.events: list[ReductionEvent] = []
        """Every event the engine gave, in order."""

        def record(event: ReductionEvent) -> Any:
            self.events.append(event)
            results = [listener(event) for listener in listeners]
            awaited = [r for r in results if isawaitable(r)]
            return _gather(awaited) if awaited else None

        self._engine = new(replace(base, on_event=record))
        self._engine.set_telemetry(config_name=config_name, conversation_id=conversation_id)
        # Tools run in threads under a sync agent; the engine's path registry and
        # landmarks are one run's, so its calls take turns (the tools themselves do not).
        self._lock = threading.Lock()
        # The processed marks the clear phase puts on messages have no place in LangChain's
        # messages that the model would not see, so each message's engine twin is kept by
        # message id and handed to the engine again on the next call; a message the engine
        # did not change goes back as the very object it came from (prompt-cache prefixes
        # stay byte-identical).
        self._twins: dict[str, tuple[BaseMessage, Message]] = {}
        self._system: tuple[BaseMessage, Message] | None = None
        self._tool_infos: dict[int, tuple[BaseTool | dict[str, Any], ToolInfo]] = {}
        self.tools: Sequence[BaseTool] = [self._read_file_tool()]

    @property
    def config(self) -> ReductionConfig:
        """The engine's config in force, defaults filled in."""
        return self._engine.config

    # Truncation -----------------------------------------------------------------------

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        ctx, arguments = _tool_context(request)
        result = handler(request)
        if not isinstance(result, ToolMessage):
            return result
        content = result.content
        with self._lock:
            if isinstance(content, str):
                text = truncate_output(self._engine, content, ctx, arguments)
                return result if text is content else result.model_copy(update={"content": text})
            given = ToolResult(parts=_tool_parts(content))
            out = truncate_output(self._engine, given, ctx, arguments)
        return (
            result
            if out is given
            else result.model_copy(update={"content": _blocks(out.parts, given.parts, content)})
        )

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        ctx, arguments = _tool_context(request)
        result = await handler(request)
        if not isinstance(result, ToolMessage):
            return result
        content = result.content
        if isinstance(content, str):
            text = await atruncate_output(self._engine, content, ctx, arguments)
            return result if text is content else result.model_copy(update={"content": text})
        given = ToolResult(parts=_tool_parts(content))
        out = await atruncate_output(self._engine, given, ctx, arguments)
        return (
            result
            if out is given
            else result.model_copy(update={"content": _blocks(out.parts, given.parts, content)})
        )

    # Clear ----------------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        with self._lock:
            originals, state = self._engine_state(request)
            cleared = self._engine.before_model_rewrite_state(state)
            outcome = self._outcome(request, originals, state, cleared)
        if outcome is None:
            return handler(request)
        new_request, update, whole = outcome
        return _persisted(handler(new_request), update, whole=whole)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        originals, state = self._engine_state(request)
        cleared = await self._engine.abefore_model_rewrite_state(state)
        outcome = self._outcome(request, originals, state, cleared)
        if outcome is None:
            return await handler(request)
        new_request, update, whole = outcome
        return _persisted(await handler(new_request), update, whole=whole)

    def _engine_state(
        self, request: ModelRequest[Any]
    ) -> tuple[list[BaseMessage], ChatModelAgentState]:
        """The request as the engine's state, each message the twin kept for it."""
        originals: list[BaseMessage] = list(request.messages)
        system = request.system_message
        engine_in: list[Message] = []
        if system is not None:
            if self._system is None or not _same(self._system[0], system):
                self._system = (system, to_engine(system))
            originals.insert(0, system)
            engine_in.append(self._system[1])
        twins: dict[str, tuple[BaseMessage, Message]] = {}
        for message in request.messages:
            known = self._twins.get(message.id or "")
            twin = (
                known[1] if known is not None and _same(known[0], message) else to_engine(message)
            )
            if message.id:
                twins[message.id] = (message, twin)
            engine_in.append(twin)
        # Only the current conversation's twins are kept, so the map never outgrows it.
        self._twins = twins
        tool_infos = tuple(self._tool_info(tool) for tool in request.tools)
        return originals, ChatModelAgentState(messages=engine_in, tool_infos=tool_infos)

    def _tool_info(self, tool: BaseTool | dict[str, Any]) -> ToolInfo:
        known = self._tool_infos.get(id(tool))
        if known is None or known[0] is not tool:
            known = (tool, _tool_info(tool))
            self._tool_infos[id(tool)] = known
        return known[1]

    def _outcome(
        self,
        request: ModelRequest[Any],
        originals: list[BaseMessage],
        state: ChatModelAgentState,
        cleared: ChatModelAgentState,
    ) -> tuple[ModelRequest[Any], list[Any], bool] | None:
        """The request to send and the state update that keeps it, or ``None`` when the
        model gets what it was going to get. The update is the changed messages (same
        ids), or, with ``True``, the whole list when the pass added or removed messages."""
        if cleared is state:
            return None
        engine_in, out = _chat(state.messages), _chat(cleared.messages)
        changed: list[BaseMessage] = []
        sent: list[BaseMessage] = []
        # A pass that added, removed or moved messages (a rewriter, the offload manifest)
        # has no message-for-message answer: the whole list is replaced.
        whole = len(out) != len(engine_in) or any(
            not _same_slot(a, b) for a, b in zip(out, engine_in, strict=True)
        )
        for i, after in enumerate(out):
            if whole:
                message = _original(after, originals, engine_in)
            else:
                before, message = engine_in[i], originals[i]
                if after is not before and _unflagged(after) != _unflagged(before):
                    message = to_langchain(after, message, before)
                    changed.append(message)
            sent.append(message)
            if message.id and not isinstance(message, SystemMessage):
                self._twins[message.id] = (message, after)
        system = request.system_message
        if system is not None:
            first = sent.pop(0)
            if not isinstance(first, SystemMessage):
                raise TypeError(f"the clear phase moved the system message: {first!r}")
            system = first
            self._system = (system, out[0])
        new_request = request.override(
            messages=cast("list[AnyMessage]", sent), system_message=system
        )
        if whole:
            return new_request, [RemoveMessage(id=REMOVE_ALL_MESSAGES), *sent], True
        return new_request, [m for m in changed if m.id and m is not system], False

    # The read_file tool ---------------------------------------------------------------

    @property
    def read_file_tool(self) -> BaseTool:
        """The tool the notices name (``read_file_tool_name``), also in :attr:`tools`."""
        return self.tools[0]

    def _read_file_tool(self) -> BaseTool:
        def read(path: str, offset: int = 0, limit: int = DEFAULT_READ_LIMIT) -> str:
            try:
                return answer_read_file(self._engine.config, path, offset=offset, limit=limit)
            except TypeError as exc:  # an async backend, under a synchronous agent
                raise ToolException(
                    f"the backend of {path} is async: run the agent with ainvoke"
                ) from exc

        async def aread(path: str, offset: int = 0, limit: int = DEFAULT_READ_LIMIT) -> str:
            return await aanswer_read_file(self._engine.config, path, offset=offset, limit=limit)

        return StructuredTool.from_function(
            func=read,
            coroutine=aread,
            name=self._engine.config.read_file_tool_name,
            description=READ_FILE_DESCRIPTION,
            args_schema=_ReadFileArgs,
            handle_tool_error=True,
        )


def _same_slot(after: Message, before: Message) -> bool:
    """Whether ``after`` can stand where ``before`` was: the same role, answering or
    making the same calls."""
    return (
        after.role == before.role
        and after.tool_call_id == before.tool_call_id
        and [c.id for c in after.tool_calls] == [c.id for c in before.tool_calls]
    )


def _original(
    after: Message, originals: list[BaseMessage], engine_in: list[Message]
) -> BaseMessage:
    """The LangChain message ``after`` stands for after a pass that moved messages: the
    one whose twin it is (flags aside), else a new one (a tool result keeps its id)."""
    for message, before in zip(originals, engine_in, strict=True):
        if after is before:
            return message
    bare = _unflagged(after)
    for message, before in zip(originals, engine_in, strict=True):
        if _unflagged(before) == bare:
            return message
    like = None
    if after.role == "tool":
        like = next(
            (
                m
                for m in originals
                if isinstance(m, ToolMessage) and m.tool_call_id == after.tool_call_id
            ),
            None,
        )
    return to_langchain(after, like)


def _persisted(
    response: ModelResponse[Any], update: list[Any], *, whole: bool
) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
    """The model's response with the state update that keeps the cleared messages.

    Changed messages replace theirs by id (``add_messages``). A whole list is applied
    after the model's own update, so it ends with the response's messages (given ids
    here, so that both updates name the same messages)."""
    if not update:
        return response
    if whole:
        result = [
            m if m.id else m.model_copy(update={"id": str(uuid.uuid4())}) for m in response.result
        ]
        response = ModelResponse(result=result, structured_response=response.structured_response)
        update = [*update, *result]
    return ExtendedModelResponse(
        model_response=response, command=Command(update={"messages": update})
    )


def _chat(messages: Sequence[Any]) -> list[Message]:
    """The engine's messages of a chat conversation (the only style this adapter builds)."""
    out = list(messages)
    for message in out:
        if not isinstance(message, Message):
            raise TypeError(f"expected the engine's chat messages, got {message!r}")
    return out


def _same(known: BaseMessage, message: BaseMessage) -> bool:
    return known is message or known == message


def _tool_context(request: ToolCallRequest) -> tuple[ToolContext, str]:
    call = request.tool_call
    arguments = json.dumps(call["args"], ensure_ascii=False)
    return ToolContext(name=call["name"], call_id=call["id"] or ""), arguments


async def _gather(awaitables: list[Awaitable[Any]]) -> None:
    for awaitable in awaitables:
        await awaitable
