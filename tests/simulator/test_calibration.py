"""The simulator's counts against the providers' own, on the shipped recordings."""

from __future__ import annotations

import pytest

from simulator.calibration import SHIPPED, calibrate, render_table
from tests.conftest import CONVERSATIONS, needs_recordings

pytestmark = needs_recordings


@pytest.fixture(scope="module")
def rows() -> list:
    return [calibrate(CONVERSATIONS, item) for item in SHIPPED]


def test_calibration_aggregate_within_two_percent(rows: list) -> None:
    provider = sum(r.provider_tokens for r in rows)
    simulated = sum(r.simulated_tokens for r in rows)
    assert sum(r.calls for r in rows) == 86
    assert provider == 559_124  # the providers' figures, read from the files
    assert abs(simulated - provider) / provider < 0.02


def test_calibration_every_file_within_two_percent(rows: list) -> None:
    assert [r.file for r in rows] == [item.path for item in SHIPPED]
    assert all(abs(r.ratio - 1) < 0.02 for r in rows), [(r.file, r.ratio) for r in rows]
    per_call = [r.worst_call for r in rows if r.worst_call is not None]
    assert len(per_call) == 3 and max(per_call) < 0.02


def test_calibration_without_the_agent_tools_falls_short(rows: list) -> None:
    """The τ²-bench files keep no tool schemas: replayed as they are, the counts miss the
    tools and the prompt around the policy on every call (so putting them back matters)."""
    from simulator.importers import load_conversations
    from simulator.pricing import pricing_for
    from simulator.replay import replay

    [conv] = load_conversations(CONVERSATIONS / "tau2/retail-gpt-4.1-mini.json")
    bare = replay(conv, None, pricing=pricing_for("gpt-4.1-mini")).totals.input_tokens_billed
    [retail] = [r for r in rows if r.file.startswith("tau2/retail")]
    assert bare < 0.85 * retail.simulated_tokens


def test_render_table_has_a_row_per_file_and_the_aggregate(rows: list) -> None:
    table = render_table(rows).splitlines()
    assert table[0].startswith("| file | preset | runs | calls |")
    assert len(table) == 2 + len(SHIPPED) + 1
    assert table[-1].startswith("| **all** | | | 86 | 559,124 |")


def test_simulator_page_shows_what_calibrate_prints() -> None:
    """The two tables of docs/simulator.md are the command's output, so they cannot drift."""
    from io import StringIO

    from simulator.cli import main
    from tests.conftest import REPO

    out = StringIO()
    assert main(["calibrate"], out=out, err=StringIO()) == 0
    page = (REPO / "docs" / "simulator.md").read_text(encoding="utf-8")
    for table in out.getvalue().split("\n\n"):
        assert table.strip() in page
