"""Load settings from the environment, failing with a message a person can act on."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from difflib import get_close_matches
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, SecretStr, ValidationError

from agent_loop_common._fielddocs import field_docs
from agent_loop_common.settings._errors import ConfigError, describe_validation_error
from agent_loop_common.settings._model import ENV_PREFIX, Settings, allowed_range
from agent_loop_common.settings._outside import OUTSIDE_THE_MODEL

__all__ = [
    "env_var_name",
    "field_meaning",
    "known_variables",
    "load_settings",
    "unknown_variable_problems",
]


def env_var_name(field_name: str) -> str:
    """The environment variable that sets `field_name` (`repo` -> `AGENT_LOOP_REPO`)."""
    alias = Settings.model_fields[field_name].validation_alias
    if isinstance(alias, AliasChoices):
        first = alias.choices[0]
        if isinstance(first, str):
            return first
    if isinstance(alias, str):
        return alias
    return f"{ENV_PREFIX}{field_name.upper()}"


def field_meaning(field_name: str, *, first_sentence: bool = False) -> str:
    """A field's documentation (the docstring under it), or its first sentence.

    Read from the source when asked (`field_docs`): loading settings never parses it.
    """
    text = field_docs(Settings).get(field_name, "").strip()
    if first_sentence:
        match = re.match(r"(.+?)(?<!e\.g)(?<!i\.e)([.!?])(?=\s+[A-Z`]|\s*$)", text, re.DOTALL)
        return match.group(1) + match.group(2) if match else text
    return text


def _secret_variables() -> frozenset[str]:
    return frozenset(
        env_var_name(name)
        for name, info in Settings.model_fields.items()
        if info.annotation is not None and SecretStr in getattr(info.annotation, "__args__", ())
    )


def load_settings(env_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Read the configuration from the environment (and `env_file` if given).

    Args:
        env_file: An optional dotenv file; real environment variables win over it.
        **overrides: Field values that win over the environment (for CLI flags and tests).

    Raises:
        ConfigError: One message listing every missing or invalid variable.
    """
    unknown = unknown_variable_problems(os.environ)
    try:
        # Passed through a dict: pyright sees only the fields, not BaseSettings' own options.
        init: dict[str, Any] = {"_env_file": env_file, **overrides}
        settings = Settings(**init)
    except ValidationError as exc:
        env_names: dict[str, str] = {}
        for name in Settings.model_fields:
            env_names[name] = env_names[env_var_name(name)] = env_var_name(name)
        meanings = {
            env_var_name(name): field_meaning(name, first_sentence=True)
            for name in Settings.model_fields
        }
        ranges = {env_var_name(name): allowed_range(name) for name in Settings.model_fields}
        problems = describe_validation_error(
            exc,
            env_names=env_names,
            meanings=meanings,
            secret=_secret_variables(),
            ranges={name: text for name, text in ranges.items() if text},
        )
        raise ConfigError([*unknown, *_without_knock_ons(problems)]) from None
    if unknown:
        raise ConfigError(unknown)
    return settings


@cache
def known_variables() -> frozenset[str]:
    """Every `AGENT_LOOP_*` variable agent-loop reads: one per setting, and the few read
    outside the settings (`OUTSIDE_THE_MODEL`)."""
    names = {env_var_name(name) for name in Settings.model_fields}
    names |= {name for name, _, _ in OUTSIDE_THE_MODEL}
    return frozenset(n for n in names if n.startswith(ENV_PREFIX))


def unknown_variable_problems(environ: Mapping[str, str]) -> list[str]:
    """A problem for each set `AGENT_LOOP_*` variable that is no setting, naming the
    closest known one: a misspelt variable used to be ignored in silence, its setting
    left at its default."""
    known = known_variables()
    # The settings read their variables in any case (`agent_loop_home` sets `home`); the
    # few read outside them (`OUTSIDE_THE_MODEL`) only as spelt.
    any_case = {env_var_name(name).upper() for name in Settings.model_fields}
    problems: list[str] = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or name in known or upper in any_case:
            continue
        # Compared without the shared prefix, which would make every name look close.
        tails = sorted(k.removeprefix(ENV_PREFIX) for k in known)
        close = get_close_matches(upper.removeprefix(ENV_PREFIX), tails, n=1, cutoff=0.6)
        hint = f"did you mean {ENV_PREFIX}{close[0]}?" if close else "see docs/configuration.md"
        problems.append(
            f"{name}: not a setting of agent-loop ({hint}). Rename or unset it: a misspelt "
            "setting would otherwise be ignored and its default used."
        )
    return problems


_ALTERNATIVES = {"AGENT_LOOP_REPO": "AGENT_LOOP_REPOS"}
"""A variable that may stay unset when its alternative is set: when the alternative is
set but invalid, "not set" for the first would be false (it is not needed)."""


def _without_knock_ons(problems: list[str]) -> list[str]:
    named = {p.split(":", 1)[0] for p in problems}
    return [
        p
        for p in problems
        if not any(
            p.startswith(f"{one}: not set") and other in named
            for one, other in _ALTERNATIVES.items()
        )
    ]
