"""The engine in the OpenAI Agents SDK: truncation where a function tool returns, clearing
before each model call, and the ``read_file`` tool the notices point to.

::

    reduction = Reduction(ReductionConfig(max_tokens_for_clear=60_000), backend=backend)
    agent = Agent(name="coder", tools=[*reduction.wrap_tools(tools), reduction.read_file_tool])
    result = await Runner.run(agent, task, run_config=reduction.run_config())

Clearing runs in ``RunConfig.call_model_input_filter``: the Responses input items the SDK
is about to send are parsed with the engine's Responses wire format, cleared, and dumped
back; an item the pass left alone goes out as the very dict sent for it before (the SDK's
own, the first time), so the prompt prefix stays byte for byte what it was until a pass
clears something.

**The reduced history carries on.** The SDK does not keep what the filter returns: every
turn it rebuilds the input from the run's original input and the items generated since,
and ``result.to_input_list()`` gives the unreduced history too. A :class:`Reduction`
therefore remembers the last input it was given and what it sent for it: when the next
input begins with that same input (the SDK appended the model's reply and the tool
outputs, or a new ``Runner.run`` continues from ``to_input_list()``), the new items are
appended to what was sent, and the clear pass runs over that. The model thus sees the
conversation the engine left, exactly as if it had been kept, and each clear pass decides
from the reduced history (as Eino's agent, which persists the state the pass returns).
The engine's own messages are kept too, so the markers a clear pass leaves (which no wire
format carries) hold from one call to the next. An input that does not continue the last
one (another conversation, or a handoff filter that rewrote the history) starts afresh.
So one :class:`Reduction` serves one conversation at a time; give concurrent runs one
each. With a conversation kept on OpenAI's servers (``previous_response_id``,
``conversation_id``) the SDK sends only the new items, so only those can be reduced.

This module owns the translation only: every rule (what is cut or cleared, where it is
saved, the notices and events) is the engine's. It imports the SDK and the engine's
public surface, never Django.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from agents import Agent, FunctionTool, RunConfig, ToolOutputText
from agents.run_config import CallModelData, ModelInputData
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
    new,
    numbered_lines,
)
from reduction_app.engine.formats import messages_from_responses, messages_to_responses

__all__ = ["Reduction"]


Item = Any
"""A Responses input item as the SDK holds it (a dict)."""


async def _resolved(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class Reduction:
    """The engine for one conversation run by the OpenAI Agents SDK.

    ``backend``, when given, replaces ``config.backend``. Every event the engine emits is
    appended to :attr:`events` and passed on to ``config.on_event``, if set.
    """

    def __init__(self, config: ReductionConfig, *, backend: Backend | None = None) -> None:
        self.events: list[ReductionEvent] = []
        user_on_event = config.on_event

        def on_event(event: ReductionEvent) -> Any:
            self.events.append(event)
            return None if user_on_event is None else user_on_event(event)

        changes: dict[str, Any] = {"on_event": on_event}
        if backend is not None:
            changes["backend"] = backend
        self.middleware: ReductionMiddleware = new(dataclasses.replace(config, **changes))
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
        """The clear pass over the input about to be sent, continuing the reduced history."""
        given = list(data.model_data.input)
        instructions = data.model_data.instructions
        n = len(self._given)
        if n and len(given) >= n and given[:n] == self._given:
            added = given[n:]
            items = [*self._sent, *added]
            history = [*self._messages, *messages_from_responses(added)]
        else:
            items, history = given, messages_from_responses(given)
        # The instructions count towards the context as a leading system message, which no
        # clear pass changes; it is not sent back.
        system = (
            messages_from_responses([{"role": "system", "content": instructions}])
            if instructions
            else []
        )
        state = ChatModelAgentState(
            messages=[*system, *history], tool_infos=_tool_infos(data.agent)
        )
        new_state = await self.middleware.abefore_model_rewrite_state(state)
        if new_state is not state:
            # A pass over agentic messages returns agentic messages.
            history = cast(list[AgenticMessage], list(new_state.messages[len(system) :]))
            items = _reuse_unchanged(messages_to_responses(history), items)
        self._given, self._sent, self._messages = copy.deepcopy(given), items, history
        return ModelInputData(input=list(items), instructions=instructions)

    # Truncation ---------------------------------------------------------------------

    def wrap_tools(self, tools: Iterable[Any]) -> list[Any]:
        """Each function tool wrapped with :meth:`wrap_tool`; other tools as they are."""
        return [self.wrap_tool(t) if isinstance(t, FunctionTool) else t for t in tools]

    def wrap_tool(self, tool: FunctionTool) -> FunctionTool:
        """A copy of ``tool`` whose output goes through the engine's truncation.

        Text outputs are truncated: a ``str`` or a ``ToolOutputText``. Other outputs (images,
        files, lists of parts, objects the SDK turns into text) pass through unchanged.
        """
        original = tool.on_invoke_tool
        name = tool.name

        async def on_invoke_tool(ctx: AgentsToolContext[Any], arguments: str) -> Any:
            output = await original(ctx, arguments)
            text = output.text if isinstance(output, ToolOutputText) else output
            if not isinstance(text, str):
                return output
            wrapped = self.middleware.awrap_invokable_tool_call(
                lambda _arguments: text, ToolContext(name=name, call_id=ctx.tool_call_id)
            )
            reduced = await wrapped(arguments)
            if reduced is text:
                return output
            return ToolOutputText(text=reduced) if isinstance(output, ToolOutputText) else reduced

        wrapped_tool = copy.copy(tool)
        wrapped_tool.on_invoke_tool = on_invoke_tool
        return wrapped_tool

    # read_file ----------------------------------------------------------------------

    @property
    def read_file_tool(self) -> FunctionTool:
        """The tool the notices tell the model to call (``config.read_file_tool_name``):
        numbered lines of an offloaded file, read from the backend."""
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
        """Problems are answered to the model, as the REST API answers them, so it can
        correct its call; the run goes on."""
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
        if not (_is_int(offset) and offset >= 0 and _is_int(limit) and limit >= 1):
            return "invalid arguments: offset must be an integer >= 0 and limit >= 1"
        for backend in self._backends():
            try:
                content = await _resolved(backend.read(path))
            except FileNotFoundError:
                continue
            return numbered_lines(content, offset, limit)[0]
        return f"file not found: {path}"

    def _backends(self) -> list[Any]:
        """Every backend offloads may be in: the global one, then each tool's own."""
        config = self.config
        found: list[Any] = []
        for backend in [config.backend, *(t.backend for t in config.tool_config.values())]:
            if backend is not None and hasattr(backend, "read") and backend not in found:
                found.append(backend)
        return found


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _tool_infos(agent: Agent[Any]) -> list[ToolInfo]:
    """The agent's function tools, which the engine counts with the messages."""
    return [
        ToolInfo(name=t.name, description=t.description, parameters=t.params_json_schema)
        for t in agent.tools
        if isinstance(t, FunctionTool)
    ]


def _reuse_unchanged(dumped: Sequence[Mapping[str, Any]], items: Sequence[Item]) -> list[Item]:
    """``dumped``, with every item equal to one of ``items`` (in order) replaced by that
    very item, so what the pass did not change is sent exactly as it was."""
    out: list[Item] = []
    j = 0
    for item in dumped:
        k = j
        while k < len(items) and items[k] != item:
            k += 1
        if k < len(items):
            out.append(items[k])
            j = k + 1
        else:
            out.append(item)
    return out
