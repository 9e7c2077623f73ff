"""What kind of work a shell command does: the rule behind ``trunc_command_limits``.

:func:`command_kind` sorts a shell tool's command (``Bash``, ``bash``, ``execute_bash``:
any tool whose arguments hold a string ``command`` or ``cmd``) into one of
:data:`COMMAND_KINDS`; docs/behaviour.md §3.11 lists which commands make which kind.
This module owns the rule only; which limit a kind gets is the truncation phase's.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Final, Literal

__all__ = ["COMMAND_KINDS", "CommandKind", "command_kind", "shell_command"]

CommandKind = Literal["running", "reading", "searching", "editing", "other"]

COMMAND_KINDS: Final[tuple[CommandKind, ...]] = (
    "running",
    "reading",
    "searching",
    "editing",
    "other",
)
"""Every kind, strongest first: across a sequence of commands the strongest one wins."""

COMMAND_ARGUMENT_KEYS: Final[tuple[str, ...]] = ("command", "cmd")
"""The argument a shell tool's call holds its command in."""

_READING = frozenset(
    {"cat", "nl", "head", "tail", "less", "more", "bat", "batcat", "view", "awk", "gawk"}
    | {"mawk", "wc", "diff", "cmp", "jq", "od", "xxd", "hexdump", "strings", "column"}
)
_SEARCHING = frozenset(
    {"grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd", "fdfind", "ls", "tree"}
    | {"locate", "which", "whereis", "du", "stat", "file", "realpath", "readlink"}
)
_RUNNING = frozenset(
    {"python", "py", "pypy", "pypy3", "pytest", "py.test", "tox", "nox", "coverage"}
    | {"make", "cmake", "ninja", "node", "npm", "npx", "yarn", "pnpm", "bun", "deno"}
    | {"go", "cargo", "rustc", "gcc", "g++", "cc", "clang", "javac", "java", "mvn"}
    | {"gradle", "ruby", "rake", "bundle", "php", "perl", "bash", "sh", "zsh", "mise"}
    | {
        "uv",
        "uvx",
        "poetry",
        "pip",
        "pip3",
        "conda",
        "docker",
        "sphinx-build",
        "mypy",
        "sphinx-apidoc",
    }
    | {"ruff", "flake8", "pylint", "black", "isort", "eslint", "prettier", "tsc", "jest"}
    | {"vitest", "golangci-lint", "gofmt", "dotnet", "swift", "django-admin", "pre-commit"}
)
_EDITING = frozenset(
    {"patch", "tee", "cp", "mv", "rm", "rmdir", "mkdir", "touch", "chmod", "chown", "ln"}
    | {"truncate", "ed", "install", "unzip", "tar"}
)
_PASSED_OVER = frozenset(
    {"cd", "pushd", "popd", "echo", "printf", "export", "unset", "set", "source", "."}
    | {"sleep", "true", "false", ":", "pwd", "wait", "alias", "for", "done", "fi", "esac"}
    | {"case", "in", "break", "continue", "return", "exit", "local", "declare", "read"}
    | {"clear", "history", "trap"}
)
_WRAPPERS = frozenset(
    {"sudo", "timeout", "time", "nice", "env", "nohup", "command", "exec", "xargs"}
    | {"stdbuf", "ionice", "then", "do", "else", "elif", "if", "while", "until", "!"}
    | {"{", "}", "(", ")"}
)
_GIT = {
    **dict.fromkeys(("show", "diff", "log", "blame", "cat-file", "shortlog"), "reading"),
    **dict.fromkeys(("grep", "ls-files", "ls-tree", "status"), "searching"),
    **dict.fromkeys(
        (
            *("apply", "am", "add", "commit", "checkout", "restore", "reset", "stash"),
            *("rm", "mv", "merge", "rebase", "cherry-pick", "switch", "revert", "clean"),
        ),
        "editing",
    ),
}
_SEPARATORS = frozenset({"|", "|&", "&&", "||", ";", "&", ";;"})
_PIPES = frozenset({"|", "|&"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"python(\d+(\.\d+)*)?")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_PUNCTUATION = ";&|<>()\n"


def shell_command(arguments: str) -> str | None:
    """The command of a shell tool's call: the string ``command`` (or ``cmd``) of its JSON
    arguments; ``None`` when the arguments hold neither."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    for key in COMMAND_ARGUMENT_KEYS:
        value = parsed.get(key)
        if isinstance(value, str):
            return value
    return None


def _without_heredocs(command: str) -> str:
    """The command with heredoc bodies left out (a body is data, not commands)."""
    lines = command.replace("\\\n", " ").split("\n")
    out: list[str] = []
    ends: list[str] = []
    for line in lines:
        if ends:
            if line.strip() == ends[0]:
                ends.pop(0)
            continue
        out.append(line)
        ends = [m.group(2) for m in _HEREDOC.finditer(line)]
    return "\n".join(out)


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        # Unbalanced quotes: read words and separators without them.
        return re.findall(r"\|\||&&|[|;&\n]|[^\s|;&]+", text)


def _pipelines(tokens: list[str]) -> list[list[list[str]]]:
    """Sequences of pipelines of simple commands (lists of words)."""
    sequence: list[list[list[str]]] = [[[]]]
    for token in tokens:
        if token and set(token) <= set(_PUNCTUATION) and "\n" in token:
            # shlex joins adjacent punctuation: ``&&`` then a newline is one token.
            token = token.replace("\n", "") or ";"
        if token in _PIPES:
            sequence[-1].append([])
        elif token in _SEPARATORS:
            sequence.append([[]])
        else:
            sequence[-1][-1].append(token)
    return sequence


def _writes_file(words: list[str]) -> bool:
    """Whether the command's output is redirected into a file (not ``/dev/null``)."""
    for i, word in enumerate(words):
        if word in (">", ">>", ">|") and i + 1 < len(words):
            target = words[i + 1]
            if target != "/dev/null" and not target.startswith("&"):
                return True
    return False


def _skip_prefix(words: list[str]) -> list[str]:
    """The words from the command's name on: past assignments, wrappers and their options."""
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word) or word in _WRAPPERS:
            i += 1
            if word in ("timeout", "nice", "sudo", "env", "xargs", "stdbuf", "ionice"):
                while i < len(words) and words[i].startswith("-"):
                    # ``nice -n 10``, ``sudo -u user``, ``timeout -s KILL``: a short option
                    # of these takes a value; ``--opt=value`` does not.
                    takes_value = len(words[i]) == 2 and word != "xargs"
                    i += 2 if takes_value else 1
                if word == "timeout" and i < len(words):
                    i += 1  # the duration
            continue
        if word.isdigit() and i + 1 < len(words) and words[i + 1] in (">", ">>", ">&"):
            i += 1
            continue
        break
    return words[i:]


