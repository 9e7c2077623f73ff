"""The shell command classifier of ``trunc_command_limits`` (docs/behaviour.md §3.11)."""

from __future__ import annotations

import pytest

from reduction_app.engine.commands import COMMAND_KINDS, command_kind, shell_command


def test_command_kinds_strongest_first() -> None:
    assert COMMAND_KINDS == ("running", "reading", "searching", "editing", "other")


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        # reading
        ("cat setup.cfg", "reading"),
        ("sed -n '120,180p' src/pkg/models.py", "reading"),
        ("nl -ba src/pkg/views.py | sed -n '30,60p'", "reading"),
        ("head -n 40 README.rst", "reading"),
        ("awk 'NR>=10 && NR<=20' lib/core.py", "reading"),
        ("git diff", "reading"),
        ("git log --oneline -5", "reading"),
        ("git -C ../other show HEAD~1", "reading"),
        ("gh pr view 12 --json title,body", "reading"),
        ("gh api repos/acme/tool/pulls/7/files", "reading"),
        # searching
        ('grep -rn "def parse" src/', "searching"),
        ("rg -n TODO", "searching"),
        ("find . -name '*.py' | xargs grep -l Widget", "searching"),
        ("ls -la", "searching"),
        ("git status --short", "searching"),
        ("git ls-files | head", "searching"),
        ("cd /work/repo && git status", "searching"),
        # running
        ("python reproduce.py", "running"),
        ("python3 -m pytest tests/test_api.py -x -q 2>&1 | tail -20", "running"),
        ("pytest -k widget", "running"),
        ("./tests/runtests.py queries --parallel 1", "running"),
        ("bash check.sh", "running"),
        ("cd docs && make html", "running"),
        ("timeout 10s python3 -m app serve", "running"),
        ("PYTHONPATH=src /usr/bin/python3.11 run.py", "running"),
        ("go test ./... -count=1 2>&1 | head -50", "running"),
        ("mise run lint 2>&1", "running"),
        ("bash -c 'cargo build --release'", "running"),
        ("cat <<'EOF' > check.py\nprint('x')\nEOF\npython check.py", "running"),
        # editing
        ("sed -i 's/old/new/' src/pkg/util.py", "editing"),
        ("cat <<'EOF' > notes.txt\nls -la\ngrep x\nEOF", "editing"),
        ("echo 'x = 1' >> settings.py", "editing"),
        ("rm -rf build/ tmp.py", "editing"),
        ("git add -A && git commit -m 'fix parser'", "editing"),
        ("patch -p1 < fix.diff", "editing"),
        # a sequence: the strongest kind wins; a pipeline: its first command decides
        ("sed -i '3d' a.py && sed -n '1,10p' a.py", "reading"),
        ("echo DONE && git add -A && git diff --cached", "reading"),
        ("grep -n foo a.py; nl -ba a.py | head", "reading"),
        ("rm -f out.log\ncd proj && make test\ncat out.log", "running"),
        # other
        ("git push -u origin topic", "other"),
        ("gh pr create --title T --body B", "other"),
        ("curl -s https://example.org", "other"),
        ("cd src", "other"),
        ('echo "hello"', "other"),
    ],
)
def test_command_kind(command: str, kind: str) -> None:
    assert command_kind(command) == kind


def test_command_kind_none_without_words() -> None:
    assert command_kind("") is None
    assert command_kind("   \n") is None
    assert command_kind("# only a comment") is None


def test_command_kind_reads_past_a_leading_comment_and_unbalanced_quotes() -> None:
    assert command_kind("# look again\nsed -n '10,20p' f.py") == "reading"
    assert command_kind("grep -n \"it's f.py") == "searching"


def test_shell_command_takes_command_then_cmd() -> None:
    assert shell_command('{"command": "ls"}') == "ls"
    assert shell_command('{"cmd": "pwd", "timeout": 5}') == "pwd"
    assert shell_command('{"command": ["ls"], "cmd": "pwd"}') == "pwd"
    assert shell_command('{"file_path": "/a"}') is None
    assert shell_command('["ls"]') is None
    assert shell_command("not json") is None
