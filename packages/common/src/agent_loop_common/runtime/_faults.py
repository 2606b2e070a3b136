"""Whose failure is it: the operator's (configuration, infrastructure) or the work's?

A failed run must never punish its target for the operator's problem. A revoked token,
a missing permission, an unreachable GitHub, a rate limit, a wrong model key, an unknown
model or a provider outage say nothing about the issue: the run is recorded as an
error with `fault="operator"`, the target is not backed off, and nothing is posted
about it. A verifier's rejection, a model that never submits or a bug met while working
is the work's: the target rests in back-off, as before.
"""

from __future__ import annotations

from agent_loop_common.github import AuthError, GitHubUnavailable, RateLimited
from agent_loop_common.llm import (
    AgentRunFailed,
    ErrorKind,
    ModelCallFailed,
    ModelRequestsDisabled,
)
from agent_loop_common.settings import ConfigError

__all__ = ["operator_fault"]

_OPERATOR_KINDS = frozenset({ErrorKind.AUTH, ErrorKind.NOT_FOUND, ErrorKind.TRANSIENT})
"""Model failures that come from the setup or the provider, not from the request."""


def operator_fault(exc: BaseException) -> str | None:
    """A short reason when `exc` is the operator's problem; `None` when it is the work's.

    The reason is public-safe (no message text from GitHub or the provider).
    """
    cause: BaseException = exc
    if isinstance(exc, AgentRunFailed) and exc.cause is not None:
        cause = exc.cause
    if isinstance(cause, AuthError):
        return "GitHub refused the credentials or a permission"
    if isinstance(cause, RateLimited):
        return "GitHub's rate limit"
    if isinstance(cause, GitHubUnavailable):
        return "GitHub was unreachable"
    if isinstance(cause, ConfigError):
        return "the configuration"
    if isinstance(cause, ModelRequestsDisabled):
        return "model requests are disabled"
    if isinstance(cause, ModelCallFailed) and cause.kind in _OPERATOR_KINDS:
        reasons = {
            ErrorKind.AUTH: "the model provider refused the credentials",
            ErrorKind.NOT_FOUND: "the model provider does not know the model",
            ErrorKind.TRANSIENT: "the model provider kept failing",
        }
        return reasons[cause.kind]
    return None
