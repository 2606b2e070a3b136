"""Before a tick claims anything, it proves it could finish: the model is usable.

A misspelt provider or a missing key used to surface only at the first model call,
after the claim comment was public. `preflight_model` checks, without a network call,
that litellm knows the provider of every configured model and that its key variable is
set; a problem is a `ConfigError` naming the variable to set (the CLI exits 2 before
firing the tick; a scheduled tick checks before its first claim, `RunScope.claim`, and
records it as an operator's error having claimed nothing).
An in-process model (the demo's replay, the tests' script) needs no check.
"""

from __future__ import annotations

from collections.abc import Mapping

from agent_loop_common.model_keys import model_problems
from agent_loop_common.runtime._models import installed_model
from agent_loop_common.settings import ConfigError, Settings

__all__ = ["preflight_model"]


def preflight_model(settings: Settings, environ: Mapping[str, str] | None = None) -> None:
    """Raise `ConfigError` when a configured model cannot be called from this environment."""
    if installed_model() is not None:
        return
    problems = model_problems(settings.model, variable="AGENT_LOOP_MODEL", environ=environ)
    if settings.verifier_model != settings.model:
        problems += model_problems(
            settings.verifier_model, variable="AGENT_LOOP_VERIFIER_MODEL", environ=environ
        )
    if problems:
        raise ConfigError(list(dict.fromkeys(problems)))
