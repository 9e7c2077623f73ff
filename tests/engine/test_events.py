"""ReductionEvent: events as values."""

from __future__ import annotations

import dataclasses
import json

from reduction_app.engine import ReductionEvent


def test_event_to_dict_names_every_field_in_order() -> None:
    event = ReductionEvent(
        phase="clear",
        kind="tool",
        tool_name="grep",
        call_id="call_1",
        chars_before=1200,
        chars_after=80,
        tokens_before=300,
        tokens_after=20,
        tokens_saved=280,
        offload_path="/tmp/clear/call_1",
        strategy="superseded",
    )
    data = event.to_dict()
    assert list(data) == [f.name for f in dataclasses.fields(ReductionEvent)]
    assert data == dataclasses.asdict(event)
    assert ReductionEvent(**json.loads(json.dumps(data))) == event
