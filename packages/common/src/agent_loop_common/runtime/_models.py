"""Which model answers a run: litellm from settings, or a provider installed in-process.

Flyte local mode runs tasks in this process, so the offline demo and the end-to-end
tests install a provider (a scripted or replayed model) here instead of passing an
unserializable callable through a task's inputs. On a cluster nothing is installed and
every run builds the litellm call from settings.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import contextmanager

from flyte.ai.agents import LLMCallable

from agent_loop_common.llm import Budget, UsageMeter, make_call_llm
from agent_loop_common.records import Role
from agent_loop_common.settings import Settings

__all__ = ["ModelProvider", "installed_model", "model_for", "use_model"]

ModelProvider = Callable[[Role, str, UsageMeter, Budget], LLMCallable]
"""`(role, purpose, usage, budget) -> call_llm`; purpose is "agent" or "verifier"."""

_installed: ModelProvider | None = None


@contextmanager
def use_model(provider: ModelProvider) -> Generator[ModelProvider]:
    """Answer every run started in this process with `provider` while the block runs."""
    global _installed
    previous, _installed = _installed, provider
    try:
        yield provider
    finally:
        _installed = previous


def installed_model() -> ModelProvider | None:
    """The provider installed with `use_model`, if any."""
    return _installed


def model_for(
    settings: Settings, role: Role, purpose: str, usage: UsageMeter, budget: Budget
) -> LLMCallable:
    """The `call_llm` for one agent of a run: the installed provider, else litellm."""
    if _installed is not None:
        return _installed(role, purpose, usage, budget)
    model = settings.model
    if purpose == "verifier" and settings.verifier_model:
        model = settings.verifier_model
    return make_call_llm(
        model=model,
        usage=usage,
        budget=budget,
        api_base=settings.api_base,
        max_tokens=settings.max_output_tokens,
        retry=settings.model_retry_policy(),
        timeout=settings.llm_timeout_seconds,
    )
