"""A config's snippets in a real browser at 1280×800: shown under "Copy as", and "Copy"
puts the snippet on the clipboard and says so."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from reduction_app.configs.services import config_create
from reduction_app.configs.snippets import config_snippets


def test_copy_puts_the_snippet_on_the_clipboard(
    clipboard_page: Any, demo_user: User, shoot: Any
) -> None:
    page = clipboard_page
    data = {"max_tokens_for_clear": 8_000, "clear_exclude_tools": ["plan"]}
    workspace = demo_user.workspaces.get()
    profile = config_create(workspace=workspace, name="tight", data=data).profile
    snippets = {s.key: s for s in config_snippets(data)}
    page.goto(f"{page.base}/configs/{profile.pk}/versions/")
    assert not page.is_visible("#v1-snippet-python")
    page.click("#v1-copy-as > summary")
    for key, snippet in snippets.items():
        assert page.is_visible(f"#v1-snippet-{key}")
        assert page.inner_text(f"figure[data-snippet={key}] figcaption strong") == snippet.label
    for key in ("python", "rest", "langchain"):
        figure = f"#v1-copy-as figure[data-snippet={key}]"
        page.click(f"{figure} button.copy")
        page.wait_for_selector(f"{figure} .copy-status:text-is('Copied.')")
        assert page.evaluate("navigator.clipboard.readText()") == snippets[key].text
    shoot(page, "config-snippets")
