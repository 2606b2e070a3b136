"""`make_call_llm`: the model call every `flyte.ai.agents.Agent` in agent-loop uses.

The returned coroutine has the shape the Agent expects,
`(model, system, messages, tools) -> LLMMessage`, and wraps `litellm.acompletion`
with what a scheduled, unattended run needs: one model string for any provider (or an
OpenAI-compatible server through `api_base`), a generous output limit clamped to the
model's, prompt-cache breakpoints where the provider takes them (`_cache`), parallel tool calls switched off at the provider when staging needs ordered
calls, our own capped retries on transient errors only, usage and cost capture, a
per-run budget checked before each call, and a refusal to reach a real model while
`AGENT_LOOP_ALLOW_MODEL_REQUESTS=0`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, cast

import structlog
from flyte.ai.agents import LLMCallable, LLMMessage

from agent_loop_common.llm import _litellm
from agent_loop_common.llm._cache import with_cache_breakpoints
from agent_loop_common.llm._convert import from_litellm_response, to_litellm_messages, usage_tokens
from agent_loop_common.llm._errors import (
    ErrorKind,
    ModelCallFailed,
    ModelRequestsDisabled,
    ModelSettingNames,
    classify_error,
)
from agent_loop_common.llm._limits import (
    model_requests_allowed,
    resolve_max_tokens,
    uses_offline_model,
)
from agent_loop_common.llm._retry import ModelRetryPolicy
from agent_loop_common.llm._usage import Budget, UsageMeter

__all__ = ["make_call_llm"]

_log = structlog.stdlib.get_logger(__name__)


def make_call_llm(
    *,
    model: str,
    usage: UsageMeter,
    budget: Budget | None = None,
    api_base: str | None = None,
    max_tokens: int | None = None,
    parallel_tool_calls: bool = False,
    retry: ModelRetryPolicy | None = None,
    timeout: float = 600.0,
    extra_params: Mapping[str, Any] | None = None,
    prompt_cache: bool = True,
    settings: ModelSettingNames | None = None,
) -> LLMCallable:
    """Build the `call_llm` for one role of one pipeline run.

    Args:
        model: litellm model string (`anthropic/claude-sonnet-4-6`, `openai/<name>` with
            `api_base`, ...). It is authoritative: the Agent passes its own `model`
            field to each call, and a different value there is logged and ignored, so a
            forgotten `Agent(model=...)` cannot silently switch to flyte's default.
        usage: The run's meter; every successful call adds tokens and estimated cost.
        budget: The run's limits, checked before each call (`None`: unlimited).
        api_base: Base URL of an OpenAI-compatible server or a proxy.
        max_tokens: Output tokens per response; `None` asks for a generous amount.
            Either way it is clamped to the model's published limit.
        parallel_tool_calls: `False` asks the provider for at most one tool call per
            turn (OpenAI `parallel_tool_calls`, Anthropic `disable_parallel_tool_use`)
            where litellm maps it; ordered staging tools rely on that.
        retry: Back-off for transient errors (rate limit, overload, 5xx, timeouts,
            dropped connections); auth, bad-request and context-window errors fail at once.
        timeout: Seconds one request may take.
        extra_params: More `litellm.acompletion` keyword arguments (`temperature`,
            `mock_response` in tests, ...); they override ours.
        prompt_cache: Mark cache breakpoints (`with_cache_breakpoints`) where the model
            takes them (`AGENT_LOOP_PROMPT_CACHE`); providers that cache on their own
            need no marker.
        settings: The settings behind the call, so a failure names the one to fix.

    Returns:
        An async callable to pass as `Agent(call_llm=...)`.
    """
    policy = retry or ModelRetryPolicy()
    extras = dict(extra_params or {})
    resolved: dict[str, Any] = {}
    warned_models: set[str] = set()

    def request_kwargs(
        messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        if "max_tokens" not in resolved:
            resolved["max_tokens"] = resolve_max_tokens(
                max_tokens, _litellm.model_output_limit(model)
            )
            resolved["parallel_switch"] = (
                _litellm.provider_supports(model, "parallel_tool_calls") is not False
            )
            resolved["cache_markers"] = prompt_cache and _litellm.explicit_cache_markers(model)
        if resolved["cache_markers"]:
            messages = with_cache_breakpoints(messages)
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "max_tokens": resolved["max_tokens"],
            "timeout": timeout,
            "max_retries": 0,  # retries are ours: counted, capped, instant in tests
        }
        if api_base:
            kwargs["api_base"] = api_base
        if tools:
            kwargs["tools"] = [dict(tool) for tool in tools]
            kwargs["tool_choice"] = "auto"
            if not parallel_tool_calls and resolved["parallel_switch"]:
                kwargs["parallel_tool_calls"] = False
        kwargs.update(extras)
        return kwargs

    async def call_llm(
        agent_model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> LLMMessage:
        if agent_model != model and agent_model not in warned_models:
            warned_models.add(agent_model)
            _log.warning("llm.model_mismatch", agent_model=agent_model, using=model)
        usage.ensure_within(budget)
        if not model_requests_allowed() and not uses_offline_model(
            model, extras, _litellm.offline_providers()
        ):
            usage.failure = ModelRequestsDisabled(model)
            raise usage.failure

        await _litellm.loaded()  # an import under way is waited for off the event loop
        kwargs = request_kwargs(to_litellm_messages(system, messages), tools)
        started = time.monotonic()
        response = await _complete_with_retries(model, kwargs, policy, usage, settings)
        tokens = usage_tokens(response)
        cost = _litellm.estimate_cost(response)  # priced with the cache's read/write rates
        usage.record(
            model,
            prompt_tokens=tokens.prompt,
            completion_tokens=tokens.completion,
            cost_usd=cost,
            cache_read_tokens=tokens.cache_read,
            cache_write_tokens=tokens.cache_write,
        )
        _log.debug(
            "llm.call",
            model=model,
            prompt_tokens=tokens.prompt,
            completion_tokens=tokens.completion,
            cache_read_tokens=tokens.cache_read,
            cache_write_tokens=tokens.cache_write,
            cost_usd=cost,
            ms=int((time.monotonic() - started) * 1000),
        )
        if _finish_reason(response) == "length":
            _log.warning("llm.truncated", model=model, max_tokens=kwargs["max_tokens"])
        return from_litellm_response(response)

    return call_llm


async def _complete_with_retries(
    model: str,
    kwargs: dict[str, Any],
    policy: ModelRetryPolicy,
    usage: UsageMeter,
    settings: ModelSettingNames | None,
) -> object:
    attempt = 1
    while True:
        try:
            return await _litellm.acompletion(**kwargs)
        except Exception as exc:
            kind = classify_error(exc)
            if kind is not ErrorKind.TRANSIENT or attempt >= policy.max_attempts:
                usage.failure = ModelCallFailed(model, kind, attempt, exc, settings=settings)
                raise usage.failure from exc
            wait = policy.delay(attempt, exc)
            usage.retries += 1
            _log.warning(
                "llm.retry",
                model=model,
                attempt=attempt,
                error=type(exc).__name__,
                wait_s=round(wait, 2),
            )
            await policy.sleep(wait)
            attempt += 1


def _finish_reason(response: object) -> object:
    choices = cast("list[object] | None", getattr(response, "choices", None))
    if not choices:
        return None
    return getattr(choices[0], "finish_reason", None)
