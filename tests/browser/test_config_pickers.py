"""The config pickers in a real browser: the engine's built-in defaults are named apart
from a stored config called "Defaults", on every page that lists both, while the URLs
keep the value ``defaults``."""

from __future__ import annotations

from typing import Any

from reduction_app.configs.services import config_create
from reduction_app.models import Workspace
from tests.app.pages_support import record_conversation

BUILT_IN = "Eino defaults (built in)"


def _options(page: Any, select: str) -> list[tuple[str, str]]:
    """The ``(value, text)`` of each option of the first select matching ``select``."""
    found = page.locator(select).first.locator("option")
    return [tuple(o) for o in found.evaluate_all("os => os.map(o => [o.value, o.text.trim()])")]


def test_config_pickers_name_the_built_in_defaults(signed_in: Any) -> None:
    page = signed_in
    workspace = Workspace.objects.get(slug="demo")
    conversation = record_conversation(workspace)
    stored = config_create(workspace=workspace, name="Defaults", data={}).profile
    page.goto(f"{page.base}/compare/")
    options = _options(page, "select[name=config]")
    assert options == [
        ("", "—"),
        ("none", "no reduction"),
        ("defaults", BUILT_IN),
        (str(stored.pk), "Defaults v1"),
    ]
    page.goto(f"{page.base}/tune/?conversation={conversation.pk}")
    assert _options(page, "select[name=start]") == [
        ("none", "no reduction"),
        ("defaults", BUILT_IN),
        (str(stored.pk), "Defaults v1"),
    ]
    page.goto(f"{page.base}/conversations/{conversation.client_id}/")
    assert _options(page, "select#id_config") == [("", BUILT_IN), (str(stored.pk), "Defaults")]


def test_compare_names_the_built_in_defaults_in_its_results(signed_in: Any) -> None:
    page = signed_in
    workspace = Workspace.objects.get(slug="demo")
    conversation = record_conversation(workspace)
    page.goto(f"{page.base}/compare/?conversation={conversation.pk}&config=defaults&config=none")
    rows = page.locator("table.totals tbody th[scope=row]")
    assert rows.all_inner_texts() == [f"{BUILT_IN} baseline", "no reduction"]
