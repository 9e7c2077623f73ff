"""Writes of conversations: upsert a transcript, continue a client's context from its
last revision, delete one with its events and files."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import IntegrityError, transaction

from reduction_app.errors import ServiceError, StaleRevision
from reduction_app.models import ContextRevision, Conversation, TranscriptMessage, Workspace
from reduction_app.records.services import file_content_release
from reduction_app.workspaces.quotas import offload_bytes_release


def conversation_upsert(
    *,
    workspace: Workspace,
    client_id: str,
    message_format: str,
    transcript: list[Any] | None = None,
    tools: list[Any] | None = None,
    title: str | None = None,
    system: Any = None,
) -> Conversation:
    """Create the conversation or update it; a transcript at least as long as the stored
    one replaces it (a client sends its whole context each time).

    The transcript is held a message a row, and only the messages that differ from the
    stored ones are written: a client's next call repeats the messages of its last one,
    some of them reduced, and adds a few, so a call writes what it added and changed
    rather than its whole context again. The stored tools and system are not loaded to be
    replaced."""
    with transaction.atomic(savepoint=False):
        conversation = _locked(workspace, client_id)
        if conversation is None:
            conversation = _created(
                workspace=workspace,
                client_id=client_id,
                defaults={
                    "message_format": message_format,
                    "message_count": len(transcript or []),
                    "tools": tools or [],
                    "title": title or "",
                    "system": system,
                },
            )
            if conversation is not None:
                _transcript_write(conversation, transcript or [], stored={})
                return conversation
            conversation = _locked(workspace, client_id)
            if conversation is None:  # created, then deleted, in between
                raise ServiceError(f"conversation {client_id!r} could not be saved")
        changed = ["updated_at"]
        if transcript is not None and len(transcript) >= conversation.message_count:
            _transcript_write(conversation, transcript, stored=None)
            conversation.message_count = len(transcript)
            conversation.message_format = message_format
            conversation.system = system
            changed += ["message_count", "message_format", "system"]
        if tools:
            conversation.tools = tools
            changed.append("tools")
        if title:
            conversation.title = title
            changed.append("title")
        conversation.save(update_fields=changed)
        return conversation


def context_json(messages: list[Any]) -> str:
    """The stored text of a list of messages: compact JSON with every non-ASCII character
    escaped, as ``TranscriptMessage.data`` (lone surrogates survive either database)."""
    return json.dumps(messages, separators=(",", ":"))


def client_context_answered(
    *, conversation: Conversation, sent: list[Any], answer: list[Any]
) -> int:
    """Record what a whole-context call answered: the client's context is now ``answer``,
    held as the transcript ``sent`` up to their first difference, then the rest of
    ``answer``. Returns the new revision.

    Runs in the caller's transaction, after :func:`conversation_upsert` wrote ``sent``.
    A transcript shorter than the stored one is not written, so the context is then held
    as the answer alone."""
    from_index = 0
    if conversation.message_count == len(sent):
        limit = min(len(sent), len(answer))
        from_index = next((i for i in range(limit) if sent[i] != answer[i]), limit)
    latest = _latest_revision(conversation)
    revision = 1 if latest is None else latest.revision + 1
    return _revision_add(conversation, revision, from_index, answer[from_index:], continued=False)


def conversation_continue(
    *,
    workspace: Workspace,
    client_id: str,
    previous_revision: int,
    new_messages: list[Any],
    tools: list[Any] | None,
    from_index: int,
    tail: list[Any],
) -> tuple[Conversation, int]:
    """Continue a client's context: the transcript becomes the context of
    ``previous_revision`` plus ``new_messages`` (what the client would have sent whole),
    and the context what the call answered (``from_index``, ``tail``, positions in that
    transcript). Returns the conversation and the new revision.

    Only the rows from the last answer's ``from_index`` on are written, so the work
    follows what the last call changed and this one added, not the conversation's length.
    Raises :class:`StaleRevision` when another call answered the context since."""
    with transaction.atomic(savepoint=False):
        conversation = _locked(workspace, client_id)
        latest = None if conversation is None else _latest_revision(conversation)
        if conversation is None or latest is None or latest.revision != previous_revision:
            raise StaleRevision(None if latest is None else latest.revision)
        start = latest.from_index
        sent = [*json.loads(latest.tail), *new_messages]
        TranscriptMessage.objects.filter(conversation=conversation, position__gte=start).delete()
        TranscriptMessage.objects.bulk_create(
            TranscriptMessage(
                conversation=conversation,
                position=start + i,
                digest=message_digest(message),
                data=json.dumps(message, separators=(",", ":")),
            )
            for i, message in enumerate(sent)
        )
        conversation.message_count = start + len(sent)
        changed = ["updated_at", "message_count"]
        if tools is not None:
            conversation.tools = tools
            changed.append("tools")
        conversation.save(update_fields=changed)
        revision = _revision_add(
            conversation, latest.revision + 1, from_index, tail, continued=True
        )
        return conversation, revision


def _latest_revision(conversation: Conversation) -> ContextRevision | None:
    rows = ContextRevision.objects.filter(conversation=conversation)
    return rows.order_by("-revision").first()


def _revision_add(
    conversation: Conversation, revision: int, from_index: int, tail: list[Any], *, continued: bool
) -> int:
    """Add the conversation's next revision; drop those older than ``ContextRevision.KEPT``.
    The caller holds the conversation's lock."""
    ContextRevision.objects.create(
        conversation=conversation,
        revision=revision,
        from_index=from_index,
        tail=context_json(tail),
        continued=continued,
    )
    old = ContextRevision.objects.filter(
        conversation=conversation, revision__lte=revision - ContextRevision.KEPT
    )
    old.delete()
    return revision


