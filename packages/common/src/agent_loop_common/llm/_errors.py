"""Why a model call did not produce a message, and which failures are worth retrying.

The Agent loop turns any exception raised by `call_llm` into `AgentResult.error`
(the text of the exception), so each exception here carries a message that a person
reading a run record can act on. The pipeline also inspects the type to pick the run's
outcome (`budget_exceeded` vs `error`).

```
LLMError
├── ModelRequestsDisabled   real model requests are switched off (tests, offline demo)
├── BudgetExceeded          the run's token or cost budget is used up: the loop stops
└── ModelCallFailed         the provider refused or kept failing (`kind` says why)
AgentRunFailed              an agent's run ended without an answer (`cause`: the model
                            failure behind it, when a model call failed)
```

Classification (`classify_error`) looks at exception class names along the MRO and
at `status_code` instead of `isinstance` checks against litellm classes, so that it
needs no litellm import, and also understands openai, httpx and builtin errors.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "AgentRunFailed",
    "BudgetExceeded",
    "ErrorKind",
    "LLMError",
    "ModelCallFailed",
    "ModelRequestsDisabled",
    "ModelSettingNames",
    "classify_error",
]


class LLMError(RuntimeError):
    """Base class of every error raised by the model call."""


class ModelRequestsDisabled(LLMError):
    """Raised when `AGENT_LOOP_ALLOW_MODEL_REQUESTS=0` and a call would reach a real model."""

    def __init__(self, model: str) -> None:
        self.model = model
        super().__init__(
            f"model requests are disabled (AGENT_LOOP_ALLOW_MODEL_REQUESTS=0): refusing to call "
            f"{model!r}. Tests and the offline demo must use a scripted model (replace call_llm), "
            "litellm's mock_response, or an in-process litellm CustomLLM provider; unset the "
            "variable (or set it to 1) for a real run."
        )


class BudgetExceeded(LLMError):
    """Raised before a call when the run has used up its token or cost budget.

    Attributes:
        reason: One line naming the limit and the usage that crossed it; the same text
            is stored on `UsageMeter.exceeded` so the pipeline can record outcome
            `budget_exceeded` even though the Agent only keeps the message.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(
            f"run budget exceeded: {reason}. The loop was stopped before the next model call."
        )


