"""Writes of the records themselves."""

from __future__ import annotations

import pytest

from reduction_app.models import OffloadedFile, Workspace
from reduction_app.records.services import file_mark_read
from reduction_app.reductions.services import engine_session_record
from tests.app.support import session_for, truncate_in

pytestmark = pytest.mark.django_db


def test_file_mark_read_counts(workspace: Workspace) -> None:
    with session_for(workspace, max_length_for_trunc=4) as session:
        truncate_in(session, "abcdefgh")
        engine_session_record(session=session, conversation_id=None)
    row = OffloadedFile.objects.get()
    file_mark_read(file=row)
    file_mark_read(file=row)
    row.refresh_from_db()
    assert row.read_count == 2
    assert row.last_read_at is not None
