"""One readable error for a bad configuration, naming each variable and what to set.

pydantic's `ValidationError` speaks in field names and locations; a person starting an
agent needs the environment variable, what was wrong with it, and what it is for. Values
of secret variables are never echoed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

__all__ = ["ConfigError", "describe_validation_error"]


class ConfigError(ValueError):
    """The configuration is missing or invalid; the message lists every problem.

    Attributes:
        problems: One line per problem, each starting with the variable's name.
    """

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = tuple(problems)
        count = len(self.problems)
        lines = [
            f"agent-loop configuration is invalid ({count} problem{'s' if count != 1 else ''}):",
            *(f"  - {p}" for p in self.problems),
            "Set these environment variables (see docs/configuration.md) and start again.",
        ]
        super().__init__("\n".join(lines))


_NEVER_SHOWN = frozenset({"credentials_in_url"})
"""Error types whose input holds a credential: the message says what, never the value."""


_LIST_ENTRY = "list_entry"
"""Error type of one bad entry of a list setting; its message names the entry."""


_OUT_OF_RANGE = frozenset(
    {
        "greater_than_equal",
        "greater_than",
        "less_than_equal",
        "less_than",
        "int_parsing",
        "float_parsing",
        "int_from_float",
    }
)
"""pydantic's error types of a number outside its bounds, or of no number at all: both
name the allowed range, so `abc` is answered with what to set instead."""

_BOOL_PARSING = "bool_parsing"
_BOOLEANS = "on, off, true, false, yes, no, 1, 0"
"""What a switch (a `bool` setting) takes: what pydantic reads as a boolean."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def describe_validation_error(
    error: ValidationError,
    *,
    env_names: Mapping[str, str],
    meanings: Mapping[str, str],
    secret: frozenset[str],
    ranges: Mapping[str, str] | None = None,
) -> list[str]:
    """One line per pydantic error: `VARIABLE: what is wrong. What the variable is for.`

    Args:
        error: The validation error of the settings model.
        env_names: Field name or alias -> environment variable.
        meanings: Environment variable -> first sentence of its documentation.
        secret: Environment variables whose values must not be shown.
        ranges: Environment variable -> its allowed range (`3 to 1440`), named when a
            value is out of it.
    """
    problems: list[str] = []
    for item in error.errors(include_url=False):
        loc = item.get("loc", ())
        key = str(loc[0]) if loc else ""
        message = str(item.get("msg", "invalid")).removeprefix("Value error, ")
        if not key or item.get("type") == "github_credentials":
            # A check across several variables: its message names them itself.
            problems.append(message)
            continue
        name = env_names.get(key, key.upper())
        if item.get("type") == "missing":
            what = "not set"
        elif item.get("type") == _LIST_ENTRY:
            what = message  # names the one bad entry, not the whole list
        elif name in secret or item.get("type") in _NEVER_SHOWN:
            what = f"invalid ({message})"
        else:
            what = f"{_shown(item.get('input'))} is invalid: {message}"
            allowed = (ranges or {}).get(name)
            if allowed and item.get("type") in _OUT_OF_RANGE:
                what += f" (allowed: {allowed})"
            elif item.get("type") == _BOOL_PARSING:
                what += f" (allowed: {_BOOLEANS})"
        meaning = meanings.get(name, "")
        problems.append(f"{name}: {what}." + (f" {meaning}" if meaning else ""))
    return problems