def conversation_create(
    *,
    workspace: Workspace,
    client_id: str,
    message_format: str,
    transcript: list[Any],
    tools: list[Any],
    system: Any = None,
    title: str = "",
    source: str = "",
    imported_from: str = "",
    provider_usage: dict[str, Any] | None = None,
    omits: list[str] | None = None,
) -> Conversation | None:
    """A new conversation with its transcript, or ``None`` when the workspace holds one
    with this id already (made meanwhile by another request or import): never a merge
    into another's transcript. ``provider_usage``: an imported recording's provider
    figures (``ProviderUsage.to_json``); ``omits``: what it left out of what the model
    was sent."""
    conversation = _created(
        workspace=workspace,
        client_id=client_id,
        defaults={
            "message_format": message_format,
            "message_count": len(transcript),
            "tools": tools,
            "title": title,
            "system": system,
            "source": source,
            "imported_from": imported_from,
            "provider_usage": provider_usage,
            "omits": omits,
        },
    )
    if conversation is not None:
        _transcript_write(conversation, transcript, stored={})
    return conversation


def _locked(workspace: Workspace, client_id: str) -> Conversation | None:
    """The conversation, locked for this transaction (the stored tools and system, which
    an update replaces, are not loaded)."""
    rows = Conversation.objects.select_for_update().defer("tools", "system", "provider_usage")
    return rows.filter(workspace=workspace, client_id=client_id).first()


def _created(
    *, workspace: Workspace, client_id: str, defaults: dict[str, Any]
) -> Conversation | None:
    """A new conversation, or ``None`` when another request created it first. Only this
    insert runs in a savepoint, so the common case (the conversation exists) costs no
    savepoint statements, and a lost race leaves the caller's transaction usable."""
    try:
        with transaction.atomic():
            return Conversation.objects.create(workspace=workspace, client_id=client_id, **defaults)
    except IntegrityError:
        return None


def message_digest(message: Any) -> str:
    """What tells a stored message from a changed one: a SHA-256 over the message's JSON
    values, each tagged with its kind and length, dict keys in the order sent. The order
    counts because a transcript gives messages back exactly as last sent, key order
    included: a message sent again with its keys reordered is a changed message. Hashing
    the values as they are costs a third of serialising the message to JSON first, which
    is most of a call's upsert."""
    hasher = hashlib.sha256()
    _feed(hasher, message)
    return hasher.hexdigest()


def _feed(hasher: Any, value: Any) -> None:
    if isinstance(value, str):
        # Lone surrogates (undecodable bytes a tool printed) are kept, as everywhere else.
        data = value.encode("utf-8", "surrogatepass")
        hasher.update(b"s%d:" % len(data))
        hasher.update(data)
    elif isinstance(value, dict):
        hasher.update(b"d%d:" % len(value))
        for key in value:
            _feed(hasher, key)
            _feed(hasher, value[key])
    elif isinstance(value, list):
        hasher.update(b"l%d:" % len(value))
        for item in value:
            _feed(hasher, item)
    else:  # int, float, bool, None: repr tells them apart (1, 1.0, True)
        data = repr(value).encode("ascii")
        hasher.update(b"v%d:" % len(data))
        hasher.update(data)


def _transcript_write(
    conversation: Conversation, transcript: list[Any], *, stored: dict[int, str] | None
) -> None:
    """Make the stored messages ``transcript``, writing only those that differ.

    ``stored`` is the stored position -> digest when known (``{}`` for a new conversation).
    """
    if stored is None:
        # Unordered: the model's default order joins the conversation table to sort by it.
        rows = TranscriptMessage.objects.filter(conversation=conversation).order_by()
        stored = dict(rows.values_list("position", "digest"))
    digests = [message_digest(m) for m in transcript]
    changed = [i for i, d in enumerate(digests) if stored.get(i) != d]
    replaced = set(changed)
    gone = [p for p in stored if p >= len(transcript) or p in replaced]
    if gone:
        TranscriptMessage.objects.filter(conversation=conversation, position__in=gone).delete()
    TranscriptMessage.objects.bulk_create(
        TranscriptMessage(
            conversation=conversation,
            position=i,
            digest=digests[i],
            data=json.dumps(transcript[i], separators=(",", ":")),
        )
        for i in changed
    )


@transaction.atomic
def conversation_delete(*, conversation: Conversation) -> None:
    """Delete the conversation, its events and its files; their content goes from the
    storage once committed, unless another file row names it, and from the workspace's
    offload usage now."""
    sized = list(conversation.files.values_list("storage_name", "size_bytes"))
    conversation.delete()
    offload_bytes_release(workspace=conversation.workspace, names=sized)
    file_content_release(storage_names=[name for name, _ in sized])
