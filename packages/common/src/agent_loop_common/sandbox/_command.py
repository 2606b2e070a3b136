"""Command lines as argument vectors: parsed with `shlex`, never given to a shell.

A test or setup command comes from a setting or from the repository's own files, and
extra arguments may come from a model. None of them is ever run by a shell, so shell
syntax would silently mean something else (`a && b` would pass `&&` to `a`): it is
refused with a message saying what to do instead. Only syntax a shell would act on is
refused: inside quotes `;`, `&`, `|`, `<`, `>` are ordinary characters of one argument
(`python -c "import a; a.main()"`), and single quotes make `$` literal too. The one
substitution is the literal `$SANDBOX_JUNIT` (or `${SANDBOX_JUNIT}`), replaced by the path where the sandbox reads a
JUnit XML report, e.g. `python -m pytest -q --junitxml=$SANDBOX_JUNIT`. The grammar
itself lives with the settings (`split_command`, `shell_syntax`), which refuse a bad
`AGENT_LOOP_TEST_COMMAND` at load with the same words.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from agent_loop_common.sandbox._errors import CommandRejected
from agent_loop_common.sandbox._guard import GUARD_PLACEHOLDER, without_guard
from agent_loop_common.settings import JUNIT_PLACEHOLDER_PATTERN, shell_syntax, split_command

__all__ = [
    "JUNIT_PLACEHOLDER",
    "expand_placeholders",
    "parse_command",
    "validate_extra_args",
]

JUNIT_PLACEHOLDER = "$SANDBOX_JUNIT"
"""Replaced in any argument by the sandbox's JUnit report path."""


def parse_command(text: str, *, what: str = "command") -> tuple[str, ...]:
    """Split a command line into an argument vector, refusing shell syntax.

    Args:
        text: The command line, e.g. `python -m pytest -q`.
        what: How to name it in errors (`AGENT_LOOP_TEST_COMMAND`, `AGENTS.md`, ...).

    Raises:
        CommandRejected: Empty, too long, unbalanced quotes, or shell syntax.
    """
    try:
        return split_command(text, what=what)
    except ValueError as exc:
        raise CommandRejected(str(exc)) from None


def expand_placeholders(
    argv: Sequence[str], *, junit_path: str, guard: str | None = None
) -> tuple[str, ...]:
    """`argv` with every `$SANDBOX_JUNIT` replaced by `junit_path`, and the pytest guard's
    placeholder by the run's guard module (`-p $SANDBOX_PYTEST_GUARD` dropped when the
    run has none: a backend that cannot show the guard to the command)."""
    if guard is None:
        argv = without_guard(argv)
    return tuple(
        guard
        if arg == GUARD_PLACEHOLDER and guard is not None
        else JUNIT_PLACEHOLDER_PATTERN.sub(junit_path, arg)
        for arg in argv
    )


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
        syntax = shell_syntax(arg)
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
