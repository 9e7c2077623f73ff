"""Reads of recorded conversations, scoped to one workspace (another workspace's
conversation is simply not found). Lists never load transcripts."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from reduction_app.engine import formats
from reduction_app.engine.inspect import offload_paths, restore_results
from reduction_app.models import (
    ContextRevision,
    Conversation,
    EventRecord,
    OffloadedFile,
    RecordingImport,
    TranscriptMessage,
    Workspace,
)
from reduction_app.paging import digits
from reduction_app.records.money import sent_and_saved_per_conversation
from reduction_app.records.selectors import SAVING_KINDS
from reduction_app.records.storage import read_offloads
from simulator.importers import RecordedConversation, conversation_from_json
from simulator.prefix import OMITS_PREFIX
from simulator.recording import ProviderUsage


def conversation_get(*, workspace: Workspace, client_id: str) -> Conversation | None:
    return Conversation.objects.filter(workspace=workspace, client_id=client_id).first()


def context_get(*, workspace: Workspace, client_id: str) -> ContextRevision | None:
    """The latest revision of the client's context of the conversation, with the
    conversation (its provider figures left unloaded); ``None`` when no ``/clear``
    answered it yet."""
    rows = ContextRevision.objects.select_related("conversation").defer(
        "conversation__provider_usage"
    )
    rows = rows.filter(conversation__workspace=workspace, conversation__client_id=client_id)
    return rows.order_by("-revision").first()


def context_revisions_after(*, revision: ContextRevision, since: int) -> list[ContextRevision]:
    """The conversation's revisions after ``since`` up to ``revision``, in order; fewer
    than those numbers when the older ones are gone."""
    rows = ContextRevision.objects.filter(
        conversation_id=revision.conversation_id,
        revision__gt=since,
        revision__lt=revision.revision,
    )
    return [*rows.order_by("revision"), revision]


def context_messages(*, context: ContextRevision) -> list[Any]:
    """The client's context at ``context`` (the latest revision): the stored transcript up
    to its ``from_index``, then its tail (wire messages)."""
    rows = TranscriptMessage.objects.filter(
        conversation_id=context.conversation_id, position__lt=context.from_index
    ).order_by("position")
    kept = [json.loads(data) for data in rows.values_list("data", flat=True)]
    return [*kept, *json.loads(context.tail)]


def recording_import_get(*, workspace: Workspace, import_id: int) -> RecordingImport | None:
    """An import of recordings in ``workspace`` (another workspace's is not found)."""
    return RecordingImport.objects.filter(workspace=workspace, pk=import_id).first()


def recording_import_list(*, workspace: Workspace) -> QuerySet[RecordingImport]:
    """The workspace's imports, newest first."""
    return RecordingImport.objects.filter(workspace=workspace)


def conversation_transcript(*, conversation: Conversation) -> list[Any]:
    """The transcript as the client last sent it (its messages in its wire format)."""
    rows = (
        TranscriptMessage.objects.filter(conversation=conversation)
        .order_by("position")
        .values_list("data", flat=True)
    )
    return [json.loads(data) for data in rows]


def conversation_list(*, workspace: Workspace, search: str = "") -> QuerySet[Conversation]:
    qs = Conversation.objects.filter(workspace=workspace)
    if search:
        qs = qs.filter(client_id__icontains=search) | qs.filter(title__icontains=search)
    return qs.order_by("-id")


def conversation_counts(*, conversation: Conversation) -> tuple[int, int]:
    counts = Conversation.objects.filter(pk=conversation.pk).aggregate(
        events=Count("events", distinct=True), files=Count("files", distinct=True)
    )
    return counts["events"], counts["files"]


def conversation_list_counted(
    *, workspace: Workspace, search: str = "", message_format: str = ""
) -> QuerySet[Conversation]:
    """Conversations with per-row counts (events, tokens saved, files) and their recorded
    model calls' figures (``records.money``: ``call_count``, ``sent_tokens``,
    ``saved_tokens``) as subqueries, so a page of them is one query; the tools and system
    are left out."""
    qs = conversation_list(workspace=workspace, search=search)
    if message_format:
        qs = qs.filter(message_format=message_format)

    def scalar(model: Any, value: Any) -> Subquery:
        rows = model.objects.filter(conversation=OuterRef("pk")).order_by().values("conversation")
        return Subquery(rows.annotate(v=value).values("v")[:1])

    return qs.defer("system", "tools", "provider_usage").annotate(
        event_count=Coalesce(scalar(EventRecord, Count("id")), 0),
        tokens_saved=Coalesce(
            Subquery(
                EventRecord.objects.filter(conversation=OuterRef("pk"), kind__in=SAVING_KINDS)
                .order_by()
                .values("conversation")
                .annotate(v=Sum("tokens_saved"))
                .values("v")[:1]
            ),
            0,
        ),
        file_count=Coalesce(scalar(OffloadedFile, Count("id")), 0),
        **sent_and_saved_per_conversation(),
    )


def conversation_clear_series(*, conversation: Conversation) -> list[dict[str, Any]]:
    """The conversation's truncations and clear summaries in the order they happened (by
    id), the fields a context-window chart needs and nothing else."""
    rows = (
        EventRecord.objects.filter(conversation=conversation)
        .filter(Q(kind="summary") | Q(phase="truncation"))
        .order_by("id")
        .values(
            "id",
            "phase",
            "kind",
            "tokens_before",
            "tokens_after",
            "threshold",
            "reason",
            "calls_cleared",
            "tool_name",
            "offload_path",
        )
    )
    return [dict(row) for row in rows]


CONVERSATION_CHOICES_LIMIT = 200
"""The most recent conversations offered in a page's select (the chosen one is added)."""


def conversation_choices(
    *, workspace: Workspace, chosen: Conversation | None = None
) -> list[Conversation]:
    """The latest conversations for a select, without their transcripts."""
    rows = list(
        Conversation.objects.filter(workspace=workspace)
        .only("id", "client_id", "title", "message_count")
        .order_by("-updated_at", "-id")[:CONVERSATION_CHOICES_LIMIT]
    )
    if chosen is not None and all(c.pk != chosen.pk for c in rows):
        rows.append(chosen)
    return rows


def conversation_for(*, workspace: Workspace, value: str | None) -> Conversation | None:
    """The workspace's conversation whose id is ``value`` (a number), or ``None``."""
    if not digits(value):
        return None
    return Conversation.objects.filter(workspace=workspace, pk=int(value)).first()


def provider_usage(conversation: Conversation) -> ProviderUsage | None:
    """What the provider reported of an imported recording's run; ``None`` for one
    imported before the app kept it, one whose recording kept none, and a conversation
    a client recorded."""
    stored = conversation.provider_usage
    if not stored:
        return None
    return ProviderUsage.from_json(stored)


INLINE_LIMIT = 2_000
"""Replays of up to this many (message × config) steps answer inline."""


def fits_inline(conversation: Conversation, *, configs: int) -> bool:
    """Whether replaying ``conversation`` under ``configs`` configs may run inside a
    request (every page and operation asks this, so the rule is written once here);
    bigger replays go to the task worker, or are not offered where nothing waits."""
    return conversation.message_count * configs <= INLINE_LIMIT


def infers_prefix(conversation: Conversation) -> bool:
    """Whether replays of ``conversation`` infer a prefix: a recording of a kind that
    leaves one out, imported with the provider's per-call counts (not one imported before
    the app kept them, nor one a client recorded). It needs no read of the transcript.

    The imported counts (``Conversation.provider_usage``) are those the simulator's
    command line reads from the same file, so both infer the same prefix.
    """
    usage: Mapping[str, Any] | None = conversation.provider_usage
    return conversation.source in OMITS_PREFIX and bool(usage and usage.get("prompt_tokens"))


def recorded_conversation(
    conversation: Conversation, *, restore: bool = True
) -> RecordedConversation:
    """The stored transcript, parsed by the engine's formats. With ``restore`` every
    result the engine reduced is put back from its offload file: what the agent really
    lived, ready to replay (a client sends its context already reduced after the first
    clear). Without it, the transcript as received."""
    fmt = conversation.message_format
    # A format outside the registry (a row the model's choices would refuse) is named
    # and refused by the importer.
    wire = formats.FORMATS.get(fmt)
    data: dict[str, Any] = {
        wire.messages_key if wire else "messages": conversation_transcript(
            conversation=conversation
        ),
        "tools": conversation.tools,
    }
    if wire is not None and wire.takes_system and conversation.system is not None:
        data["system"] = conversation.system
    (recorded,) = conversation_from_json(data, fmt=fmt, name=conversation.client_id)
    # The recording's kind and its provider's figures, as the simulator's importer gives
    # them: what a replay infers the prefix a recording left out from (simulator.prefix).
    recorded = dataclasses.replace(
        recorded, source=conversation.source, usage=provider_usage(conversation)
    )
    paths = offload_paths(recorded.messages) if restore else set()
    if not paths:
        return recorded
    contents = read_offloads(conversation.workspace, paths)
    return dataclasses.replace(recorded, messages=restore_results(recorded.messages, contents))
