"""Which model answers a run: litellm from settings, or a provider installed in-process.

Flyte local mode runs tasks in this process, so the offline demo and the end-to-end
tests install a provider (a scripted or replayed model) here instead of passing an
unserializable callable through a task's inputs. On a cluster nothing is installed and
every run builds the litellm call from settings.

An installed provider carries a label (`replayed (demo)`, `scripted`), which the run's
record and report name as its model: a report never names `AGENT_LOOP_MODEL` for a run
that model did not answer.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import contextmanager

from flyte.ai.agents import LLMCallable

from agent_loop_common.llm import (
    Budget,
    ModelRetryPolicy,
    ModelSettingNames,
    UsageMeter,
    make_call_llm,
    masked_call_llm,
)
from agent_loop_common.model_keys import key_override, key_variable
from agent_loop_common.records import Role
from agent_loop_common.settings import Settings

__all__ = [
    "DEFAULT_LABEL",
    "ModelProvider",
    "installed_model",
    "installed_model_label",
    "model_for",
    "model_label",
    "use_model",
]

ModelProvider = Callable[[Role, str, UsageMeter, Budget], LLMCallable]
"""`(role, purpose, usage, budget) -> call_llm`; purpose is "agent" or "verifier"."""

DEFAULT_LABEL = "in-process model"
"""The label of a provider installed without one."""

_installed: tuple[ModelProvider, str] | None = None


@contextmanager
def use_model(provider: ModelProvider, *, label: str | None = None) -> Generator[ModelProvider]:
    """Answer every run started in this process with `provider` while the block runs.

    Args:
        provider: Builds each run's `call_llm`.
        label: What runs record and report as their model, e.g. `replayed (demo)`;
            default: the provider's `model_label` attribute, else `DEFAULT_LABEL`.
    """
    global _installed
    named = label or str(getattr(provider, "model_label", "") or DEFAULT_LABEL)
    previous, _installed = _installed, (provider, named)
    try:
        yield provider
    finally:
        _installed = previous


def installed_model() -> ModelProvider | None:
    """The provider installed with `use_model`, if any."""
    return _installed[0] if _installed is not None else None


def installed_model_label() -> str | None:
    """The label of the provider installed with `use_model`, if any."""
    return _installed[1] if _installed is not None else None


def model_label(settings: Settings, purpose: str | None = None) -> str:
    """The model that answers runs started now, as records and reports name it.

    Args:
        settings: The configuration.
        purpose: `"agent"` or `"verifier"` for one agent's model; `None` for the run's
            (both, when `AGENT_LOOP_VERIFIER_MODEL` names another).

    Returns:
        The installed provider's label, else the litellm model string(s).
    """
    if _installed is not None:
        return _installed[1]
    if purpose == "verifier":
        return settings.verifier_model or settings.model
    if purpose is not None:
        return settings.model
    if settings.verifier_model and settings.verifier_model != settings.model:
        return f"{settings.model} (verifier {settings.verifier_model})"
    return settings.model


def model_for(
    settings: Settings, role: Role, purpose: str, usage: UsageMeter, budget: Budget
) -> LLMCallable:
    """The `call_llm` for one agent of a run: the installed provider, else litellm.

    Either way the conversation it is shown has its old tool results masked
    (`AGENT_LOOP_KEEP_TURNS`), so a scripted or replayed model sees what a real one does.
    """
    return masked_call_llm(
        _unmasked(settings, role, purpose, usage, budget), keep_turns=settings.keep_turns
    )


def _unmasked(
    settings: Settings, role: Role, purpose: str, usage: UsageMeter, budget: Budget
) -> LLMCallable:
    if _installed is not None:
        return _installed[0](role, purpose, usage, budget)
    model, variable = settings.model, "AGENT_LOOP_MODEL"
    if purpose == "verifier" and settings.verifier_model:
        model, variable = settings.verifier_model, "AGENT_LOOP_VERIFIER_MODEL"
    key = key_override()  # AGENT_LOOP_MODEL_KEY_ENV: the library would not read it itself
    names = ModelSettingNames(
        model_variable=variable, key_variable=key_variable(model), api_base=settings.api_base
    )
    return make_call_llm(
        model=model,
        usage=usage,
        budget=budget,
        api_base=settings.api_base,
        max_tokens=settings.max_output_tokens,
        retry=ModelRetryPolicy.from_settings(settings),
        timeout=settings.llm_timeout_seconds,
        extra_params=None if key is None else {"api_key": key},
        prompt_cache=settings.prompt_cache,
        settings=names,
    )
