"""The running measures of the context sent, kept call by call."""

from __future__ import annotations

import dataclasses

from reduction_app.engine import PROCESSED_FLAG, Message, get_token_counter
from simulator.metering import Meter
from simulator.tracking import Tracker, shared_prefix
from simulator.transcript import call_key
from tests.simulator.cases import ENGINE, call, result

# Approx tokens (characters // 4): "user\n\n" + "hi" + "\n" = 9 -> 2; a call
# "assistant\n\n\nread_file\n" + arguments; a result "tool\n\n" + text + "\n".
USER = Message.user("hi")


def _tracker() -> Tracker:
    return Tracker(Meter(ENGINE, get_token_counter("approx")))


def test_shared_prefix_by_identity() -> None:
    a, b, c = Message.user("a"), Message.user("b"), Message.user("c")
    assert shared_prefix([a, b], [a, b, c]) == 2
    assert shared_prefix([a, b, c], [a, Message.user("b"), c]) == 1
    assert shared_prefix([], [a]) == 0


def test_tracker_body_is_the_sum_of_the_messages_sent() -> None:
    tracker = _tracker()
    first = call("c1", '{"path": "a"}')
    out = result("c1", "x" * 40)
    assert tracker.send([USER, first]) == 0
    assert tracker.body == 2 + 8
    assert tracker.send([USER, first, out]) == 2
    assert tracker.body == 2 + 8 + 11
    # A clear pass replaced the result: the prefix before it is kept, the rest recounted.
    placeholder = dataclasses.replace(out, content="gone")
    assert tracker.send([USER, first, placeholder]) == 2
    assert tracker.body == 2 + 8 + 2  # "tool\n\ngone\n": 11 characters


def test_tracker_share_and_hidden_follow_the_results_still_whole() -> None:
    tracker = _tracker()
    first, second = result("c1", "x" * 40), result("c2", "y" * 80)
    key = call_key("read_file", '{"path": "a"}')
    tracker.arrived(first, key, 11)
    tracker.answered(first, "x" * 40)
    tracker.arrived(second, call_key("grep", "{}"), 21)
    tracker.answered(second, "y" * 80)
    tracker.send([USER, first, second])
    assert (tracker.seen, tracker.total, tracker.share) == (32, 32, 1.0)
    assert tracker.hidden(key) is None  # still whole
    tracker.send([USER, dataclasses.replace(first, content="gone"), second])
    assert tracker.share == 21 / 32
    assert tracker.hidden(key) == ["x" * 40]
    assert tracker.hidden(call_key("read_file", '{"path": "b"}')) is None  # never called


def test_tracker_keys_are_compared_as_json() -> None:
    tracker = _tracker()
    first = result("c1", "x")
    tracker.arrived(first, call_key("read_file", '{"path": "a", "n": 1}'), 2)
    tracker.send([USER])
    assert tracker.hidden(call_key("read_file", '{"n": 1,  "path": "a"}')) == [""]


def test_tracker_the_same_result_again_takes_its_new_key() -> None:
    """An object that arrives twice (models reuse ids) is counted once, under its latest
    call's key."""
    tracker = _tracker()
    same = result("c1", "x" * 40)
    old, new = call_key("read_file", "a"), call_key("read_file", "b")
    tracker.arrived(same, old, 11)
    tracker.send([USER, same])
    tracker.arrived(same, new, 11)
    assert tracker.total == 11
    tracker.send([USER])
    assert tracker.hidden(old) is None
    assert tracker.hidden(new) == [""]


def test_tracker_cached_body_skips_the_processed_flag() -> None:
    tracker = _tracker()
    first = call("c1", '{"path": "a"}')
    out = result("c1", "x" * 40)
    tracker.send([USER, first, out])
    previous = tracker.sent
    flagged = dataclasses.replace(first, extra={PROCESSED_FLAG: True})
    same = tracker.send([USER, flagged, dataclasses.replace(out, content="gone")])
    assert same == 1
    # user and the flagged call count as cached; the changed result ends the prefix.
    assert tracker.cached_body(previous, same) == 2 + 8


def test_tracker_copy_is_independent() -> None:
    tracker = _tracker()
    out = result("c1", "x" * 40)
    tracker.arrived(out, call_key("read_file", "a"), 11)
    tracker.send([USER, out])
    other = tracker.copy()
    other.send([USER])
    assert (tracker.body, tracker.seen) == (2 + 11, 11)
    assert (other.body, other.seen) == (2, 0)