def _simple_kind(words: list[str]) -> CommandKind | None:
    """The kind of one simple command; ``None`` when it says nothing about the work."""
    words = _skip_prefix([w for w in words if w not in ("(", ")", "{", "}")])
    if not words:
        return None
    path = words[0]
    name = path.rsplit("/", 1)[-1]
    args = words[1:]
    if name in ("bash", "sh", "zsh") and len(args) >= 2 and args[0] == "-c":
        return _kind_of(args[1])[0]
    if name in ("cat", "echo", "printf") and _writes_file(args):
        return "editing"
    if name in _PASSED_OVER:
        return None
    if name == "sed" or name in ("perl", "awk", "gawk"):
        in_place = any(a == "-i" or a.startswith(("-i", "--in-place")) for a in args)
        if in_place or (name == "perl" and any(re.fullmatch(r"-\w*i\w*", a) for a in args)):
            return "editing"
        return "running" if name == "perl" else "reading"
    if name == "git":
        rest = [a for a in args if not a.startswith("-")]
        # ``git -C DIR cmd``: the directory is a value, not the subcommand.
        if args[:1] == ["-C"] and len(args) >= 3:
            rest = [a for a in args[2:] if not a.startswith("-")]
        return _GIT.get(rest[0], "other") if rest else "other"  # type: ignore[return-value]
    if name == "gh":
        return _gh_kind(args)
    if name in _READING:
        return "reading"
    if name in _SEARCHING:
        return "searching"
    if name in _EDITING:
        return "editing"
    if name in _RUNNING or _PYTHON.fullmatch(name) or "/" in path:
        return "running"
    return "other"


def _gh_kind(args: list[str]) -> CommandKind:
    """GitHub's CLI: ``view``, ``diff`` and a reading ``api`` call show a document;
    ``list``, ``search`` and ``status`` find things; anything else (``create``, an
    ``api`` call that posts fields) is ``other``."""
    rest = [a for a in args if not a.startswith("-")]
    if rest[:1] == ["api"]:
        posts = any(a in ("-f", "-F", "--field", "--raw-field", "--input") for a in args)
        method = next(
            (args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-X", "--method")), "GET"
        )
        return "reading" if not posts and method.upper() == "GET" else "other"
    if len(rest) >= 2 and rest[1] in ("view", "diff", "checks"):
        return "reading"
    if (len(rest) >= 2 and rest[1] in ("list", "search", "status")) or rest[:1] == ["search"]:
        return "searching"
    return "other"


def _strongest(kinds: list[CommandKind]) -> CommandKind | None:
    for kind in COMMAND_KINDS:
        if kind in kinds:
            return kind
    return None


def _kind_of(command: str) -> tuple[CommandKind | None, bool]:
    """The command's strongest kind, and whether it has any words at all.

    In a pipeline the first command not passed over decides: it makes the data, the
    rest filter it (``nl -ba f | sed -n '1,9p'`` is reading, ``pytest | tail`` running).
    Across a sequence the strongest kind wins (:data:`COMMAND_KINDS`): writing a script
    and running it is running; an edit followed by a look at the file is reading.
    """
    found: list[CommandKind] = []
    words_seen = False
    for pipeline in _pipelines(_tokens(_without_heredocs(command))):
        for words in pipeline:
            words_seen = words_seen or bool(words)
            kind = _simple_kind(words)
            if kind is not None:
                found.append(kind)
                break
    return _strongest(found), words_seen


def command_kind(command: str) -> CommandKind | None:
    """The kind of work ``command`` does, one of :data:`COMMAND_KINDS`; ``None`` for a
    command with no words (blank, or comments only).

    A command made only of commands passed over (``cd src``, ``echo done``) is ``other``.
    """
    kind, words_seen = _kind_of(command)
    if not words_seen:
        return None
    return "other" if kind is None else kind
