"""Rules between a setting and the code that uses it, stated once, here.

A setting that loads must work: `AGENT_LOOP_CLAIM_TTL_MINUTES=2` passed the settings'
own minimum (2) and then failed every tick in the claims code, which required the TTL
to exceed twice its clock-skew margin. So the rule lives here: the settings derive the
TTL's minimum from it and check it at load (exit 2 naming the variable and the allowed
range), and the claims code checks the same rule, from here, for callers that build a
`Claimer` themselves. The same holds for the grammar of a command line (the sandbox
runs it; settings refuses shell syntax at load) and of the rate-limit reserve (the
GitHub facade applies it; settings refuses a bad one at load).

Pure: no other agent-loop module is imported, so every package can use it (and
settings imports none of the packages that use it: the import graph has no circle).
"""

from __future__ import annotations

import re
import shlex
from datetime import timedelta

__all__ = [
    "CLAIM_SKEW",
    "GATEWAY_MEMORY_MIB",
    "JUNIT_PLACEHOLDER_PATTERN",
    "MIN_CLAIM_TTL_MINUTES",
    "WEBHOOK_BUFFER_DEFAULT",
    "claim_ttl_problem",
    "parse_rate_reserve",
    "shell_syntax",
    "split_command",
]

CLAIM_SKEW = timedelta(seconds=60)
"""Tolerated clock difference between runs: an expired claim is taken over only this long
after its end, and a holder renews it this long before."""


def claim_ttl_problem(ttl: timedelta, skew: timedelta = CLAIM_SKEW) -> str | None:
    """Why `ttl` cannot work as a claim's lifetime with `skew`, or `None` when it can.

    A claim must outlive the margins at both of its ends, or a run could lose it the
    moment it wins it.
    """
    if ttl <= 2 * skew:
        return f"ttl ({ttl}) must exceed twice the clock skew margin ({skew})"
    return None


MIN_CLAIM_TTL_MINUTES = int((2 * CLAIM_SKEW).total_seconds() // 60) + 1
"""The shortest whole-minute claim TTL that `claim_ttl_problem` accepts."""


GATEWAY_MEMORY_MIB = 512
"""Memory the deployed gateway gets (its `AppEnvironment`'s resources, in MiB)."""

WEBHOOK_BUFFER_DEFAULT = GATEWAY_MEMORY_MIB * 1024 * 1024 // 8
"""Delivery bytes the gateway may hold at once by default: an eighth of its deployed
memory, which leaves the rest to the interpreter, the libraries, each connection's read
buffer (at most 64 KiB, times `AGENT_LOOP_WEBHOOK_MAX_CONNECTIONS`) and the answers."""


JUNIT_PLACEHOLDER_PATTERN = re.compile(r"\$(?:SANDBOX_JUNIT\b|\{SANDBOX_JUNIT\})")
"""`$SANDBOX_JUNIT` or `${SANDBOX_JUNIT}`: the one substitution a command line gets."""

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


def shell_syntax(text: str) -> str | None:
    """The shell syntax anywhere in `text` (one argument), named for people, or `None`."""
    for token, what in _SHELL:
        if token in text:
            return what
    rest = JUNIT_PLACEHOLDER_PATTERN.sub("", text)
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


def command_syntax(text: str) -> str | None:
    """Shell syntax a shell would act on in a whole command line (quotes respected), or
    `None`."""
    unquoted, doubled = _active_text(text)
    found = shell_syntax(unquoted)
    if found is not None:
        return found
    # A shell still expands these inside double quotes: refused there too.
    if "`" in doubled:
        return "backticks (command substitution)"
    if "$(" in doubled:
        return "'$(' (command substitution)"
    if "$" in JUNIT_PLACEHOLDER_PATTERN.sub("", doubled):
        return "'$' (variables are not expanded; only $SANDBOX_JUNIT is)"
    return None


def split_command(text: str, *, what: str = "command") -> tuple[str, ...]:
    """A command line as an argument vector, refusing shell syntax.

    Raises:
        ValueError: Empty, too long, unbalanced quotes, shell syntax or a leading
            variable assignment; the message names `what` and says what to do instead.
    """
    text = text.strip()
    if not text:
        raise ValueError(f"{what} is empty")
    if len(text) > _MAX_COMMAND_CHARS:
        raise ValueError(f"{what} is longer than {_MAX_COMMAND_CHARS} characters")
    syntax = command_syntax(text)
    if syntax is not None:
        raise ValueError(
            f"{what} {text!r} uses shell syntax: {syntax}. Commands run without a shell: "
            "give one program with its arguments (put several steps in a script or a "
            "Makefile target and name that)"
        )
    try:
        argv = tuple(shlex.split(text))
    except ValueError as exc:
        raise ValueError(f"{what} {text!r} cannot be parsed: {exc}") from None
    if not argv:
        raise ValueError(f"{what} is empty")
    if "=" in argv[0] and not argv[0].startswith(("/", ".")):
        raise ValueError(
            f"{what} {text!r} starts with a variable assignment ({argv[0]!r}), which needs "
            "a shell; the sandbox sets the environment itself"
        )
    return argv


_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)\s*%$")
_MAX_PERCENT = 90.0
_MAX_COUNT = 1_000_000


def parse_rate_reserve(text: str) -> tuple[float | None, int | None]:
    """`"10%"` (0 to 90 percent of the limit) as `(10.0, None)`, `"500"` (0 to 1,000,000
    requests) as `(None, 500)`.

    Raises:
        ValueError: Neither form, or out of bounds; the message says what fits.
    """
    value = text.strip()
    match = _PERCENT.match(value)
    if match:
        percent = float(match.group(1))
        if percent > _MAX_PERCENT:
            raise ValueError(
                f"a reserve of {value} leaves ticks almost nothing: use 0% to {_MAX_PERCENT:.0f}%"
            )
        return percent, None
    if value.isdigit():
        count = int(value)
        if count > _MAX_COUNT:
            raise ValueError(f"expected at most {_MAX_COUNT:,} requests, got {count:,}")
        return None, count
    raise ValueError(
        f"expected a share of the limit such as `10%` or a number of requests such as "
        f"`500`, got {text!r}"
    )
