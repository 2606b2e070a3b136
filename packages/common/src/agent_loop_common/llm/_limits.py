"""How many output tokens to ask for, and whether model requests may leave the process.

A builder turn may write a whole file in one tool call, so we ask for a generous
`max_tokens`; asking for more than the model allows is a 400 from the provider, so the
request is clamped to the model's published limit. For a model litellm does not know
(a local or custom server) a conservative fallback is used unless the caller set one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ALLOW_MODEL_REQUESTS_ENV",
    "GENEROUS_MAX_TOKENS",
    "UNKNOWN_MODEL_MAX_TOKENS",
    "model_requests_allowed",
    "resolve_max_tokens",
    "uses_offline_model",
]

GENEROUS_MAX_TOKENS = 32_000
"""Default output budget per response when the model allows at least this much."""

UNKNOWN_MODEL_MAX_TOKENS = 8_192
"""Default output budget for models without a published limit (local servers)."""

ALLOW_MODEL_REQUESTS_ENV = "AGENT_LOOP_ALLOW_MODEL_REQUESTS"
"""Set to `0` (the pytest plugin does) to refuse every call that would reach a real model."""


def resolve_max_tokens(requested: int | None, model_limit: int | None) -> int:
    """The `max_tokens` to send.

    Args:
        requested: What the caller asked for, or `None` for "generous".
        model_limit: The model's output limit, or `None` when unknown.

    An explicit request is honoured up to the model's limit (and as given when the limit
    is unknown: the operator knows their server). The default is
    `GENEROUS_MAX_TOKENS` clamped to the limit, or `UNKNOWN_MODEL_MAX_TOKENS`.
    """
    if requested is not None and requested <= 0:
        raise ValueError(f"max_tokens must be positive, got {requested}")
    if model_limit is None:
        return requested if requested is not None else UNKNOWN_MODEL_MAX_TOKENS
    return min(requested if requested is not None else GENEROUS_MAX_TOKENS, model_limit)


def model_requests_allowed(environ: Mapping[str, str] | None = None) -> bool:
    """False when `AGENT_LOOP_ALLOW_MODEL_REQUESTS` is `0` (tests, offline demo)."""
    env = os.environ if environ is None else environ
    return env.get(ALLOW_MODEL_REQUESTS_ENV, "1").strip() != "0"


def uses_offline_model(
    model: str, extra_params: Mapping[str, Any], offline_providers: frozenset[str]
) -> bool:
    """True when a call is answered in-process: litellm's `mock_response` or a `CustomLLM`.

    These are the only litellm paths allowed while model requests are disabled; they let
    tests drive the real request building, retries and usage capture with no network.
    """
    if extra_params.get("mock_response") is not None:
        return True
    provider, sep, _ = model.partition("/")
    return bool(sep) and provider in offline_providers