class AgentRunFailed(Exception):
    """An agent's run ended without an answer: a model call failed, or the turns ran out.

    The Agent loop keeps only the text of a failed call; `cause` keeps the failure itself
    (from `UsageMeter.failure`), so callers can tell an operator's problem (credentials,
    an unknown model, a provider outage) from the work's.
    """

    def __init__(self, message: str, *, cause: LLMError | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class ErrorKind(StrEnum):
    """What kind of failure a provider error is; only `TRANSIENT` is retried."""

    TRANSIENT = "transient"
    """Rate limits, overload, 5xx, timeouts and dropped connections: try again later."""
    AUTH = "auth"
    """Missing or wrong credentials, no permission, no credit: retrying cannot help."""
    CONTEXT_WINDOW = "context_window"
    """The prompt no longer fits the model: the same request will fail again."""
    BAD_REQUEST = "bad_request"
    """The provider rejected the request itself (schema, parameters, content policy)."""
    NOT_FOUND = "not_found"
    """Unknown model or endpoint: usually a typo in `AGENT_LOOP_MODEL` or the api base."""
    UNKNOWN = "unknown"
    """Anything else (including bugs in our code): surfaced at once, never retried."""


class ModelCallFailed(LLMError):
    """The provider call failed for good: a non-retryable error, or retries ran out.

    Attributes:
        model: The litellm model string that was called.
        kind: The classification of the last error.
        attempts: How many requests were made before giving up.
    """

    def __init__(
        self,
        model: str,
        kind: ErrorKind,
        attempts: int,
        cause: BaseException,
        *,
        settings: ModelSettingNames | None = None,
    ) -> None:
        self.model = model
        self.kind = kind
        self.attempts = attempts
        label, detail = provider_message(cause)
        if kind is ErrorKind.TRANSIENT:
            why = f"still failing after {attempts} attempts"
        else:
            why = f"{kind.value} error, not retried"
        fix = settings.fix(model, kind, label, detail) if settings is not None else ""
        message = f"model call to {model!r} failed ({why}): {label}: {detail}"
        super().__init__(f"{message}. {fix}" if fix else message)


@dataclass(frozen=True, slots=True)
class ModelSettingNames:
    """The settings behind a model call, so its failure names the one to fix.

    Attributes:
        model_variable: The setting that named the model (`AGENT_LOOP_MODEL`,
            `AGENT_LOOP_VERIFIER_MODEL`).
        key_variable: The variable holding the key (`OPENAI_API_KEY`, or the one
            `AGENT_LOOP_MODEL_KEY_ENV` names); empty when the model takes none.
        api_base: `AGENT_LOOP_API_BASE`, when set.
    """

    model_variable: str = "AGENT_LOOP_MODEL"
    key_variable: str = ""
    api_base: str | None = None

    def fix(self, model: str, kind: ErrorKind, label: str, detail: str) -> str:
        """What to check, naming the setting (empty when no setting is to blame)."""
        if kind is ErrorKind.AUTH:
            if self.key_variable:
                return f"The provider refused the key: check {self.key_variable}."
            if self.api_base:  # sent without a key (`AGENT_LOOP_MODEL_KEY_ENV=none`)
                return (
                    f"The server at AGENT_LOOP_API_BASE={self.api_base} refused a call made "
                    "without a key: name the variable holding its key in "
                    "AGENT_LOOP_MODEL_KEY_ENV, or check that AGENT_LOOP_API_BASE names the "
                    "model server."
                )
            return "The provider refused the call: check the model's credentials."
        if kind is ErrorKind.NOT_FOUND:
            base = f" and AGENT_LOOP_API_BASE={self.api_base}" if self.api_base else ""
            return f"Check {self.model_variable}={model!r}{base}."
        if _unreachable(label, detail):
            if self.api_base:
                return (
                    f"Check AGENT_LOOP_API_BASE={self.api_base}: is its server running and "
                    "reachable from here?"
                )
            return f"Check the route to {model!r}'s provider (network, HTTPS_PROXY)."
        return ""


_UNREACHABLE = re.compile(
    r"connection (?:error|refused|reset)|failed to establish|cannot connect|connecterror"
    r"|all connection attempts failed|timed out",
    re.IGNORECASE,
)


def _unreachable(label: str, detail: str) -> bool:
    """Whether the failure reads as a server that does not answer."""
    return label == "connection failure" or bool(_UNREACHABLE.search(f"{label} {detail}"))


_LIBRARY_NOISE = (
    re.compile(r"\s*Handle with `[^`]*`\.?"),  # litellm's advice to its own callers
    re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>"),  # an object's repr
    re.compile(r"^(?:litellm\.)?\w+(?:Error|Exception): "),  # a class name repeated as prefix
)
_PROVIDER_PREFIX = re.compile(r"^\w+Exception - ")
"""litellm's `OpenAIException - <the provider's own words>`."""
_DNS_FAILURE = re.compile(
    r"Name or service not known|nodename nor servname|Temporary failure in name resolution"
    r"|getaddrinfo failed|No address associated with hostname",
    re.IGNORECASE,
)


def provider_message(cause: BaseException) -> tuple[str, str]:
    """`(what failed, the provider's words)` without the model library's noise.

    litellm wraps a provider's message in its class names (`litellm.InternalServerError:
    InternalServerError: OpenAIException - ...`), advice to its own callers ("Handle with
    `litellm.InternalServerError`"), object reprs, and files a DNS failure under
    `InternalServerError`; a person needs the provider's words and what kind of failure
    it was. A host name that did not resolve is named a connection failure.
    """
    text = " ".join((str(cause) or type(cause).__name__).split())
    for _ in range(4):  # the prefixes nest
        before = text
        for pattern in _LIBRARY_NOISE:
            text = pattern.sub("", text).strip()
        text = _PROVIDER_PREFIX.sub("", text).strip()
        if text == before:
            break
    if _DNS_FAILURE.search(text):
        return "connection failure", f"the model server's host name did not resolve ({text})"
    return type(cause).__name__, text or type(cause).__name__


# Class names, checked along the MRO (most specific class first). litellm subclasses the
# openai exceptions, so openai's names are covered too.
_NAME_KINDS: dict[str, ErrorKind] = {
    "ContextWindowExceededError": ErrorKind.CONTEXT_WINDOW,
    "AuthenticationError": ErrorKind.AUTH,
    "PermissionDeniedError": ErrorKind.AUTH,
    "PaymentRequiredError": ErrorKind.AUTH,
    "BudgetExceededError": ErrorKind.AUTH,
    "NotFoundError": ErrorKind.NOT_FOUND,
    "ContentPolicyViolationError": ErrorKind.BAD_REQUEST,
    "UnsupportedParamsError": ErrorKind.BAD_REQUEST,
    "UnprocessableEntityError": ErrorKind.BAD_REQUEST,
    "BadRequestError": ErrorKind.BAD_REQUEST,
    "RateLimitError": ErrorKind.TRANSIENT,
    "Timeout": ErrorKind.TRANSIENT,
    "APITimeoutError": ErrorKind.TRANSIENT,
    "APIConnectionError": ErrorKind.TRANSIENT,
    "InternalServerError": ErrorKind.TRANSIENT,
    "ServiceUnavailableError": ErrorKind.TRANSIENT,
    "BadGatewayError": ErrorKind.TRANSIENT,
    # httpx transport errors (a provider SDK may let them through unwrapped).
    "TimeoutException": ErrorKind.TRANSIENT,
    "NetworkError": ErrorKind.TRANSIENT,
    "RemoteProtocolError": ErrorKind.TRANSIENT,
}

_TRANSIENT_STATUS = frozenset({408, 425, 429})


def _kind_from_status(status: int) -> ErrorKind | None:
    if status in _TRANSIENT_STATUS or 500 <= status <= 599:
        return ErrorKind.TRANSIENT
    if status in (401, 402, 403):
        return ErrorKind.AUTH
    if status == 404:
        return ErrorKind.NOT_FOUND
    if 400 <= status <= 499:
        return ErrorKind.BAD_REQUEST
    return None


def classify_error(exc: BaseException) -> ErrorKind:
    """Classify a failed provider call; only `ErrorKind.TRANSIENT` is worth retrying.

    Order matters: a specific class name wins over the HTTP status (litellm reports a
    context-window error as a 400 and a connection error as a 500), the status decides
    for generic API errors, and builtin timeouts and connection errors are transient.
    Our own `LLMError` subclasses are never transient.
    """
    if isinstance(exc, LLMError):
        return ErrorKind.UNKNOWN
    for cls in type(exc).__mro__:
        kind = _NAME_KINDS.get(cls.__name__)
        if kind is not None:
            return kind
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        kind = _kind_from_status(status)
        if kind is not None:
            return kind
    if isinstance(exc, TimeoutError | asyncio.TimeoutError | ConnectionError):
        return ErrorKind.TRANSIENT
    return ErrorKind.UNKNOWN
