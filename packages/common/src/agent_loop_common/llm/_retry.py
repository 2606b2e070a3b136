"""How long to wait before retrying a transient provider error.

Our own loop owns retries (litellm and the provider SDKs are told not to retry), so that
every attempt is counted, the waits are capped, and tests can make them instant by
passing a `sleep` that returns at once.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from agent_loop_common.settings import Settings

__all__ = ["ModelRetryPolicy", "retry_after_seconds"]


@dataclass(frozen=True)
class ModelRetryPolicy:
    """Capped exponential back-off with jitter for transient provider errors.

    Attributes:
        max_attempts: Requests per model call, the first included (1 = never retry).
        base_delay: Wait in seconds before the second attempt; doubled each time after.
        max_delay: No single wait is longer than this, whatever `Retry-After` says.
        sleep: The awaitable used to wait (`asyncio.sleep`; tests pass an instant one).
        jitter: Returns a number in [0, 1]; the wait is `delay * (0.5 + jitter() / 2)`
            so that runs hitting one rate limit together do not retry in lockstep.
    """

    max_attempts: int = 4
    base_delay: float = 2.0
    max_delay: float = 60.0
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)
    jitter: Callable[[], float] = field(default=random.random, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"ModelRetryPolicy.max_attempts must be >= 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("ModelRetryPolicy delays must not be negative")

    @classmethod
    def from_settings(cls, settings: Settings) -> ModelRetryPolicy:
        """Model-call retries as configured (`AGENT_LOOP_LLM_*`)."""
        return cls(
            max_attempts=settings.llm_max_attempts,
            base_delay=settings.llm_retry_base_seconds,
            max_delay=settings.llm_retry_cap_seconds,
        )

    def delay(self, attempt: int, exc: BaseException | None = None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based).

        A provider's `Retry-After` is honoured when it asks for longer than our own
        back-off, but never beyond `max_delay`.
        """
        backoff = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        wait = backoff * (0.5 + min(1.0, max(0.0, self.jitter())) / 2)
        hinted = retry_after_seconds(exc) if exc is not None else None
        if hinted is not None:
            wait = max(wait, hinted)
        return min(wait, self.max_delay)


def retry_after_seconds(exc: BaseException) -> float | None:
    """The `Retry-After` (seconds form) a provider sent with the error `exc`, if any.

    litellm keeps the provider's headers on `litellm_response_headers` (its Anthropic
    errors carry an empty `response`); openai-style errors carry `response.headers`.
    """
    candidates = (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    )
    for headers in candidates:
        getter = getattr(headers, "get", None)
        if not callable(getter):
            continue
        value = cast("Callable[[str], Any]", getter)("retry-after")
        if not isinstance(value, str):
            continue
        try:
            seconds = float(value)
        except ValueError:
            continue  # an HTTP date: rare for model APIs, fall back to our back-off
        if seconds >= 0:
            return seconds
    return None
