"""Transcripts held a message a row (TranscriptMessage), so a call that repeats most of
the last one writes only what it added or changed. Stored transcripts are moved over,
and back when the migration is reversed."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import django.db.models.deletion
from django.db import migrations, models

BATCH = 500


def _digest(message: Any) -> str:
    # As conversations.services.message_digest computes it; a migration keeps its own
    # copy, so that later changes there cannot change what this migration did.
    hasher = hashlib.sha256()
    _feed(hasher, message)
    return hasher.hexdigest()


def _feed(hasher: Any, value: Any) -> None:
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        hasher.update(b"s%d:" % len(data))
        hasher.update(data)
    elif isinstance(value, dict):
        hasher.update(b"d%d:" % len(value))
        for key in sorted(value):
            _feed(hasher, key)
            _feed(hasher, value[key])
    elif isinstance(value, list):
        hasher.update(b"l%d:" % len(value))
        for item in value:
            _feed(hasher, item)
    else:
        data = repr(value).encode("ascii")
        hasher.update(b"v%d:" % len(data))
        hasher.update(data)


def split_transcripts(apps: Any, schema_editor: Any) -> None:
    Conversation = apps.get_model("reduction_app", "Conversation")
    TranscriptMessage = apps.get_model("reduction_app", "TranscriptMessage")
    for conversation in Conversation.objects.only("id", "transcript").iterator(chunk_size=50):
        TranscriptMessage.objects.bulk_create(
            (
                TranscriptMessage(
                    conversation_id=conversation.pk,
                    position=i,
                    digest=_digest(m),
                    data=json.dumps(m, separators=(",", ":")),
                )
                for i, m in enumerate(conversation.transcript or [])
            ),
            batch_size=BATCH,
        )


def join_transcripts(apps: Any, schema_editor: Any) -> None:
    Conversation = apps.get_model("reduction_app", "Conversation")
    TranscriptMessage = apps.get_model("reduction_app", "TranscriptMessage")
    for conversation in Conversation.objects.only("id").iterator(chunk_size=50):
        conversation.transcript = [
            json.loads(data)
            for data in TranscriptMessage.objects.filter(conversation_id=conversation.pk)
            .order_by("position")
            .values_list("data", flat=True)
        ]
        conversation.save(update_fields=["transcript"])


class Migration(migrations.Migration):
    dependencies = [("reduction_app", "0005_simulationpart_lease")]

    operations = [
        migrations.CreateModel(
            name="TranscriptMessage",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("position", models.PositiveIntegerField()),
                (
                    "digest",
                    models.CharField(
                        help_text="SHA-256 of the message's JSON values (services.message_digest).", max_length=64
                    ),
                ),
                (
                    "data",
                    models.TextField(
                        help_text="The message as JSON, in the conversation's wire format "
                        "(ASCII, see below)."
                    ),
                ),
                (
                    "conversation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="transcript_messages",
                        to="reduction_app.conversation",
                    ),
                ),
            ],
            options={
                "ordering": ("conversation", "position"),
                "constraints": [
                    models.UniqueConstraint(
                        fields=("conversation", "position"),
                        name="transcript_message_position_unique",
                    )
                ],
            },
        ),
        migrations.RunPython(split_transcripts, join_transcripts),
        migrations.RemoveField(model_name="conversation", name="transcript"),
        migrations.AlterField(
            model_name="conversation",
            name="message_count",
            field=models.PositiveIntegerField(
                default=0,
                help_text="Messages of the transcript, held one a row in TranscriptMessage.",
            ),
        ),
    ]
