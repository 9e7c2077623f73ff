"""Reduction Lab's engine: a Python port of the Eino ADK ``reduction`` middleware.

Pure Python; importing it never loads Django. Build a middleware with
:func:`new`, wrap tool calls with its ``wrap_*`` methods (truncation) and call
:meth:`~ReductionMiddleware.before_model_rewrite_state` before every model call
(clear). See docs/engine.md for every config field, and docs/behaviour.md for what the
engine promises and its deliberate differences from the reference.

This module is the surface for reducing conversations. Read-only helpers (classify a
message, read a tool result, recognise a notice, restore offloads, count the way the
counters do) live in :mod:`reduction_app.engine.inspect`, and the wire formats in
:mod:`reduction_app.engine.formats`; every other engine module is private to the engine.
"""

from __future__ import annotations

from reduction_app.engine._clear._phase import ChatModelAgentState
from reduction_app.engine._handlers._defaults import default_clear_handler, default_trunc_handler
from reduction_app.engine._handlers._digests import Digester, default_digest
from reduction_app.engine._storage._backends import (
    Backend,
    InMemoryBackend,
    LocalFileBackend,
    WriteRequest,
)
from reduction_app.engine._tokens._counters import (
    TOKEN_COUNTER_NAMES,
    ApproxTokenCounter,
    TiktokenCounter,
    TokenCounter,
    get_token_counter,
)
from reduction_app.engine.access import PROCESSED_FLAG
from reduction_app.engine.blocks import (
    AgenticMessage,
    AssistantGenText,
    ContentBlock,
    FunctionToolCall,
    FunctionToolResult,
    RawBlock,
    Reasoning,
    ToolResultContent,
    ToolSearchResult,
    UserInputAudio,
    UserInputFile,
    UserInputImage,
    UserInputText,
    UserInputVideo,
)
from reduction_app.engine.commands import COMMAND_KINDS, command_kind, shell_command
from reduction_app.engine.config import (
    DEFAULT_MAX_LENGTH_FOR_TRUNC,
    DEFAULT_MAX_TOKENS_FOR_CLEAR,
    JSON_FIELDS,
    ReductionConfig,
    ToolReductionConfig,
    check_config,
    config_field_defaults,
    config_from_dict,
    config_to_dict,
    validate,
)
from reduction_app.engine.config_spec import (
    CONFIG_FIELDS,
    MAX_CONFIG_INT,
    MIN_CONFIG_INT,
    ConfigField,
    ConfigKnob,
    config_field,
    config_fields,
    config_knobs,
    config_switches,
    json_config_fields,
)
from reduction_app.engine.errors import (
    ConfigError,
    FormatError,
    MessageError,
    NoBackendError,
    OffloadError,
    PairingError,
    PathEscapeError,
    ReductionError,
    TokenizerUnavailable,
)
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.formats import (
    FORMAT_NAMES,
    FORMATS,
    WireFormat,
    get_format,
    messages_from_anthropic,
    messages_from_openai,
    messages_from_responses,
    messages_to_anthropic,
    messages_to_openai,
    messages_to_responses,
)
from reduction_app.engine.legacy import (
    ClearToolResultConfig,
    ToolResultConfig,
    new_clear_tool_result,
    new_tool_result_middleware,
)
from reduction_app.engine.messages import Media, Message, MessagePart, ToolCall, ToolInfo
from reduction_app.engine.middleware import ReductionMiddleware, new
from reduction_app.engine.notices import get_language, set_language
from reduction_app.engine.parts import stringify
from reduction_app.engine.read_tool import (
    DEFAULT_READ_LIMIT,
    READ_FILE_DESCRIPTION,
    READ_FILE_PARAMETERS,
    ReadPage,
    aanswer_read_file,
    answer_read_file,
    numbered_lines,
    read_file_backends,
    read_file_tool,
    read_page,
)
from reduction_app.engine.tool_io import (
    ClearResult,
    ToolArgument,
    ToolContext,
    ToolDetail,
    ToolOutputPart,
    ToolResult,
    TruncResult,
)
from reduction_app.engine.tool_output import atruncate_output, truncate_output

__all__ = [
    "COMMAND_KINDS",
    "CONFIG_FIELDS",
    "DEFAULT_MAX_LENGTH_FOR_TRUNC",
    "DEFAULT_MAX_TOKENS_FOR_CLEAR",
    "DEFAULT_READ_LIMIT",
    "FORMATS",
    "FORMAT_NAMES",
    "JSON_FIELDS",
    "MAX_CONFIG_INT",
    "MIN_CONFIG_INT",
    "PROCESSED_FLAG",
    "READ_FILE_DESCRIPTION",
    "READ_FILE_PARAMETERS",
    "TOKEN_COUNTER_NAMES",
    "AgenticMessage",
    "ApproxTokenCounter",
    "AssistantGenText",
    "Backend",
    "ChatModelAgentState",
    "ClearResult",
    "ClearToolResultConfig",
    "ConfigError",
    "ConfigField",
    "ConfigKnob",
    "ContentBlock",
    "Digester",
    "FormatError",
    "FunctionToolCall",
    "FunctionToolResult",
    "InMemoryBackend",
    "LocalFileBackend",
    "Media",
    "Message",
    "MessageError",
    "MessagePart",
    "NoBackendError",
    "OffloadError",
    "PairingError",
    "PathEscapeError",
    "RawBlock",
    "ReadPage",
    "Reasoning",
    "ReductionConfig",
    "ReductionError",
    "ReductionEvent",
    "ReductionMiddleware",
    "TiktokenCounter",
    "TokenCounter",
    "TokenizerUnavailable",
    "ToolArgument",
    "ToolCall",
    "ToolContext",
    "ToolDetail",
    "ToolInfo",
    "ToolOutputPart",
    "ToolReductionConfig",
    "ToolResult",
    "ToolResultConfig",
    "ToolResultContent",
    "ToolSearchResult",
    "TruncResult",
    "UserInputAudio",
    "UserInputFile",
    "UserInputImage",
    "UserInputText",
    "UserInputVideo",
    "WireFormat",
    "WriteRequest",
    "aanswer_read_file",
    "answer_read_file",
    "atruncate_output",
    "check_config",
    "command_kind",
    "config_field",
    "config_field_defaults",
    "config_fields",
    "config_from_dict",
    "config_knobs",
    "config_switches",
    "config_to_dict",
    "default_clear_handler",
    "default_digest",
    "default_trunc_handler",
    "get_format",
    "get_language",
    "get_token_counter",
    "json_config_fields",
    "messages_from_anthropic",
    "messages_from_openai",
    "messages_from_responses",
    "messages_to_anthropic",
    "messages_to_openai",
    "messages_to_responses",
    "new",
    "new_clear_tool_result",
    "new_tool_result_middleware",
    "numbered_lines",
    "read_file_backends",
    "read_file_tool",
    "read_page",
    "set_language",
    "shell_command",
    "stringify",
    "truncate_output",
    "validate",
]
