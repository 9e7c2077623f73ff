"""The reduction engine inside a pydantic-ai agent, as one capability.

``Agent(model, tools=[...], capabilities=[Reduction(config)])``: :class:`Reduction`
truncates every tool of the agent (``get_wrapper_toolset``), adds the ``read_file`` tool
(``get_toolset``) and clears before every model request (``before_model_request``), with
the engine's state kept per conversation, so one ``Agent`` serves many. What it does and
counts is in docs/integrations.md, "pydantic-ai". Importing it never loads Django.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic_core
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext, Tool
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from reduction_app.engine import (
    DEFAULT_READ_LIMIT,
    READ_FILE_DESCRIPTION,
    Backend,
    ChatModelAgentState,
    Message,
    ReductionConfig,
    ReductionEvent,
    ReductionMiddleware,
    ToolCall,
    ToolContext,
    ToolInfo,
    aanswer_read_file,
    atruncate_output,
    new,
)
from reduction_app.integrations import adapter_config

__all__ = [
    "ReducedToolset",
    "Reduction",
    "ReductionCapability",
]


# Where an engine message came from: the key of its pydantic-ai part (a request's part)
# or message (a response), kept in the message's ``extra``, which the engine carries
# over to the message it returns in its place.
_ORIGIN = "pydantic_ai_origin"


@dataclass
class _Seen:
    """What one pydantic-ai part or response became in the engine, kept between calls."""

    source: object
    """The pydantic-ai object (held so its ``id`` stays its own)."""
    message: Message
    """Its engine message, as the last clear pass left it (processed flags included)."""
    replacement: object | None = None
    """The part the last pass put in its place, when it changed it."""


@dataclass
class _Origins:
    """Where the engine messages of one clear pass came from."""

    by_key: dict[object, tuple[int, object]] = field(default_factory=dict)
    """Origin key -> (index of the pydantic-ai message, the part or response it reads)."""
    by_part: dict[int, object] = field(default_factory=dict)
    """``id`` of a part given -> the part the engine read for it (itself, or what an
    earlier pass put in its place)."""


MAX_CONVERSATIONS = 256
"""Conversations whose engine state one :class:`Reduction` keeps (the most recently run);
an older one run again starts afresh from its history, which holds what was cleared."""


class Reduction(AbstractCapability[Any]):
    """The engine in a pydantic-ai agent: truncation of every tool, the ``read_file``
    tool, and the clear pass before each model request.

    ``config`` is the engine's :class:`~reduction_app.engine.ReductionConfig` (the
    defaults when ``None``); ``backend``, when given, replaces its ``backend``; ``on_event``
    is called with every event after the config's own ``on_event``. Every event is also
    appended to :attr:`events`, and added to the current OpenTelemetry span (labelled with
    ``config_name`` when given, and with the run's conversation id).

    Give it to an agent (``capabilities=[reduction]``): each run gets the engine state of
    its conversation. Its methods used directly (:meth:`history_processor`,
    :meth:`wrap`, :meth:`truncate`, :meth:`read_file`) share one state of their own.
    """

    def __init__(
        self,
        config: ReductionConfig | None = None,
        *,
        backend: Backend | None = None,
        on_event: Callable[[ReductionEvent], Any] | None = None,
        config_name: str = "",
    ) -> None:
        base, callbacks = adapter_config(config, backend=backend, on_event=on_event)
        self._base = base
        self._on_event = on_event
        self._config_name = config_name
        self._parent: Reduction | None = None
        self._conversations: OrderedDict[str, Reduction] = OrderedDict()
        self.events: list[ReductionEvent] = []
        """Every event so far, in the order the engine gave them (of every conversation,
        on the capability given to the agent)."""

        def record(event: ReductionEvent) -> None:
            self.events.append(event)
            if self._parent is not None:
                self._parent.events.append(event)
            for callback in callbacks:
                callback(event)

        self.middleware: ReductionMiddleware = new(dataclasses.replace(base, on_event=record))
        self.middleware.set_telemetry(config_name=config_name)
        self._seen: dict[int, _Seen] = {}
        self._keys = itertools.count(1)

    # The capability ------------------------------------------------------------------

    def conversation(self, conversation_id: str) -> Reduction:
        """The engine state of one conversation, as its runs use it (made on first use)."""
        known = self._conversations.get(conversation_id)
        if known is not None:
            self._conversations.move_to_end(conversation_id)
            return known
        child = Reduction(self._base, on_event=self._on_event, config_name=self._config_name)
        child.middleware.set_telemetry(conversation_id=conversation_id)
        child._parent = self
        self._conversations[conversation_id] = child
        while len(self._conversations) > MAX_CONVERSATIONS:
            self._conversations.popitem(last=False)
        return child

    async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
        if self._parent is not None:
            return self
        if ctx.conversation_id is None:
            child = Reduction(self._base, on_event=self._on_event, config_name=self._config_name)
            child._parent = self
            return child
        return self.conversation(ctx.conversation_id)

    def get_toolset(self) -> FunctionToolset[Any]:
        return self.read_file_toolset

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        # The read tool's pages are not truncated: a page read stays until a clear pass.
        return ReducedToolset(
            toolset, reduction=self, skip=frozenset({self.config.read_file_tool_name})
        )

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        return await _clear_request(self, ctx, request_context)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds live state and callbacks: not written into an agent spec

    @property
    def config(self) -> ReductionConfig:
        """The engine's config in force, defaults filled in."""
        return self.middleware.config

    # Clearing ------------------------------------------------------------------------

    @property
    def capability(self) -> ReductionCapability:
        """The clear pass alone, on this object's own state, before every model request
        (counting the tools offered in that request too), for an agent whose tools are
        wrapped with :meth:`wrap` and given :attr:`read_file_toolset` by hand."""
        return ReductionCapability(self)

    async def history_processor(
        self, messages: list[ModelMessage], tool_infos: Sequence[ToolInfo] = ()
    ) -> list[ModelMessage]:
        """The clear pass over a pydantic-ai history; returns the history to send (the
        list given when nothing was cleared). ``tool_infos`` are counted with it, as the
        engine counts the tools of a request. Also a history processor on its own:
        ``ProcessHistory(reduction.history_processor)``."""
        engine_messages, origins = self._to_engine(messages)
        state = ChatModelAgentState(messages=engine_messages, tool_infos=tuple(tool_infos))
        out = await self.middleware.abefore_model_rewrite_state(state)
        if out is state:
            return messages
        returned = [m for m in out.messages if isinstance(m, Message)]
        return self._from_engine(messages, returned, origins)

    def _to_engine(self, messages: Sequence[ModelMessage]) -> tuple[list[Message], _Origins]:
        """The engine's view of ``messages``, and where each engine message came from."""
        seen: dict[int, _Seen] = {}
        out: list[Message] = []
        origins = _Origins()

        def add(source: Any, index: int) -> None:
            earlier = self._seen.get(id(source))
            if earlier is not None and earlier.source is source:
                entry = earlier
            else:
                converted = (
                    _response_message(source)
                    if isinstance(source, ModelResponse)
                    else _request_message(source)
                )
                if converted is None:
                    return
                key = next(self._keys)
                extra = {**converted.extra, _ORIGIN: key}
                entry = _Seen(source, dataclasses.replace(converted, extra=extra))
            current = entry.replacement or source
            seen[id(source)] = entry
            if current is not source:
                seen[id(current)] = _Seen(current, entry.message)
            out.append(entry.message)
            origins.by_key[entry.message.extra[_ORIGIN]] = (index, current)
            origins.by_part[id(source)] = current

        for index, message in enumerate(messages):
            if isinstance(message, ModelResponse):
                add(message, index)
            else:
                for part in message.parts:
                    add(part, index)
        self._seen = seen
        return out, origins

    def _from_engine(
        self, given: list[ModelMessage], out: list[Message], origins: _Origins
    ) -> list[ModelMessage]:
        """The pydantic-ai history for the engine's ``out``: an untouched message is the
        object given, a touched one a copy holding its new parts, a new one built."""
        groups: list[tuple[int | None, dict[int, Any]]] = []
        for msg in out:
            key = msg.extra.get(_ORIGIN)
            if key in origins.by_key:
                index, source = origins.by_key[key]
                if not groups or groups[-1][0] != index:
                    groups.append((index, {}))
                groups[-1][1][id(source)] = self._back(source, msg)
            else:
                groups.append((None, {0: _new_message(msg)}))

        result: list[ModelMessage] = []
        emitted: set[int] = set()
        represented = {index for index, _ in origins.by_key.values()}

        def catch_up(upto: int) -> None:
            # Messages holding nothing the engine reads stay where they were.
            for i in range(upto):
                if i not in represented and i not in emitted:
                    emitted.add(i)
                    result.append(given[i])

        for at, kept in groups:
            if at is None:
                result.append(kept[0])
                continue
            catch_up(at)
            original = given[at]
            first = at not in emitted
            emitted.add(at)
            if isinstance(original, ModelResponse):
                result.append(next(iter(kept.values())))
                continue
            parts: list[Any] = []
            for part in original.parts:
                current = origins.by_part.get(id(part))
                if current is None:
                    if first:
                        parts.append(part)  # a part the engine does not read
                elif id(current) in kept:
                    parts.append(kept[id(current)])
            if len(parts) == len(original.parts) and all(
                a is b for a, b in zip(parts, original.parts, strict=True)
            ):
                result.append(original)
            elif parts:
                result.append(dataclasses.replace(original, parts=parts))
        catch_up(len(given))
        return result

    def _back(self, source: object, msg: Message) -> object:
        """The pydantic-ai object for the engine's ``msg`` standing for ``source``: the same
        object when the engine changed nothing the model sees, else a copy."""
        entry = self._seen[id(source)]
        previous = entry.message
        entry.message = msg
        part: Any = source
        replaced: object = source
        if msg is previous:
            return source
        if isinstance(part, ModelResponse):
            replaced = _response_back(part, previous, msg)
        elif msg.content == previous.content:
            return source
        elif isinstance(part, ToolReturnPart):
            content: Any = [msg.content, *part.files] if part.files else msg.content
            replaced = dataclasses.replace(part, content=content)
        elif isinstance(part, RetryPromptPart | SystemPromptPart | UserPromptPart):
            replaced = dataclasses.replace(part, content=msg.content)
        if replaced is not source:
            entry.replacement = replaced
            self._seen[id(replaced)] = _Seen(replaced, msg)
        return replaced

    # Truncation ----------------------------------------------------------------------

    def wrap(self, toolset: AbstractToolset[Any]) -> ReducedToolset:
        """``toolset`` with every return value passed through the engine's truncation."""
        return ReducedToolset(toolset, reduction=self)

    def wrap_tools(self, tools: Iterable[Tool[Any] | Callable[..., Any]]) -> ReducedToolset:
        """Function tools (plain functions or ``Tool``), as one truncating toolset."""
        return self.wrap(FunctionToolset(list(tools)))

    async def truncate(self, value: Any, *, tool_name: str, call_id: str, arguments: str) -> Any:
        """``value`` as the model should get it: the value itself, or the engine's notice
        when its text is over the limit (the text is saved to the backend first)."""
        inner = value.return_value if isinstance(value, ToolReturn) else value
        if isinstance(inner, str):
            text = inner
        else:
            probe = ToolReturnPart(tool_name=tool_name, content=inner)
            if probe.files:
                return value  # media go to the model as they are
            text = probe.model_response_str()
        ctx = ToolContext(name=tool_name, call_id=call_id)
        output = await atruncate_output(self.middleware, text, ctx, arguments)
        if output == text:
            return value
        if isinstance(value, ToolReturn):
            return dataclasses.replace(value, return_value=output)
        return output

    # Reading back --------------------------------------------------------------------

    @property
    def read_file_tool(self) -> Tool[Any]:
        """The tool the engine's notices name (``read_file_tool_name``), reading the files
        it offloaded back from its backends, a page of numbered lines at a time."""

        async def read_file(path: str, offset: int = 0, limit: int = DEFAULT_READ_LIMIT) -> str:
            return await self.read_file(path, offset=offset, limit=limit)

        return Tool(
            read_file, name=self.config.read_file_tool_name, description=READ_FILE_DESCRIPTION
        )

    @property
    def read_file_toolset(self) -> FunctionToolset[Any]:
        """:attr:`read_file_tool` as a toolset."""
        return FunctionToolset([self.read_file_tool])

    async def read_file(
        self, path: str, *, offset: int = 0, limit: int = DEFAULT_READ_LIMIT
    ) -> str:
        """What the read tool answers (the engine's
        :func:`~reduction_app.engine.aanswer_read_file`): numbered lines of an offloaded
        file, with a last line saying where to read on when more follow, or a problem the
        model can read."""
        return await aanswer_read_file(self.config, path, offset=offset, limit=limit)


async def _clear_request(
    reduction: Reduction, ctx: RunContext[Any], request_context: ModelRequestContext
) -> ModelRequestContext:
    """The clear pass over the history a request is about to send, kept as the run's."""
    parameters = request_context.model_request_parameters
    tools = [
        ToolInfo(
            name=tool.name,
            description=tool.description or "",
            parameters=tool.parameters_json_schema,
        )
        for tool in (*parameters.function_tools, *parameters.output_tools)
    ]
    messages = await reduction.history_processor(list(request_context.messages), tools)
    request_context.messages = messages.copy()
    ctx.messages[:] = messages
    return request_context


@dataclass
class ReductionCapability(AbstractCapability[Any]):
    """The clear pass before every model request, as pydantic-ai's ``ProcessHistory``
    runs a history processor: the request gets the processed history and so does the
    run's history, so later steps go on from it."""

    reduction: Reduction

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        return await _clear_request(self.reduction, ctx, request_context)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a live Reduction: not written into an agent spec


@dataclass
class ReducedToolset(WrapperToolset[Any]):
    """A toolset whose return values go through the engine's truncation."""

    reduction: Reduction = field(kw_only=True)
    skip: frozenset[str] = field(default=frozenset(), kw_only=True)
    """Tools whose returns are passed on as they are."""

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        value = await super().call_tool(name, tool_args, ctx, tool)
        if name in self.skip:
            return value
        arguments = pydantic_core.to_json(tool_args, fallback=str).decode()
        return await self.reduction.truncate(
            value, tool_name=name, call_id=ctx.tool_call_id or "", arguments=arguments
        )


# Conversions -----------------------------------------------------------------------


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(item for item in content if isinstance(item, str))
    return ""


def _request_message(part: object) -> Message | None:
    """The engine message for a request part, or ``None`` for parts it does not read."""
    if isinstance(part, SystemPromptPart):
        return Message.system(part.content)
    if isinstance(part, UserPromptPart):
        return Message.user(_text_of(part.content))
    if isinstance(part, ToolReturnPart):
        return Message.tool(part.model_response_str(), part.tool_call_id, part.tool_name)
    if isinstance(part, RetryPromptPart):
        if part.tool_name is None:
            return Message.user(part.model_response())
        return Message.tool(part.model_response(), part.tool_call_id, part.tool_name)
    if isinstance(part, RetryFeedbackPart):
        return Message.user(part.model_response())
    return None


def _response_message(response: ModelResponse) -> Message:
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    thinking = "".join(p.content for p in response.parts if isinstance(p, ThinkingPart))
    calls = tuple(
        ToolCall(id=p.tool_call_id, name=p.tool_name, arguments=p.args_as_json_str())
        for p in response.parts
        if isinstance(p, ToolCallPart)
    )
    return Message(role="assistant", content=text, reasoning_content=thinking, tool_calls=calls)


def _response_back(response: ModelResponse, before: Message, after: Message) -> ModelResponse:
    """``response`` with the arguments a clear handler rewrote; itself when none was."""
    changed = {
        old.id: new.arguments
        for old, new in zip(before.tool_calls, after.tool_calls, strict=False)
        if old.id == new.id and old.arguments != new.arguments
    }
    if not changed:
        return response
    parts: list[ModelResponsePart] = [
        dataclasses.replace(p, args=changed[p.tool_call_id])
        if isinstance(p, ToolCallPart) and p.tool_call_id in changed
        else p
        for p in response.parts
    ]
    return dataclasses.replace(response, parts=parts)


def _new_message(msg: Message) -> ModelMessage:
    """A pydantic-ai message for one the engine added (a rewriter's, the manifest)."""
    if msg.role == "assistant":
        parts: list[ModelResponsePart] = [TextPart(msg.content)] if msg.content else []
        parts += [
            ToolCallPart(call.name, call.arguments, tool_call_id=call.id) for call in msg.tool_calls
        ]
        return ModelResponse(parts=parts)
    if msg.role == "system":
        return ModelRequest(parts=[SystemPromptPart(msg.content)])
    if msg.role == "tool":
        return ModelRequest(
            parts=[ToolReturnPart(msg.tool_name, msg.content, tool_call_id=msg.tool_call_id)]
        )
    return ModelRequest(parts=[UserPromptPart(msg.content)])
