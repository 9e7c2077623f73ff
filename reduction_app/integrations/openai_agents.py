"""The engine in the OpenAI Agents SDK: truncation, clearing, and the ``read_file`` tool.

:meth:`Reduction.wrap_agent` covers every tool the agent gets (``Agent.get_all_tools``)
and adds ``read_file``; :meth:`Reduction.run_config` clears in the SDK's
``call_model_input_filter``, carrying the reduced history from one call to the next
(docs/integrations.md, "OpenAI Agents SDK"). Every rule is the engine's; this module
translates, importing the SDK and the engine's public surface, never Django.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from agents import Agent, FunctionTool, RunConfig, RunContextWrapper, Tool, ToolOutputText
from agents import tool as sdk_tool
from agents.run_config import CallModelData, ModelInputData
from agents.tool import with_function_tool_failure_error_handler
from agents.tool_context import ToolContext as AgentsToolContext

from reduction_app.engine import (
    DEFAULT_READ_LIMIT,
    READ_FILE_DESCRIPTION,
    READ_FILE_PARAMETERS,
    AgenticMessage,
    Backend,
    ChatModelAgentState,
    ReductionConfig,
    ReductionEvent,
    ReductionMiddleware,
    ToolContext,
    ToolInfo,
    ToolOutputPart,
    ToolResult,
    aanswer_read_file,
    atruncate_output,
    new,
)
from reduction_app.engine.formats import messages_from_responses, messages_to_responses
from reduction_app.integrations import adapter_config

__all__ = ["ReducedAgent", "Reduction"]


Item = Any
"""A Responses input item as the SDK holds it (a dict)."""

# Where the SDK finds the function behind a FunctionTool's ``__wrapped__`` (on the
# invoker's implementation) and how it prepares arguments; a wrapped tool carries both
# over from the original, so ``tool.__wrapped__`` still gives the function.
_WRAPPED_CALLABLE = getattr(
    sdk_tool, "_FUNCTION_TOOL_WRAPPED_CALLABLE_MARKER", "__agents_function_tool_wrapped_callable__"
)
_PREPARE_ARGUMENTS = "__agents_prepare_arguments__"
_ITEM_INDEX = "reduction_openai_agents_item"
# Fields the SDK keeps on input items for its own models, left out of what the engine
# reads and put back with the unchanged items themselves (``_reuse_unchanged``).
_SDK_FIELDS = frozenset({"provider_data"})
"""Key of the ``extra`` of a part standing for a list item the engine has no part for."""


class Reduction:
    """The engine for one conversation run by the OpenAI Agents SDK.

    ``config`` is the engine's :class:`~reduction_app.engine.ReductionConfig` (the
    defaults when ``None``); ``backend``, when given, replaces its ``backend``;
    ``on_event`` is called with every event after the config's own ``on_event``. Every
    event is also appended to :attr:`events`, and added to the current OpenTelemetry span
    (labelled with ``config_name`` and ``conversation_id`` when given).
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

        def record(event: ReductionEvent) -> Any:
            self.events.append(event)
            for listener in listeners:
                listener(event)

        self.middleware: ReductionMiddleware = new(dataclasses.replace(base, on_event=record))
        self.middleware.set_telemetry(config_name=config_name, conversation_id=conversation_id)
        # The tools the agent got last (wrap_agent), counted with the messages.
        self._tools: list[Tool] | None = None
        # The last input the SDK gave (copied, to compare the next one with), the items
        # sent to the model for it, and the engine's messages for them (which keep the
        # clear pass's markers, that no wire format carries).
        self._given: list[Item] = []
        self._sent: list[Item] = []
        self._messages: list[AgenticMessage] = []
        self._read_file_tool: FunctionTool | None = None

    @property
    def config(self) -> ReductionConfig:
        """The config in force, with defaults filled in."""
        return self.middleware.config

    # Clear --------------------------------------------------------------------------

    def run_config(self, **kwargs: Any) -> RunConfig:
        """A ``RunConfig`` with :meth:`call_model_input_filter` set (and ``kwargs``)."""
        return RunConfig(call_model_input_filter=self.call_model_input_filter, **kwargs)

    async def call_model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """The clear pass over the input about to be sent, continuing the reduced history.

        The SDK does not keep what this filter returns: every turn it rebuilds the input
        from the run's original input and the items generated since. So the last input
        given and what was sent for it are remembered: when the next input begins with
        that same input (the SDK appended the model's reply and the tool outputs, or a new
        ``Runner.run`` continues from ``to_input_list()``), the new items are appended to
        what was sent and the pass runs over that, deciding from the reduced history as
        Eino's agent does. The engine's own messages are kept too, so the markers a pass
        leaves (which no wire format carries) hold from one call to the next.
        """
        given = list(data.model_data.input)
        instructions = data.model_data.instructions
        n = len(self._given)
        if n and len(given) >= n and given[:n] == self._given:
            added = given[n:]
            items = [*self._sent, *added]
            history = [*self._messages, *messages_from_responses(_wire(added))]
        else:
            items, history = given, messages_from_responses(_wire(given))
        # The instructions count towards the context as a leading system message, which no
        # clear pass changes; it is not sent back.
        system = (
            messages_from_responses([{"role": "system", "content": instructions}])
            if instructions
            else []
        )
        tools = self._tools if isinstance(data.agent, ReducedAgent) else None
        state = ChatModelAgentState(
            messages=[*system, *history],
            tool_infos=_tool_infos(data.agent.tools if tools is None else tools),
        )
        new_state = await self.middleware.abefore_model_rewrite_state(state)
        if new_state is not state:
            # A pass over agentic messages returns agentic messages.
            history = cast(list[AgenticMessage], list(new_state.messages[len(system) :]))
            items = _reuse_unchanged(messages_to_responses(history), items)
        self._given, self._sent, self._messages = copy.deepcopy(given), items, history
        return ModelInputData(input=list(items), instructions=instructions)

    # Truncation ---------------------------------------------------------------------

    def wrap_agent(self, agent: Agent[Any]) -> ReducedAgent:
        """A copy of ``agent`` whose every function tool, its MCP servers' included, is
        wrapped with :meth:`wrap_tool` each time the SDK asks the agent for its tools, and
        which offers :attr:`read_file_tool` besides."""
        if type(agent) is not Agent:
            raise TypeError(
                f"wrap_agent takes an Agent, not a {type(agent).__name__}: "
                "give that agent wrap_tools(...) and read_file_tool instead"
            )
        values = {f.name: getattr(agent, f.name) for f in dataclasses.fields(agent) if f.init}
        return ReducedAgent(**values, reduction=self)

    def wrap_tools(self, tools: Iterable[Any]) -> list[Any]:
        """Each function tool wrapped with :meth:`wrap_tool`; other tools as they are."""
        return [self.wrap_tool(t) if isinstance(t, FunctionTool) else t for t in tools]

    def wrap_tool(self, tool: FunctionTool) -> FunctionTool:
        """A copy of ``tool`` whose output goes through the engine's truncation (the tool
        itself when it already does); ``__wrapped__`` is the original's.

        Text is truncated: a ``str``, a ``ToolOutputText``, a text item (``{"type":
        "text", ...}``, as MCP tools return), or the text items of a list. Images, files
        and objects the SDK turns into text pass through unchanged.
        """
        if getattr(tool, "_reduction", None) is self:
            return tool
        original = tool.on_invoke_tool
        name = tool.name

        async def invoke(ctx: AgentsToolContext[Any], arguments: str) -> Any:
            output = await original(ctx, arguments)
            return await self._truncated(
                output, ToolContext(name=name, call_id=ctx.tool_call_id), arguments
            )

        # A tool not made by function_tool (an MCP tool, one built by hand) has none.
        with contextlib.suppress(AttributeError):
            setattr(invoke, _WRAPPED_CALLABLE, tool.__wrapped__)
        prepare = getattr(original, "prepare_arguments", None)
        if prepare is not None:
            setattr(invoke, _PREPARE_ARGUMENTS, prepare)
        wrapped = copy.copy(tool)
        invoker: Any = with_function_tool_failure_error_handler(invoke, _errors_handled_inside)
        bind = getattr(invoker, "__agents_bind_function_tool__", None)
        wrapped.on_invoke_tool = invoker if bind is None else bind(wrapped)
        wrapped._reduction = self  # type: ignore[attr-defined]
        return wrapped

    async def _truncated(self, output: Any, ctx: ToolContext, arguments: str) -> Any:
        """``output`` as the model should get it, in the shape the tool gave it."""
        if isinstance(output, str):
            return await atruncate_output(self.middleware, output, ctx, arguments)
        text = _text_of_item(output)
        if text is not None:
            reduced = await atruncate_output(self.middleware, text, ctx, arguments)
            return output if reduced is text else _text_item_like(output, reduced)
        if not isinstance(output, list) or not any(_text_of_item(i) is not None for i in output):
            return output
        parts = tuple(
            ToolOutputPart.of_text(t)
            if (t := _text_of_item(item)) is not None
            else ToolOutputPart(extra={_ITEM_INDEX: i})
            for i, item in enumerate(output)
        )
        given = ToolResult(parts=parts)
        out = await atruncate_output(self.middleware, given, ctx, arguments)
        if out is given:
            return output
        items: list[Any] = []
        for i, part in enumerate(out.parts):
            if _ITEM_INDEX in part.extra:
                items.append(output[part.extra[_ITEM_INDEX]])
            elif i < len(parts) and part is parts[i]:
                items.append(output[i])
            else:
                items.append({"type": "text", "text": part.text})
        return items

    # read_file ----------------------------------------------------------------------

    @property
    def read_file_tool(self) -> FunctionTool:
        """The tool the notices tell the model to call (``config.read_file_tool_name``):
        numbered lines of an offloaded file, read from the backends."""
        if self._read_file_tool is None:
            self._read_file_tool = FunctionTool(
                name=self.config.read_file_tool_name,
                description=READ_FILE_DESCRIPTION,
                params_json_schema=copy.deepcopy(READ_FILE_PARAMETERS),
                on_invoke_tool=self._read_file,
                # offset and limit are optional, which strict schemas cannot say.
                strict_json_schema=False,
            )
        return self._read_file_tool

    async def _read_file(self, ctx: AgentsToolContext[Any], arguments: str) -> str:
        """The engine's answer (:func:`~reduction_app.engine.aanswer_read_file`); problems
        are answered to the model so it can correct its call, and the run goes on."""
        try:
            args = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"invalid arguments: {exc}"
        if not isinstance(args, dict):
            return "invalid arguments: expected a JSON object"
        path, offset = args.get("path"), args.get("offset", 0)
        limit = args.get("limit", DEFAULT_READ_LIMIT)
        if not isinstance(path, str) or not path:
            return "invalid arguments: path must be a non-empty string"
        return await aanswer_read_file(self.config, path, offset=offset, limit=limit)

    async def _agent_tools(self, tools: list[Tool]) -> list[Tool]:
        """What a :class:`ReducedAgent` offers: its tools wrapped, and ``read_file``."""
        covered: list[Tool] = self.wrap_tools(tools)
        if all(getattr(t, "name", None) != self.config.read_file_tool_name for t in covered):
            covered.append(self.read_file_tool)
        self._tools = covered
        return covered


