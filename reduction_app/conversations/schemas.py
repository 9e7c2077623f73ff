"""Bodies of the conversations' operations."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Field, Schema

from reduction_app.conversations.selectors import conversation_transcript
from reduction_app.schemas import ConversationId, MessageFormat, ProgressOut, StrictIn, Text


class ConversationIn(StrictIn):
    conversation_id: ConversationId = Field(..., min_length=1, max_length=200)
    title: Text = Field("", max_length=300)
    format: MessageFormat = "openai_chat"
    messages: list[Any] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    system: str | list[dict[str, Any]] | None = Field(
        None, description="Anthropic only: the conversation's top-level system parameter."
    )


class ConversationOut(Schema):
    conversation_id: str
    title: str
    format: str
    message_count: int
    source: str = Field(
        description="The recording format it was imported from (`swe_agent`, "
        "`mini_swe_agent`, ...); empty for conversations recorded through the API."
    )
    imported_from: str = Field(description="The file it was imported from; empty if none.")
    omits: list[str] | None = Field(
        None,
        description="What the recording left out of what the model was sent (`the system "
        "prompt`, ...), as its format declares; null for a conversation recorded through the "
        "API, or imported before the app kept it.",
    )
    created_at: datetime
    updated_at: datetime

    @staticmethod
    def resolve_conversation_id(obj: Any) -> str:
        return str(obj.client_id)

    @staticmethod
    def resolve_format(obj: Any) -> str:
        return str(obj.message_format)


class ConversationDetailOut(ConversationOut):
    messages: list[Any]
    system: Any = None
    tools: list[Any]
    event_count: int
    file_count: int
    provider_usage: dict[str, Any] | None = Field(
        description="What the provider reported of an imported or traced run: per model "
        "call, keyed by the index of the message the call produced, `prompt_tokens`, "
        "`cached_prompt_tokens`, `completion_tokens` and `call_times` (Unix seconds), with "
        "the run's own `total_prompt_tokens`, `api_calls` and `cost` where it said; null "
        "for conversations a client recorded."
    )

    @staticmethod
    def resolve_messages(obj: Any) -> list[Any]:
        return conversation_transcript(conversation=obj)

    @staticmethod
    def resolve_event_count(obj: Any) -> int:
        return int(obj.events.count())

    @staticmethod
    def resolve_file_count(obj: Any) -> int:
        return int(obj.files.count())


class ImportedConversationOut(Schema):
    conversation_id: str
    title: str = Field(
        description="The task, the agent and the model, as far as the recording names them."
    )
    message_count: int
    omits: list[str] = Field(
        default_factory=list,
        description="What the recording left out of what the model was sent (`the system "
        "prompt`, `the tool schemas`, ...), as its format declares; empty when nothing.",
    )
    omitted_tokens: int | None = Field(
        None,
        description="About how many tokens a request that was, by the provider's counts of "
        "the first calls less the engine's count of what the recording holds; null where the "
        "recording kept no per-call counts, or left out nothing.",
    )


class ImportedFileOut(Schema):
    filename: str
    format: str = Field(..., description="The recording format the file was read as.")
    conversations: list[ImportedConversationOut]


class RecordingImportOut(Schema):
    id: int
    status: str = Field(..., description="queued, running, done or failed.")
    format: str = Field(..., description="The format asked for; empty: detected per file.")
    replace: bool
    progress: ProgressOut = Field(..., description="Files read of all.")
    files: list[ImportedFileOut] | None = Field(
        None, description="Once done: per file, the conversations imported."
    )
    error: str = Field(..., description="Once failed: why; nothing was imported.")
    created_at: datetime
    finished_at: datetime | None = None

    @staticmethod
    def resolve_progress(obj: Any) -> dict[str, int]:
        return {"done": obj.progress_done, "total": obj.progress_total}

    @staticmethod
    def resolve_files(obj: Any) -> list[Any] | None:
        return obj.result  # type: ignore[no-any-return]
