"""Every adapter imports without Django: an agent that uses one never loads the app."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("adapter", ["langchain", "openai_agents", "pydantic_ai"])
def test_adapter_imports_without_django(adapter: str) -> None:
    code = (
        f"import sys, reduction_app.integrations.{adapter}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout == "[]\n"
