"""Writes of the records themselves (events and files are written by
``reductions.services``)."""

from __future__ import annotations

from django.db.models import F
from django.utils import timezone

from reduction_app.models import OffloadedFile


def file_mark_read(*, file: OffloadedFile) -> None:
    OffloadedFile.objects.filter(pk=file.pk).update(
        read_count=F("read_count") + 1, last_read_at=timezone.now()
    )