@dataclass
class ReducedAgent(Agent[Any]):
    """An agent whose tools go through a :class:`Reduction` (made by
    :meth:`Reduction.wrap_agent`); the SDK's own clones of it keep that."""

    reduction: Reduction | None = field(default=None, kw_only=True, repr=False)

    async def get_all_tools(self, run_context: RunContextWrapper[Any]) -> list[Tool]:
        tools = await super().get_all_tools(run_context)
        if self.reduction is None:
            return tools
        return await self.reduction._agent_tools(tools)


def _errors_handled_inside(tool: FunctionTool, error: Exception, arguments: str) -> None:
    """The original tool's own invoker handles (and reports) its errors already."""


def _text_of_item(item: Any) -> str | None:
    """The text of a ``ToolOutputText`` or a text item dict; ``None`` for anything else."""
    if isinstance(item, ToolOutputText):
        return item.text
    if (
        isinstance(item, Mapping)
        and item.get("type") == "text"
        and isinstance(item.get("text"), str)
    ):
        return str(item["text"])
    return None


def _text_item_like(item: Any, text: str) -> Any:
    if isinstance(item, ToolOutputText):
        return ToolOutputText(text=text)
    return {**item, "text": text}


def _tool_infos(tools: Iterable[Tool]) -> list[ToolInfo]:
    """The function tools among ``tools``, which the engine counts with the messages."""
    return [
        ToolInfo(name=t.name, description=t.description, parameters=t.params_json_schema)
        for t in tools
        if isinstance(t, FunctionTool)
    ]


def _wire(items: Sequence[Item]) -> list[Item]:
    """``items`` without the fields the SDK adds for itself and sends to no API (the
    chat-completions model's ``provider_data``), as the Responses format reads them."""
    return [
        {k: v for k, v in item.items() if k not in _SDK_FIELDS}
        if isinstance(item, Mapping) and not _SDK_FIELDS.isdisjoint(item)
        else item
        for item in items
    ]


def _reuse_unchanged(dumped: Sequence[Mapping[str, Any]], items: Sequence[Item]) -> list[Item]:
    """``dumped``, with every item equal to one of ``items`` (in order) replaced by that
    very item, so what the pass did not change is sent exactly as it was."""
    out: list[Item] = []
    j = 0
    for item in dumped:
        k = j
        while k < len(items) and _wire([items[k]])[0] != item:
            k += 1
        if k < len(items):
            out.append(items[k])
            j = k + 1
        else:
            out.append(item)
    return out
