"""The API's interactive docs (Swagger UI, served locally by django-ninja) under the
Content-Security-Policy."""

from __future__ import annotations

from typing import Any

from tests.browser.test_security import WATCH_CSP


def test_api_docs_render_with_no_policy_violation(page: Any, live_server: Any) -> None:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.add_init_script(WATCH_CSP)
    page.goto(f"{live_server.url}/api/v1/docs")
    page.wait_for_selector(".opblock-summary-path")
    assert page.evaluate("window.cspViolations || []") == []
    assert errors == []
    assert "/api/v1/truncate" in page.inner_text("#swagger-ui")
