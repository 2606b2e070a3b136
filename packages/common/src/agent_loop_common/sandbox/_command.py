"""Command lines as argument vectors: parsed with `shlex`, never given to a shell.

A test or setup command comes from a setting or from the repository's own files, and
extra arguments may come from a model. None of them is ever run by a shell, so shell
syntax would silently mean something else (`a && b` would pass `&&` to `a`): it is
refused with a message saying what to do instead. Only syntax a shell would act on is
refused: inside quotes `;`, `&`, `|`, `<`, `>` are ordinary characters of one argument
(`python -c "import a; a.main()"`), and single quotes make `$` literal too. The one substitution is the literal
`$SANDBOX_JUNIT` (or `${SANDBOX_JUNIT}`), replaced by the path where the sandbox reads a
JUnit XML report, e.g. `python -m pytest -q --junitxml=$SANDBOX_JUNIT`.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence

from agent_loop_common.sandbox._errors import CommandRejected

__all__ = [
    "JUNIT_PLACEHOLDER",
    "expand_placeholders",
    "parse_command",
    "validate_extra_args",
]

JUNIT_PLACEHOLDER = "$SANDBOX_JUNIT"
"""Replaced in any argument by the sandbox's JUnit report path."""

_PLACEHOLDER = re.compile(r"\$(?:SANDBOX_JUNIT\b|\{SANDBOX_JUNIT\})")
_SHELL = (
    (";", "';' (run two commands)"),
    ("&", "'&' or '&&' (background or chain commands)"),
    ("|", "'|' or '||' (pipes)"),
    ("`", "backticks (command substitution)"),
    ("$(", "'$(' (command substitution)"),
    (">", "'>' (redirection)"),
    ("<", "'<' (redirection)"),
    ("\n", "a line break (several commands)"),
)
_MAX_COMMAND_CHARS = 2000


def _shell_syntax(text: str) -> str | None:
    for token, what in _SHELL:
        if token in text:
            return what
    rest = _PLACEHOLDER.sub("", text)
    if "$" in rest:
        return "'$' (variables are not expanded; only $SANDBOX_JUNIT is)"
    return None


def _active_text(text: str) -> tuple[str, str]:
    """The characters a shell would act on: `(unquoted, inside double quotes)`.

    Single-quoted text and backslash-escaped characters are literal to a shell, and no
    shell runs here, so they may hold anything (`python -c "import a; a.main()"`).
    Inside double quotes a shell still expands `$` and backticks, so those are kept
    apart to be checked. Unbalanced quotes are left to `shlex` to report.
    """
    unquoted: list[str] = []
    doubled: list[str] = []
    quote = ""
    escaped = False
    for ch in text:
        if escaped:
            escaped = False
            if quote == '"':
                doubled.append(" ")
            continue
        if quote == "'":
            if ch == "'":
                quote = ""
            continue
        if ch == "\\":
            escaped = True
            continue
        if quote == '"':
            if ch == '"':
                quote = ""
                unquoted.append(" ")
            else:
                doubled.append(ch)
            continue
        if ch in "'\"":
            quote = ch
            unquoted.append(" ")
            continue
        unquoted.append(ch)
    return "".join(unquoted), "".join(doubled)


def _command_syntax(text: str) -> str | None:
    """Shell syntax a shell would act on in a whole command line, or `None`."""
    unquoted, doubled = _active_text(text)
    found = _shell_syntax(unquoted)
    if found is not None:
        return found
    # A shell still expands these inside double quotes: refused there too.
    if "`" in doubled:
        return "backticks (command substitution)"
    if "$(" in doubled:
        return "'$(' (command substitution)"
    if "$" in _PLACEHOLDER.sub("", doubled):
        return "'$' (variables are not expanded; only $SANDBOX_JUNIT is)"
    return None


def parse_command(text: str, *, what: str = "command") -> tuple[str, ...]:
    """Split a command line into an argument vector, refusing shell syntax.

    Args:
        text: The command line, e.g. `python -m pytest -q`.
        what: How to name it in errors (`AGENT_LOOP_TEST_COMMAND`, `AGENTS.md`, ...).

    Raises:
        CommandRejected: Empty, too long, unbalanced quotes, or shell syntax.
    """
    text = text.strip()
    if not text:
        raise CommandRejected(f"{what} is empty")
    if len(text) > _MAX_COMMAND_CHARS:
        raise CommandRejected(f"{what} is longer than {_MAX_COMMAND_CHARS} characters")
    syntax = _command_syntax(text)
    if syntax is not None:
        raise CommandRejected(
            f"{what} {text!r} uses shell syntax: {syntax}. Commands run without a shell: "
            "give one program with its arguments (put several steps in a script or a "
            "Makefile target and name that)"
        )
    try:
        argv = tuple(shlex.split(text))
    except ValueError as exc:
        raise CommandRejected(f"{what} {text!r} cannot be parsed: {exc}") from None
    if not argv:
        raise CommandRejected(f"{what} is empty")
    if "=" in argv[0] and not argv[0].startswith(("/", ".")):
        raise CommandRejected(
            f"{what} {text!r} starts with a variable assignment ({argv[0]!r}), which needs "
            "a shell; the sandbox sets the environment itself"
        )
    return argv


def expand_placeholders(argv: Sequence[str], *, junit_path: str) -> tuple[str, ...]:
    """`argv` with every `$SANDBOX_JUNIT` replaced by `junit_path`."""
    return tuple(_PLACEHOLDER.sub(junit_path, arg) for arg in argv)


def validate_extra_args(
    args: Sequence[str],
    *,
    max_args: int = 32,
    max_chars: int = 300,
) -> tuple[str, ...]:
    """Check arguments a model wants to append to the test command (a `run_tests` tool).

    Allowed: options and test selectors such as `-k`, `test_login`,
    `tests/test_x.py::test_y`, `-x`. Refused: shell syntax, empty or overlong arguments,
    too many arguments, absolute paths and paths leaving the tree (`..`), home-relative
    paths (`~`), and control characters.

    Raises:
        CommandRejected: The first problem found, written for the model.
    """
    if len(args) > max_args:
        raise CommandRejected(f"too many arguments ({len(args)}); at most {max_args}")
    out: list[str] = []
    for arg in args:
        if not arg:
            raise CommandRejected("an argument is empty")
        if len(arg) > max_chars:
            raise CommandRejected(f"argument {arg[:40]!r}... is longer than {max_chars} characters")
        if any(ord(ch) < 32 for ch in arg):
            raise CommandRejected(f"argument {arg!r} contains a control character")
        syntax = _shell_syntax(arg)
        if syntax is not None:
            raise CommandRejected(f"argument {arg!r} uses shell syntax: {syntax}")
        for part in _path_like_parts(arg):
            if part.startswith("/"):
                raise CommandRejected(
                    f"argument {arg!r} names an absolute path; use a path relative to the "
                    "repository root"
                )
            if part.startswith("~"):
                raise CommandRejected(f"argument {arg!r} names a home folder")
            normal = posixpath.normpath(part)
            if normal == ".." or normal.startswith("../"):
                raise CommandRejected(f"argument {arg!r} leaves the repository")
        out.append(arg)
    return tuple(out)


def _path_like_parts(arg: str) -> list[str]:
    # `--rootdir=/etc` and `-o=cache_dir=../x` hide a path after '='.
    return [p for p in (arg, *arg.split("=")[1:]) if p]
