"""Hostile tool output in a real browser, under the Content-Security-Policy: every page
with hostile records loads with no dialog opened and no policy violation, and the
scripts the pages need (charts, htmx, the workspace switcher) still run."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.app.test_xss import HOSTILE, recorded

WATCH_CSP = (
    "document.addEventListener('securitypolicyviolation', function (e) {"
    " (window.cspViolations = window.cspViolations || [])"
    ".push(e.violatedDirective + ' ' + e.blockedURI); });"
)


def test_hostile_records_open_no_dialog_and_break_no_policy(
    signed_in: Any, demo_user: User, shoot: Any
) -> None:
    page = signed_in
    client = Client()
    client.force_login(demo_user)
    records = recorded(client)
    dialogs: list[str] = []
    errors: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.add_init_script(WATCH_CSP)

    # The switcher submits on change (dashboard.js, no inline handler).
    page.goto(page.base + "/")
    page.select_option("select[data-autosubmit]", records["workspace"].slug)
    page.wait_for_selector("canvas[data-chart][data-rendered=true]")
    assert page.input_value("select[data-autosubmit]") == records["workspace"].slug

    conversation, profile = records["conversation"], records["profile"]
    addresses = [
        reverse("overview"),
        reverse("conversation_list"),
        reverse("conversation", args=[conversation.client_id]),
        reverse("event_list"),
        reverse("file_list"),
        reverse("conversation_message", args=[conversation.client_id, 1]),
        reverse("file_view") + "?" + f"path={records['file'].path}",
        reverse("file_view") + "?" + urlencode({"path": records["file"].path, "q": HOSTILE}),
        reverse("configs"),
        reverse("config_edit", args=[profile.pk]),
        reverse("config_versions", args=[profile.pk]),
        reverse("compare") + f"?conversation={conversation.pk}&config={profile.pk}&config=defaults",
        reverse("tune") + f"?conversation={conversation.pk}",
        reverse("simulation_list"),
        reverse("simulation", args=[records["simulation"].pk]),
        reverse("imports"),
        reverse("recording_import", args=[records["import"].pk]),
        reverse("recording_import", args=[records["failed_import"].pk]),
        # An imported recording's page: its first chart compares two replays.
        reverse(
            "conversation",
            args=[records["import"].result[0]["conversations"][0]["conversation_id"]],
        ),
    ]
    seen = []
    for address in addresses:
        page.goto(page.base + address)
        page.wait_for_load_state("load")
        if page.locator("canvas[data-chart]").count():
            page.wait_for_selector("canvas[data-chart][data-rendered=true]")
        assert page.evaluate("window.cspViolations || []") == [], address
        seen.append(HOSTILE in page.inner_text("body"))
    shoot(page, "hostile-simulation")
    assert dialogs == []
    assert errors == []
    # The hostile text is there, as text, on the pages that show records.
    assert seen.count(True) >= 10
